//! Image evaluation: a sample grid, classifiers trained on synthetic images and tested on
//! real ones, and a Fréchet distance on a classifier's features (an FID in miniature,
//! with a small MLP trained on the real images instead of Inception).

use std::path::Path;

use serde::Serialize;

use crate::data::image::ImageSet;

use super::linalg;
use super::xy::Xy;

/// Writes a PNG grid of `rows × cols` images (1-pixel gaps). When the set is labelled,
/// row r shows images of the r-th smallest label, so every class is visible.
pub fn grid_png(set: &ImageSet, rows: usize, cols: usize, path: &Path) -> Result<(), String> {
    let (w, h) = (set.width, set.height);
    let pick: Vec<Option<usize>> = match &set.labels {
        Some(labels) => {
            let mut classes: Vec<u8> = labels.clone();
            classes.sort_unstable();
            classes.dedup();
            let mut out = Vec::new();
            for r in 0..rows {
                let mut found = labels
                    .iter()
                    .enumerate()
                    .filter(|(_, l)| classes.get(r) == Some(*l))
                    .map(|(i, _)| Some(i));
                out.extend((0..cols).map(|_| found.next().flatten()));
            }
            out
        }
        None => (0..rows * cols)
            .map(|i| (i < set.len()).then_some(i))
            .collect(),
    };
    let (gw, gh) = (cols * (w + 1) + 1, rows * (h + 1) + 1);
    let mut buf = vec![64u8; gw * gh];
    for (slot, img) in pick.iter().enumerate() {
        let Some(i) = img else { continue };
        let (r, c) = (slot / cols, slot % cols);
        let px = set.image(*i);
        for y in 0..h {
            let at = (1 + r * (h + 1) + y) * gw + 1 + c * (w + 1);
            buf[at..at + w].copy_from_slice(&px[y * w..(y + 1) * w]);
        }
    }
    crate::util::atomic::write_atomic_with(path, |out| {
        let mut enc = png::Encoder::new(out, gw as u32, gh as u32);
        enc.set_color(png::ColorType::Grayscale);
        enc.set_depth(png::BitDepth::Eight);
        let mut wr = enc.write_header().map_err(std::io::Error::other)?;
        wr.write_image_data(&buf).map_err(std::io::Error::other)?;
        wr.finish().map_err(std::io::Error::other)
    })
    .map_err(|e| format!("writing {}: {e}", path.display()))
}

/// Writes 8-bit RGBA pixels (`width × height`, row-major) as a PNG, atomically (the
/// window saves its charts this way).
pub fn rgba_png(width: usize, height: usize, rgba: &[u8], path: &Path) -> Result<(), String> {
    if rgba.len() != width * height * 4 || width == 0 || height == 0 {
        return Err(format!(
            "an image of {width}×{height} needs {} bytes, got {}",
            width * height * 4,
            rgba.len()
        ));
    }
    crate::util::atomic::write_atomic_with(path, |out| {
        let mut enc = png::Encoder::new(out, width as u32, height as u32);
        enc.set_color(png::ColorType::Rgba);
        enc.set_depth(png::BitDepth::Eight);
        let mut wr = enc.write_header().map_err(std::io::Error::other)?;
        wr.write_image_data(rgba).map_err(std::io::Error::other)?;
        wr.finish().map_err(std::io::Error::other)
    })
    .map_err(|e| format!("writing {}: {e}", path.display()))
}

#[derive(Debug, Clone, Serialize)]
pub struct ImageReport {
    pub synthetic_rows: usize,
    pub real_train_rows: usize,
    pub real_test_rows: usize,
    /// Accuracy on real-test of models trained on synthetic images.
    pub synthetic_logistic_accuracy: f64,
    pub synthetic_mlp_accuracy: f64,
    /// The same models trained on real-train (the reference row).
    pub real_logistic_accuracy: f64,
    pub real_mlp_accuracy: f64,
    /// The CNN judge (see [`super::cnn`]) trained on synthetic images, and on real-train:
    /// the papers' headline number.
    pub synthetic_cnn_accuracy: f64,
    pub real_cnn_accuracy: f64,
    /// Fréchet distance between real-test and synthetic images in the hidden layer (100
    /// ReLU units) of the MLP trained on real-train.
    pub frechet_distance: f64,
}

fn xy(set: &ImageSet, what: &str) -> Result<Xy, String> {
    let labels = set
        .labels
        .as_ref()
        .ok_or_else(|| format!("{what} images have no labels; classifier accuracy needs them"))?;
    Ok(Xy {
        x: set.pixels.iter().map(|&v| f64::from(v) / 255.0).collect(),
        n: set.len(),
        p: set.width * set.height,
        y: labels.iter().map(|&l| u32::from(l)).collect(),
    })
}

fn accuracy(p: Result<Vec<f64>, String>, test: &Xy, k: usize) -> Result<f64, String> {
    let p = p?;
    let pred: Vec<u32> = p
        .chunks(k)
        .map(|r| {
            r.iter()
                .enumerate()
                .max_by(|a, b| a.1.total_cmp(b.1))
                .map_or(0, |(i, _)| i as u32)
        })
        .collect();
    Ok(super::scores::accuracy(&test.y, &pred))
}

/// Fréchet distance ‖μ₁−μ₂‖² + Tr(Σ₁ + Σ₂ − 2(Σ₁Σ₂)^½) between two feature sets (n×d).
pub fn frechet(a: &[f64], na: usize, b: &[f64], nb: usize, d: usize) -> Result<f64, String> {
    let (ma, ca) = linalg::mean_cov(a, na, d);
    let (mb, cb) = linalg::mean_cov(b, nb, d);
    // Tr((Σ₁Σ₂)^½) = Tr((S Σ₂ S)^½) with S = Σ₁^½, and S Σ₂ S is symmetric PSD.
    let (vals, vecs) = linalg::sym_eigen(&ca, d)?;
    let mut s = vec![0.0; d * d];
    for (l, v) in vals.iter().zip(&vecs) {
        let r = l.max(0.0).sqrt();
        for i in 0..d {
            for j in 0..d {
                s[i * d + j] += r * v[i] * v[j];
            }
        }
    }
    let mul = |x: &[f64], y: &[f64]| -> Vec<f64> {
        let mut o = vec![0.0; d * d];
        for i in 0..d {
            for k in 0..d {
                let xik = x[i * d + k];
                if xik != 0.0 {
                    for j in 0..d {
                        o[i * d + j] += xik * y[k * d + j];
                    }
                }
            }
        }
        o
    };
    let m = mul(&mul(&s, &cb), &s);
    let (mv, _) = linalg::sym_eigen(&m, d)?;
    let tr_sqrt: f64 = mv.iter().map(|l| l.max(0.0).sqrt()).sum();
    let mean_term: f64 = ma.iter().zip(&mb).map(|(x, y)| (x - y) * (x - y)).sum();
    let tr: f64 = (0..d).map(|i| ca[i * d + i] + cb[i * d + i]).sum();
    Ok(mean_term + tr - 2.0 * tr_sqrt)
}

/// Trains logistic regression, the MLP and the CNN judge on synthetic and on real-train images, scores
/// each on real-test, and measures the Fréchet distance.
pub fn evaluate(
    real_train: &ImageSet,
    real_test: &ImageSet,
    synthetic: &ImageSet,
    seed: u64,
) -> Result<ImageReport, String> {
    let dims = |s: &ImageSet| (s.width, s.height);
    if dims(real_train) != dims(synthetic) || dims(real_test) != dims(synthetic) {
        return Err(format!(
            "image sizes differ: real-train {:?}, real-test {:?}, synthetic {:?}",
            dims(real_train),
            dims(real_test),
            dims(synthetic)
        ));
    }
    let (tr, te, sy) = (
        xy(real_train, "real-train")?,
        xy(real_test, "real-test")?,
        xy(synthetic, "synthetic")?,
    );
    let k =
        tr.y.iter()
            .chain(&te.y)
            .chain(&sy.y)
            .copied()
            .max()
            .unwrap_or(0) as usize
            + 1;
    let fit = |d: &Xy, hidden| super::net::fit(d, k, hidden, seed);
    let cnn = |d: &Xy| super::cnn::fit(d, k, seed);
    let ((real_lr, real_mlp), ((syn_lr, syn_mlp), (real_cnn, syn_cnn))) = rayon::join(
        || rayon::join(|| fit(&tr, 0), || fit(&tr, 100)),
        || {
            rayon::join(
                || rayon::join(|| fit(&sy, 0), || fit(&sy, 100)),
                || rayon::join(|| cnn(&tr), || cnn(&sy)),
            )
        },
    );
    let (real_lr, real_mlp, syn_lr, syn_mlp) = (real_lr?, real_mlp?, syn_lr?, syn_mlp?);
    let (real_cnn, syn_cnn) = (real_cnn?, syn_cnn?);
    let fa = real_mlp.hidden(&te.x)?;
    let fb = real_mlp.hidden(&sy.x)?;
    Ok(ImageReport {
        synthetic_rows: sy.n,
        real_train_rows: tr.n,
        real_test_rows: te.n,
        synthetic_logistic_accuracy: accuracy(syn_lr.proba(&te.x), &te, k)?,
        synthetic_mlp_accuracy: accuracy(syn_mlp.proba(&te.x), &te, k)?,
        real_logistic_accuracy: accuracy(real_lr.proba(&te.x), &te, k)?,
        real_mlp_accuracy: accuracy(real_mlp.proba(&te.x), &te, k)?,
        synthetic_cnn_accuracy: accuracy(syn_cnn.proba(&te.x), &te, k)?,
        real_cnn_accuracy: accuracy(real_cnn.proba(&te.x), &te, k)?,
        frechet_distance: frechet(&fa, te.n, &fb, sy.n, 100)?,
    })
}

#[cfg(test)]
mod tests {
    /// A chart's pixels survive the round trip through the PNG writer, and a buffer of
    /// the wrong size is an error, not a corrupt file.
    #[test]
    fn rgba_png_round_trips() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("c.png");
        let px = [255u8, 0, 0, 255, 0, 128, 255, 128];
        super::rgba_png(2, 1, &px, &path).unwrap();
        let dec = png::Decoder::new(std::io::BufReader::new(std::fs::File::open(&path).unwrap()));
        let mut r = dec.read_info().unwrap();
        let mut buf = vec![0; r.output_buffer_size().unwrap()];
        let info = r.next_frame(&mut buf).unwrap();
        assert_eq!((info.width, info.height), (2, 1));
        assert_eq!(&buf[..info.buffer_size()], &px);
        assert!(super::rgba_png(2, 2, &px, &path).is_err());
    }
}
