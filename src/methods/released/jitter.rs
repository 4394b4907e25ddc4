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
/// and moved (a share of the side, either way, on each axis); each drawn uniformly.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct Jitter {
    pub degrees: f64,
    pub zoom: f64,
    pub shift: f64,
}

impl Jitter {
    /// The usual augmentation of MNIST training digits (Keras' image-augmentation example:
    /// 10°, 10 % zoom, 10 % shift), fixed before anything was scored with it.
    pub const STANDARD: Jitter = Jitter {
        degrees: 10.0,
        zoom: 0.1,
        shift: 0.1,
    };

    /// `standard`, or `DEGREES,ZOOM,SHIFT` (e.g. `10,0.1,0.1`).
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
        let [degrees, zoom, shift] = v[..] else {
            return Err(format!(
                "'{s}': give three numbers, DEGREES,ZOOM,SHIFT, e.g. 10,0.1,0.1"
            ));
        };
        let ok = (0.0..=180.0).contains(&degrees)
            && (0.0..0.9).contains(&zoom)
            && (0.0..=0.5).contains(&shift);
        if !ok {
            return Err(format!(
                "'{s}': degrees 0-180, zoom below 0.9 and shift at most 0.5 of the side"
            ));
        }
        Ok(Self {
            degrees,
            zoom,
            shift,
        })
    }

    /// Warps the pixels of every row (`width` values each, laid out as `layout`) in place,
    /// one random turn, zoom and shift per image, bilinear, the uncovered border filled
    /// with the encoded lower bound (MNIST's black). The label span is left as it is.
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
        Warp {
            a: [[t.cos() / s, -t.sin() / s], [t.sin() / s, t.cos() / s]],
            d,
        }
    }
}

/// Output pixel p takes the input at A·(p − c − d) + c (c the centre): the image turned
/// and zoomed about its centre, then moved by d.
struct Warp {
    a: [[f64; 2]; 2],
    d: (f64, f64),
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
        let (oy, ox) = ((i / side) as f64 - c - w.d.0, (i % side) as f64 - c - w.d.1);
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
        self.sample_chunks(n, seed, draw, Some(&warp), sink)
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
    fn the_setting_parses_or_says_what_it_wants() {
        assert_eq!(Jitter::parse("standard").unwrap(), Jitter::STANDARD);
        assert_eq!(
            Jitter::parse("5, 0.05, 0.1").unwrap(),
            Jitter {
                degrees: 5.0,
                zoom: 0.05,
                shift: 0.1
            }
        );
        assert!(
            Jitter::parse("5,0.05")
                .unwrap_err()
                .contains("three numbers")
        );
        assert!(Jitter::parse("5,2,0.1").unwrap_err().contains("zoom"));
        assert!(Jitter::parse("lots").unwrap_err().contains("standard"));
    }
}
