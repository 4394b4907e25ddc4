//! The DCGAN-shaped stacks the image methods train: strided convolutions down to a score,
//! transposed convolutions up to an image. Apart from `conv`, so that the convolution itself
//! knows nothing of the layer list it is used in.

use candle_core::Device;
use rand::Rng;

use super::conv::{Conv2d, ConvShape};
use super::layers::{Act, Block, Linear};
use super::{NnError, Result};

/// A DCGAN-style critic for square images of `(input channels, side)`: 4×4 stride-2
/// convolutions with `channels` (28 → 14 → 7 …), leaky ReLU(0.2), then one linear layer
/// to `out` scores. No normalisation: batch norm mixes examples, which DP-SGD forbids.
pub fn dcgan_critic<R: Rng + ?Sized>(
    (cin, side): (usize, usize),
    channels: &[usize],
    out: usize,
    dev: &Device,
    rng: &mut R,
) -> Result<Vec<Block>> {
    let (mut cin, mut side) = (cin, side);
    let mut blocks = Vec::new();
    for &c in channels {
        let s = ConvShape {
            cin,
            h: side,
            w: side,
            cout: c,
            k: 4,
            stride: 2,
            pad: 1,
            transposed: false,
        };
        side = s.out_hw()?.0;
        cin = c;
        blocks.push(Block::Conv(Conv2d::new(s, true, dev, rng)?));
        blocks.push(Block::Act(Act::LeakyRelu(0.2)));
    }
    blocks.push(Block::Linear(Linear::new(
        cin * side * side,
        out,
        true,
        dev,
        rng,
    )?));
    Ok(blocks)
}

/// A DCGAN-style generator for square one-channel images of `pixels` values: a linear
/// layer from `input` to `channels[0]` maps of side s, then 4×4 stride-2 transposed
/// convolutions through the other channel counts and finally to one channel, each
/// doubling the side (s = side / 2^len). Leaky ReLU between; the output head is the
/// caller's. No batch norm (it would mix the generated rows, harmless here, but the
/// networks stay one kind).
pub fn dcgan_generator<R: Rng + ?Sized>(
    input: usize,
    channels: &[usize],
    pixels: usize,
    dev: &Device,
    rng: &mut R,
) -> Result<Vec<Block>> {
    let side = (pixels as f64).sqrt().round() as usize;
    let ups = channels.len() as u32;
    let Some(first) = channels.first().copied() else {
        return Err(NnError::Invalid(
            "a convolutional generator needs channels".into(),
        ));
    };
    if side * side != pixels || side % 2usize.pow(ups) != 0 {
        return Err(NnError::Invalid(format!(
            "a convolutional generator with {ups} upsampling steps needs square images whose side divides by {}; these have {pixels} pixels",
            2usize.pow(ups)
        )));
    }
    let mut s = side / 2usize.pow(ups);
    let mut blocks = vec![
        Block::Linear(Linear::new(input, first * s * s, true, dev, rng)?),
        Block::Act(Act::LeakyRelu(0.2)),
    ];
    let outs: Vec<usize> = channels.iter().skip(1).copied().chain([1]).collect();
    let mut cin = first;
    for (i, &cout) in outs.iter().enumerate() {
        let shape = ConvShape {
            cin,
            h: s,
            w: s,
            cout,
            k: 4,
            stride: 2,
            pad: 1,
            transposed: true,
        };
        blocks.push(Block::Conv(Conv2d::new(shape, true, dev, rng)?));
        if i + 1 < outs.len() {
            blocks.push(Block::Act(Act::LeakyRelu(0.2)));
        }
        s *= 2;
        cin = cout;
    }
    Ok(blocks)
}
