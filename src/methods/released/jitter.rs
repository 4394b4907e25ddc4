//! Jitter: a small random turn, zoom and shift of each generated image as it is sampled,
//! for synthetic digits meant to train a classifier (`dpsynth sample --jitter`).
//!
//! A classifier trained on synthetic digits learns from the generator's habits: a kernel
//! generator draws each class near its typical pose, and a judge trained on those misses
//! real digits written a little turned or off-centre. Warping each digit at random, as
//! every MNIST training recipe augments real digits, teaches the judge those poses. It is
//! post-processing of the released model's output (randomness of its own, no row is read),
//! so it costs no privacy; it trades fidelity for that use: the sampled set no longer
//! matches the real digits' distribution (every digit moves), so the Fréchet distance
//! grows while a CNN trained on it does better. Off unless asked for on the command line,
//! on by default in the window's export of digits; the exported statement says when it
//! was applied.

use rand::Rng;

use super::{MethodError, ReleasedModel, Result};
use crate::data::Table;
use crate::data::encode::Encoding;
use crate::methods::image_nets::ImageLayout;

/// How far each image may be turned (degrees either way), zoomed (a share either way)
/// and moved (a share of the side, either way, on each axis); each drawn uniformly. With
/// `elastic`, each image is also bent by a smooth random field first (Simard, Steinkraus &
/// Platt 2003, "Best practices for convolutional neural networks applied to visual
/// document analysis": the distortion that gave their CNN its best MNIST error).
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct Jitter {
    pub degrees: f64,
    pub zoom: f64,
    pub shift: f64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub elastic: Option<Elastic>,
}

/// A displacement field of uniform noise in (−1, 1) per pixel and axis, smoothed by a
/// Gaussian of `sigma` pixels and scaled by `alpha`: strokes bend and thicken locally as
/// handwriting does, which a turn or a zoom cannot do. Measured on MNIST (a
/// CNN judge on a validation split of the training digits, 60,000 digits from
/// one ε = 10 DP-MERF model): not a gain there — Simard's (34, 4) cost 0.2–0.6 points and a
/// mild (10, 3) 0.2 on top of a turn, zoom and shift — so it is off unless asked for.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct Elastic {
    pub alpha: f64,
    pub sigma: f64,
}

impl Jitter {
    /// The usual augmentation of MNIST training digits (Keras' image-augmentation example:
    /// 10°, 10 % zoom, 10 % shift), fixed before anything was scored with it.
    pub const STANDARD: Jitter = Jitter {
        degrees: 10.0,
        zoom: 0.1,
        shift: 0.1,
        elastic: None,
    };

    /// `standard`, or `DEGREES,ZOOM,SHIFT` (e.g. `10,0.1,0.1`), or with an elastic bend
    /// `DEGREES,ZOOM,SHIFT,ALPHA,SIGMA` (e.g. `10,0.1,0.1,34,4`, Simard's).
    pub fn parse(s: &str) -> std::result::Result<Self, String> {
        if s.trim() == "standard" {
            return Ok(Self::STANDARD);
        }
        let v: Vec<f64> = s
            .split(',')
            .map(|p| p.trim().parse::<f64>())
            .collect::<std::result::Result<_, _>>()
            .map_err(|_| {
                format!("'{s}': give `standard` or DEGREES,ZOOM,SHIFT, e.g. 10,0.1,0.1")
            })?;
        let (degrees, zoom, shift, elastic) = match v[..] {
            [d, z, s] => (d, z, s, None),
            [d, z, s, alpha, sigma] => (d, z, s, Some(Elastic { alpha, sigma })),
            _ => {
                return Err(format!(
                    "'{s}': give three numbers, DEGREES,ZOOM,SHIFT, e.g. 10,0.1,0.1 (or five, with an elastic bend's ALPHA,SIGMA)"
                ));
            }
        };
        let ok = (0.0..=180.0).contains(&degrees)
            && (0.0..0.9).contains(&zoom)
            && (0.0..=0.5).contains(&shift);
        if !ok {
            return Err(format!(
                "'{s}': degrees 0-180, zoom below 0.9 and shift at most 0.5 of the side"
            ));
        }
        if let Some(e) = elastic
            && !((0.0..=100.0).contains(&e.alpha) && (0.5..=10.0).contains(&e.sigma))
        {
            return Err(format!(
                "'{s}': the elastic bend's ALPHA is 0-100 pixels and SIGMA 0.5-10 pixels (Simard's: 34,4)"
            ));
        }
        Ok(Self {
            degrees,
            zoom,
            shift,
            elastic,
        })
    }

    /// Warps the pixels of every row (`width` values each, laid out as `layout`) in place,
    /// one random bend, turn, zoom and shift per image, bilinear, the uncovered border
    /// filled with the encoded lower bound (MNIST's black). The label span is left as it is.
    pub fn apply(&self, rows: &mut [f32], width: usize, layout: &ImageLayout, rng: &mut impl Rng) {
        let (start, side) = (layout.pixel_start(), layout.side);
        let mut out = vec![0f32; side * side];
        for row in rows.chunks_mut(width) {
            let Some(px) = row.get_mut(start..start + side * side) else {
                continue;
            };
            let w = self.draw(side, rng);
            warp(px, &mut out, side, &w);
            px.copy_from_slice(&out);
        }
    }

    fn draw(&self, side: usize, rng: &mut impl Rng) -> Warp {
        let u = |rng: &mut dyn rand::RngCore, a: f64| {
            if a > 0.0 {
                rng.random_range(-a..=a)
            } else {
                0.0
            }
        };
        let t = u(rng, self.degrees).to_radians();
        let s = 1.0 + u(rng, self.zoom);
        let d = (
            u(rng, self.shift) * side as f64,
            u(rng, self.shift) * side as f64,
        );
        let bend = self.elastic.map(|e| {
            let mut field = || smooth_field(side, &e, rng);
            (field(), field())
        });
        Warp {
            a: [[t.cos() / s, -t.sin() / s], [t.sin() / s, t.cos() / s]],
            d,
            bend,
        }
    }
}

/// Uniform noise in (−1, 1) per pixel, smoothed by a Gaussian of `e.sigma` pixels
/// (separable, zero beyond the image, the kernel cut at 3σ) and scaled by `e.alpha`.
fn smooth_field(side: usize, e: &Elastic, rng: &mut dyn rand::RngCore) -> Vec<f64> {
    let r = (3.0 * e.sigma).ceil() as isize;
    let kernel: Vec<f64> = (-r..=r)
        .map(|i| (-((i * i) as f64) / (2.0 * e.sigma * e.sigma)).exp())
        .collect();
    let total: f64 = kernel.iter().sum();
    let noise: Vec<f64> = (0..side * side)
        .map(|_| rng.random_range(-1.0..=1.0))
        .collect();
    let n = side as isize;
    let blur = |src: &[f64], along_rows: bool| -> Vec<f64> {
        let mut out = vec![0.0; src.len()];
        for (i, o) in out.iter_mut().enumerate() {
            let (y, x) = ((i / side) as isize, (i % side) as isize);
            *o = kernel
                .iter()
                .zip(-r..=r)
                .filter_map(|(k, j)| {
                    let (yy, xx) = if along_rows { (y, x + j) } else { (y + j, x) };
                    ((0..n).contains(&yy) && (0..n).contains(&xx))
                        .then(|| k * src[(yy * n + xx) as usize])
                })
                .sum::<f64>()
                / total;
        }
        out
    };
    let field = blur(&blur(&noise, true), false);
    field.into_iter().map(|v| v * e.alpha).collect()
}

/// Output pixel p takes the input at A·(p + b(p) − c − d) + c (c the centre, b the
/// bend's displacement at p, none without one): the image bent, turned and zoomed about
/// its centre, then moved by d.
struct Warp {
    a: [[f64; 2]; 2],
    d: (f64, f64),
    /// The bend's (rows, columns) displacement per output pixel.
    bend: Option<(Vec<f64>, Vec<f64>)>,
}

fn warp(src: &[f32], out: &mut [f32], side: usize, w: &Warp) {
    let c = (side as f64 - 1.0) / 2.0;
    let at = |y: isize, x: isize| -> f32 {
        if y < 0 || x < 0 || y >= side as isize || x >= side as isize {
            0.0
        } else {
            src[y as usize * side + x as usize]
        }
    };
    for (i, o) in out.iter_mut().enumerate() {
        let (by, bx) = w.bend.as_ref().map_or((0.0, 0.0), |(y, x)| (y[i], x[i]));
        let (oy, ox) = (
            (i / side) as f64 + by - c - w.d.0,
            (i % side) as f64 + bx - c - w.d.1,
        );
        let y = w.a[0][0] * oy + w.a[0][1] * ox + c;
        let x = w.a[1][0] * oy + w.a[1][1] * ox + c;
        let (y0, x0) = (y.floor(), x.floor());
        let (fy, fx) = ((y - y0) as f32, (x - x0) as f32);
        let (y0, x0) = (y0 as isize, x0 as isize);
        *o = (1.0 - fy) * ((1.0 - fx) * at(y0, x0) + fx * at(y0, x0 + 1))
            + fy * ((1.0 - fx) * at(y0 + 1, x0) + fx * at(y0 + 1, x0 + 1));
    }
}

impl ReleasedModel {
    /// [`Self::sample_each`] with every image jittered before it is decoded; refused for
    /// a model that does not make images.
    pub fn sample_each_jittered(
        &self,
        n: usize,
        seed: Option<u64>,
        draw: super::Draw,
        jitter: &Jitter,
        sink: &mut dyn FnMut(Table) -> Result<()>,
    ) -> Result<()> {
        let encoding = Encoding::new(&self.header.schema)?;
        // The label's encoded columns: the conditioning's span when the model was trained
        // per class, else the one-hot block of the schema's `label` column, which a model
        // without conditioning (DP-GAN's `tiny` on digits) generates like any column.
        let label = match &self.header.conditioning {
            Some(c) => Some((c.start, c.span_width())),
            None => encoding
                .spans
                .iter()
                .find(|s| {
                    self.header
                        .schema
                        .columns
                        .get(s.column)
                        .is_some_and(|c| c.name == "label")
                })
                .map(|s| (s.start, s.len)),
        };
        let layout = crate::data::image::image_side(&self.header.schema)
            .and_then(|_| ImageLayout::of_span(encoding.width, label).ok())
            .ok_or_else(|| {
                MethodError::Usage(
                    "--jitter warps images; this model makes table rows, not images".into(),
                )
            })?;
        let warp = |rows: &mut [f32], width: usize, rng: &mut rand::rngs::StdRng| {
            jitter.apply(rows, width, &layout, rng)
        };
        self.sample_chunks(n, seed, draw, Some(&warp), None, sink)
            .map(|_| ())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn layout(side: usize) -> ImageLayout {
        ImageLayout::of_span(side * side, None).unwrap()
    }

    #[test]
    fn no_jitter_leaves_the_image_as_it_was() {
        let mut px: Vec<f32> = (0..64).map(|i| (i % 7) as f32 / 7.0).collect();
        let before = px.clone();
        let none = Jitter {
            degrees: 0.0,
            zoom: 0.0,
            shift: 0.0,
            elastic: None,
        };
        none.apply(&mut px, 64, &layout(8), &mut rand::rng());
        for (a, b) in px.iter().zip(&before) {
            assert!((a - b).abs() < 1e-6);
        }
    }

    #[test]
    fn a_whole_pixel_shift_moves_the_image_and_fills_black() {
        // One bright pixel at (3, 3) of an 8×8 image; moved by (+1, −2) it is at (4, 1).
        let mut src = vec![0f32; 64];
        src[3 * 8 + 3] = 1.0;
        let mut out = vec![0f32; 64];
        let w = Warp {
            a: [[1.0, 0.0], [0.0, 1.0]],
            d: (1.0, -2.0),
            bend: None,
        };
        warp(&src, &mut out, 8, &w);
        assert!((out[4 * 8 + 1] - 1.0).abs() < 1e-6, "{out:?}");
        assert!((out.iter().sum::<f32>() - 1.0).abs() < 1e-6);
    }

    #[test]
    fn a_quarter_turn_turns_the_image() {
        // A bar along the top row of a 5×5 image, turned 90° about the centre, is a column.
        let mut src = vec![0f32; 25];
        src[..5].fill(1.0);
        let mut out = vec![0f32; 25];
        let t = 90f64.to_radians();
        let w = Warp {
            a: [[t.cos(), -t.sin()], [t.sin(), t.cos()]],
            d: (0.0, 0.0),
            bend: None,
        };
        warp(&src, &mut out, 5, &w);
        let col: Vec<f32> = (0..5).map(|y| out[y * 5 + 4]).collect();
        let other: Vec<f32> = (0..5).map(|y| out[y * 5]).collect();
        assert!(
            col.iter().all(|v| (v - 1.0).abs() < 1e-5)
                || other.iter().all(|v| (v - 1.0).abs() < 1e-5),
            "{out:?}"
        );
        assert!((out.iter().sum::<f32>() - 5.0).abs() < 1e-4);
    }

    #[test]
    fn a_bend_moves_pixels_by_about_alpha_times_the_smoothed_noise_and_no_further() {
        use rand::SeedableRng;
        let e = Elastic {
            alpha: 34.0,
            sigma: 4.0,
        };
        // Fixed seeds: the bounds hold for each of these draws, and a failure replays.
        for seed in 0..50 {
            let field = smooth_field(28, &e, &mut rand::rngs::StdRng::seed_from_u64(seed));
            // Smoothed uniform noise has variance (1/3)/(4πσ²) away from the border, so
            // α·σ_field ≈ 34 · 0.041 ≈ 1.4 pixels: a bend, not a scramble.
            let rms = (field.iter().map(|v| v * v).sum::<f64>() / field.len() as f64).sqrt();
            assert!(
                (0.3..4.0).contains(&rms),
                "seed {seed}: rms displacement {rms}"
            );
            // Smooth: neighbours move alike (white noise would differ by ~α·0.8 px).
            let step = (0..27 * 28)
                .map(|i| (field[i] - field[i + 28]).abs())
                .fold(0.0, f64::max);
            assert!(
                step < 1.5,
                "seed {seed}: largest step between neighbours {step}"
            );
        }
        let none = smooth_field(
            28,
            &Elastic {
                alpha: 0.0,
                sigma: 4.0,
            },
            &mut rand::rng(),
        );
        assert!(none.iter().all(|v| *v == 0.0));
    }

    #[test]
    fn a_bent_digit_changes_shape_but_stays_in_place() {
        use rand::SeedableRng;
        // A filled 8×8 square in the middle of a 28×28 image (centre 13.5, 13.5).
        let mut square = vec![0f32; 28 * 28];
        for y in 10..18 {
            square[y * 28 + 10..y * 28 + 18].fill(1.0);
        }
        let j = Jitter::parse("0,0,0,34,4").unwrap();
        for seed in 0..50 {
            let mut px = square.clone();
            j.apply(
                &mut px,
                28 * 28,
                &layout(28),
                &mut rand::rngs::StdRng::seed_from_u64(seed),
            );
            assert!(px.iter().zip(&square).any(|(a, b)| (a - b).abs() > 0.05));
            // A bend stretches strokes locally (the ink may grow or shrink) but does not
            // carry the figure off: its centre of ink moves by about the displacement.
            let ink: f32 = px.iter().sum();
            assert!((32.0..128.0).contains(&ink), "seed {seed}: ink 64 → {ink}");
            let centre = |axis: fn(usize) -> usize| {
                px.iter()
                    .enumerate()
                    .map(|(i, v)| axis(i) as f32 * v)
                    .sum::<f32>()
                    / ink
            };
            let (cy, cx) = (centre(|i| i / 28), centre(|i| i % 28));
            assert!(
                (cy - 13.5).abs() < 3.0 && (cx - 13.5).abs() < 3.0,
                "seed {seed}: centre ({cy}, {cx})"
            );
        }
    }

    #[test]
    fn the_setting_parses_or_says_what_it_wants() {
        assert_eq!(Jitter::parse("standard").unwrap(), Jitter::STANDARD);
        assert_eq!(
            Jitter::parse("5, 0.05, 0.1").unwrap(),
            Jitter {
                degrees: 5.0,
                zoom: 0.05,
                shift: 0.1,
                elastic: None,
            }
        );
        assert!(
            Jitter::parse("5,0.05")
                .unwrap_err()
                .contains("three numbers")
        );
        assert!(Jitter::parse("5,2,0.1").unwrap_err().contains("zoom"));
        assert_eq!(
            Jitter::parse("10,0.1,0.1,34,4").unwrap().elastic,
            Some(Elastic {
                alpha: 34.0,
                sigma: 4.0
            })
        );
        assert!(
            Jitter::parse("10,0.1,0.1,34,0")
                .unwrap_err()
                .contains("SIGMA")
        );
        assert!(Jitter::parse("10,0.1,0.1,34").unwrap_err().contains("five"));
        assert!(Jitter::parse("lots").unwrap_err().contains("standard"));
    }
}
