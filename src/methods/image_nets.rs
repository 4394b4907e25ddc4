//! The convolutional networks of the image presets, built in one place for every method
//! that has them: DP-GAN's conditional DCGAN, DP-auto-GAN's convolutional autoencoder and
//! the DP-MERF / PEARL generator.
//!
//! An encoded image table is a label span (first or last) beside `side × side` pixel
//! columns. Networks that read rows see the label as maps beside the pixels
//! ([`Block::LabelMaps`]); networks that write rows make the pixels by transposed
//! convolutions and leave zeros in the label span, which the conditioning then sets
//! ([`super::released::with_label`]). None of this reads a row: the layout is the
//! schema's, so nothing here needs accounting.

use super::embedding::LabelSpan;
use super::released::Conditioning;
use super::{MethodError, Result};
use crate::nn::layers::Block;

/// Where the pixels and the label lie in an encoded image row.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ImageLayout {
    /// The label span's first column and width (0 without a label).
    pub label_start: usize,
    pub label_width: usize,
    pub pixels: usize,
    pub side: usize,
}

impl ImageLayout {
    /// The layout of rows `width` wide whose label span is `cond`'s (none: all pixels).
    pub fn new(width: usize, cond: Option<&Conditioning>) -> Result<Self> {
        Self::of_span(width, cond.map(|c| (c.start, c.span_width())))
    }

    /// The layout of rows `width` wide whose only other columns are the label span
    /// `(start, width)`, first or last (every image set here); an error names what does
    /// not fit. The one place that decides whether rows are images.
    pub fn of_span(width: usize, label: Option<(usize, usize)>) -> Result<Self> {
        let (label_start, label_width) = label.unwrap_or((0, 0));
        if label_width > 0 && label_start != 0 && label_start + label_width != width {
            return Err(MethodError::Plan(
                "image networks and local frequencies need the label column first or last".into(),
            ));
        }
        let pixels = width.saturating_sub(label_width);
        let side = (pixels as f64).sqrt().round() as usize;
        if side == 0 || side * side != pixels {
            return Err(MethodError::Plan(format!(
                "image networks and local frequencies need square images; these rows have {pixels} pixel columns"
            )));
        }
        Ok(Self {
            label_start,
            label_width,
            pixels,
            side,
        })
    }

    /// The column of the image's first pixel.
    pub fn pixel_start(&self) -> usize {
        self.padding().0
    }

    /// The layout an estimate assumes before the encoding is known (footprints see only
    /// the width): the largest square is the image, the rest (at least one) the label.
    pub fn estimate(width: usize) -> Self {
        let side = ((width as f64).sqrt().floor() as usize).max(1);
        Self {
            label_start: 0,
            label_width: width.saturating_sub(side * side).max(1),
            pixels: side * side,
            side,
        }
    }

    /// Zeros a generator puts (before, after) its pixels: the label span's place.
    fn padding(&self) -> (usize, usize) {
        if self.label_width > 0 && self.label_start == 0 {
            (self.label_width, 0)
        } else {
            (0, self.label_width)
        }
    }

    /// Channels of the maps a reading network starts from: the image and each label value.
    fn input_channels(&self) -> usize {
        1 + self.label_width
    }
}

/// The classes of a conditional GAN, drawn uniformly at sampling time: a public default,
/// so nothing is read from the rows and nothing is charged. `label` "" is no conditioning.
pub fn uniform_conditioning(
    encoding: &crate::data::encode::Encoding,
    label: &str,
) -> Result<Option<Conditioning>> {
    if label.is_empty() {
        return Ok(None);
    }
    let l = LabelSpan::find(encoding, label)?;
    Ok(Some(Conditioning {
        start: l.start,
        classes: l.classes,
        binary: l.binary,
        proportions: vec![1.0 / l.classes as f64; l.classes],
    }))
}

/// A network that reads image rows: label maps (when there is a label), then 4×4 stride-2
/// convolutions through `channels`, then a linear layer to `out` values (a critic's
/// logit, an encoder's code).
pub fn reader<R: rand::Rng + ?Sized>(
    layout: &ImageLayout,
    channels: &[usize],
    out: usize,
    dev: &candle_core::Device,
    rng: &mut R,
) -> Result<Vec<Block>> {
    let mut blocks = Vec::new();
    if layout.label_width > 0 {
        blocks.push(Block::LabelMaps {
            start: layout.label_start,
            classes: layout.label_width,
            pixels: layout.pixels,
        });
    }
    blocks.extend(
        crate::nn::dcgan::dcgan_critic(
            (layout.input_channels(), layout.side),
            channels,
            out,
            dev,
            rng,
        )
        .map_err(|e| MethodError::Plan(e.to_string()))?,
    );
    Ok(blocks)
}

/// A network that writes image rows from `input` values: a linear layer to `channels[0]`
/// maps, transposed convolutions up to the image, and zeros in the label span. The
/// output head is the caller's.
pub fn writer<R: rand::Rng + ?Sized>(
    input: usize,
    channels: &[usize],
    layout: &ImageLayout,
    dev: &candle_core::Device,
    rng: &mut R,
) -> Result<Vec<Block>> {
    let mut blocks = crate::nn::dcgan::dcgan_generator(input, channels, layout.pixels, dev, rng)
        .map_err(|e| MethodError::Plan(e.to_string()))?;
    let (before, after) = layout.padding();
    if before + after > 0 {
        blocks.push(Block::Pad { before, after });
    }
    Ok(blocks)
}

/// The size of a convolutional network, for the run's time and memory estimate.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct ConvCost {
    pub params: u64,
    /// Multiply-adds per row, forward. A convolution's weights are used at every
    /// position, so its parameter count understates its work.
    pub work: u64,
    /// The largest stack of maps a row holds.
    pub widest: u64,
}

impl ConvCost {
    pub fn plus(self, o: Self) -> Self {
        Self {
            params: self.params + o.params,
            work: self.work + o.work,
            widest: self.widest.max(o.widest),
        }
    }

    /// [`reader`]'s cost.
    pub fn reader(layout: &ImageLayout, channels: &[usize], out: usize) -> Self {
        let side = layout.side as u64;
        let mut cin = layout.input_channels() as u64;
        let (mut params, mut work, mut widest) = (0, 0, cin * side * side);
        let mut s = side;
        for &ch in channels {
            let ch = ch as u64;
            s = s.div_ceil(2);
            params += cin * 16 * ch + ch;
            work += cin * 16 * ch * s * s;
            widest = widest.max(ch * s * s);
            cin = ch;
        }
        params += (cin * s * s + 1) * out as u64;
        work += cin * s * s * out as u64;
        Self {
            params,
            work,
            widest,
        }
    }

    /// [`writer`]'s cost.
    pub fn writer(input: usize, channels: &[usize], layout: &ImageLayout) -> Self {
        let ups = channels.len() as u32;
        let mut s = (layout.side as u64 / 2u64.pow(ups)).max(1);
        let first = channels.first().copied().unwrap_or(1) as u64;
        let input = input as u64;
        let mut params = input * first * s * s + first * s * s;
        let mut work = input * first * s * s;
        let mut widest = first * s * s;
        let mut cin = first;
        for &cout in channels.iter().skip(1).chain(&[1]) {
            let cout = cout as u64;
            params += cin * 16 * cout + cout;
            work += cin * 16 * cout * s * s;
            s *= 2;
            widest = widest.max(cout * s * s);
            cin = cout;
        }
        Self {
            params,
            work,
            widest,
        }
    }
}

/// The convolutions' few large matrix products run at about this many times the
/// throughput the time model was fitted on (dense networks): measured on MNIST, 100
/// critic steps of DP-GAN's `mnist-conv` took 34 s against 100 s estimated from the raw
/// multiply-adds. Divide a [`ConvCost::work`] by it before it enters a footprint.
pub const CONV_SPEEDUP: u64 = 3;
