//! DP-auto-GAN's networks: the autoencoder (dense, or convolutional for images), the
//! GAN on its codes, and their memory footprint.

use candle_core::Tensor;

use crate::methods::image_nets::{self, CONV_SPEEDUP, ConvCost, ImageLayout};
use crate::methods::released::Conditioning;
use crate::methods::{Result, heads_for};
use crate::nn::layers::{Act, Block, LayerNorm, Linear, Net, mlp};

use super::config::*;

pub(super) fn lrelu() -> Act {
    Act::LeakyRelu(0.2)
}

/// The encoder's last activation: the codes' range.
pub(super) fn encoder_act(c: &DpAutoGanConfig) -> Act {
    if c.tanh_encoder { Act::Tanh } else { lrelu() }
}

/// The autoencoder d → (d+c)/2 → c → (d+c)/2 → d (or one layer each way; or, for images,
/// convolutions down to the code and transposed convolutions back) with output heads;
/// returns (whole autoencoder, encoder, decoder), which share their parameters.
pub(super) fn autoencoder(
    c: &DpAutoGanConfig,
    encoding: &crate::data::encode::Encoding,
    d: usize,
    layout: Option<&ImageLayout>,
    dev: &candle_core::Device,
    rng: &mut rand::rngs::StdRng,
) -> Result<(Net, Net, Net)> {
    let enc_act = encoder_act(c);
    let mid = ((d + c.code_dim) / 2).clamp(1, crate::methods::MAX_DERIVED_HIDDEN);
    let (encoder, mut decoder) = if let Some(layout) = layout {
        // The decoder leaves zeros in the label span: it is not reconstructed (a constant
        // in the loss), and generated rows get their drawn class there.
        let mut e = image_nets::reader(layout, &c.conv_encoder, c.code_dim, dev, rng)?;
        e.push(Block::Act(enc_act));
        (
            e,
            image_nets::writer(c.code_dim, &c.conv_decoder, layout, dev, rng)?,
        )
    } else if c.single_layer_ae {
        (
            vec![
                Block::Linear(Linear::new(d, c.code_dim, true, dev, rng)?),
                Block::Act(enc_act),
            ],
            vec![Block::Linear(Linear::new(c.code_dim, d, true, dev, rng)?)],
        )
    } else {
        let mut e = mlp(&[d, mid, c.code_dim], enc_act, dev, rng)?;
        e.push(Block::Act(enc_act));
        (e, mlp(&[c.code_dim, mid, d], lrelu(), dev, rng)?)
    };
    decoder.push(Block::Head(heads_for(encoding, c.tau)));
    // Blocks share their Vars: training `ae` trains `decoder` too.
    let ae = Net::new(
        encoder
            .iter()
            .cloned()
            .chain(decoder.iter().cloned())
            .collect(),
        dev,
    );
    Ok((ae, Net::new(encoder, dev), Net::new(decoder, dev)))
}

/// Phase 2's networks: the paper's residual latent generator h → h → h → c (layer norm,
/// no bias; with `classes`, a first layer from latent ⊕ one-hot class to h) and the critic
/// d → 2d/3 → d/3 → 1 (for images, convolutions over the label maps and the image).
pub(super) fn gan_nets(
    c: &DpAutoGanConfig,
    d: usize,
    classes: usize,
    layout: Option<&ImageLayout>,
    dev: &candle_core::Device,
    rng: &mut rand::rngs::StdRng,
) -> Result<(Net, Net)> {
    let h = c.latent_dim;
    let block = |inp: usize, out: usize, rng: &mut rand::rngs::StdRng| -> Result<Vec<Block>> {
        Ok(vec![
            Block::Linear(Linear::new(inp, out, false, dev, rng)?),
            Block::LayerNorm(LayerNorm::new(out, dev)?),
            Block::Act(lrelu()),
        ])
    };
    let mut gblocks = if classes > 0 {
        block(h + classes, h, rng)?
    } else {
        Vec::new()
    };
    gblocks.push(Block::Residual(block(h, h, rng)?));
    gblocks.push(Block::Residual(block(h, h, rng)?));
    if layout.is_some() {
        // Codes end where the encoder's do (tanh: in (−1, 1)), not layer-normed: a
        // layer-normed output has unit spread per code, which the encoder's codes need
        // not have, and the decoder only knows the encoder's region.
        gblocks.push(Block::Linear(Linear::new(h, c.code_dim, true, dev, rng)?));
        gblocks.push(Block::Act(encoder_act(c)));
    } else {
        gblocks.extend(block(h, c.code_dim, rng)?);
    }
    let generator = Net::new(gblocks, dev);
    if c.code_critic {
        return Ok((generator, code_critic(c, classes, dev, rng)?));
    }
    if let Some(layout) = layout {
        let critic = image_nets::reader(layout, &c.conv_critic, 1, dev, rng)?;
        return Ok((generator, Net::new(critic, dev)));
    }
    let critic = Net::new(
        mlp(
            &[
                d,
                (2 * d / 3).clamp(1, crate::methods::MAX_DERIVED_HIDDEN),
                (d / 3).clamp(1, crate::methods::MAX_DERIVED_HIDDEN),
                1,
            ],
            lrelu(),
            dev,
            rng,
        )?,
        dev,
    );
    Ok((generator, critic))
}

/// Each row's code ⊕ its one-hot class: the frozen encoder (a DP output of phase 1) applied
/// to the row alone, so the map is row by row and one person still changes one row. The
/// critic's DP-SGD on these rows (same sampling rate and σ as on the images) therefore
/// bounds each person's influence exactly as it would on the images; nothing here is
/// released or shown.
pub(super) fn codes_of(encoder: &Net, data: &Tensor, k: &Conditioning) -> Result<Tensor> {
    let n = data.dims2()?.0;
    let mut parts = Vec::new();
    let mut at = 0;
    while at < n {
        let len = CODE_CHUNK.min(n - at);
        let x = data.narrow(0, at, len)?;
        let code = encoder.forward(&x, None)?.detach();
        let class = x.narrow(1, k.start, k.span_width())?;
        parts.push(Tensor::cat(&[&code, &class], 1)?);
        at += len;
    }
    Ok(Tensor::cat(&parts, 0)?)
}

/// Rows encoded at a time when computing the codes (bounds the memory of one pass).
pub(super) const CODE_CHUNK: usize = 1_000;

/// The critic on codes ⊕ class: code+classes → 4·code → 2·code → 1.
pub(super) fn code_critic(
    c: &DpAutoGanConfig,
    classes: usize,
    dev: &candle_core::Device,
    rng: &mut rand::rngs::StdRng,
) -> Result<Net> {
    let w = c.code_dim;
    Ok(Net::new(
        mlp(&[w + classes, 4 * w, 2 * w, 1], lrelu(), dev, rng)?,
        dev,
    ))
}

/// The size of a convolutional run, in multiply-adds per row (see [`ConvCost`]).
pub(super) fn conv_footprint(
    n: usize,
    width: usize,
    c: &DpAutoGanConfig,
) -> crate::methods::Footprint {
    let layout = ImageLayout::estimate(width);
    let classes = if c.label.is_empty() {
        0
    } else {
        layout.label_width
    };
    let encoder = ConvCost::reader(&layout, &c.conv_encoder, c.code_dim);
    let decoder = ConvCost::writer(c.code_dim, &c.conv_decoder, &layout);
    let critic = ConvCost::reader(&layout, &c.conv_critic, 1);
    let h = c.latent_dim;
    let generator = crate::methods::mlp_params(&[h + classes, h])
        + 2 * crate::methods::mlp_params(&[h, h])
        + crate::methods::mlp_params(&[h, c.code_dim]);
    let ae = encoder.plus(decoder);
    let w = c.code_dim;
    let code_critic = crate::methods::mlp_params(&[w + classes, 4 * w, 2 * w, 1]);
    // Phase 2 passes generated codes through the frozen decoder into the critic, or
    // (code critic) straight into it; the codes of the rows are one encoder pass.
    let phase2 = if c.code_critic {
        ConvCost {
            params: code_critic,
            work: code_critic * CONV_SPEEDUP,
            widest: (w + classes) as u64,
        }
    } else {
        critic.plus(decoder)
    };
    let (ae_work, phase2_work) = (
        ae.work / CONV_SPEEDUP,
        phase2.work / CONV_SPEEDUP + generator,
    );
    let cap = |b: usize| b.min(n.max(1)) as u64;
    let gen_steps = c.critic_steps / c.n_critic.max(1);
    let (critic_params, code_rows) = if c.code_critic {
        (code_critic, n as u64)
    } else {
        (critic.params, 0)
    };
    crate::methods::Footprint {
        params: ae.params + critic_params + generator,
        passes: crate::methods::Footprint::phase(c.ae_steps, cap(c.ae_batch), ae_work)
            .saturating_add(code_rows.saturating_mul(encoder.work / CONV_SPEEDUP))
            .saturating_add(crate::methods::Footprint::phase(
                c.critic_steps,
                2 * cap(c.gan_batch),
                phase2_work,
            ))
            .saturating_add(crate::methods::Footprint::phase(
                gen_steps,
                cap(c.gan_batch),
                phase2_work,
            )),
        batch: cap(c.ae_batch).max(2 * cap(c.gan_batch)),
        steps: c.ae_steps + c.critic_steps + gen_steps,
        widest: ae.widest.max(phase2.widest),
        // The rows' codes ⊕ class, held for phase 2.
        extra_values: code_rows * (w + classes) as u64,
        ..Default::default()
    }
}
