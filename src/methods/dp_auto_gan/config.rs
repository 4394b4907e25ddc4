//! DP-auto-GAN's settings and presets, and its registry entry.

use crate::methods::Synthesizer;
use crate::methods::gan_phase::{GanLoss, GanSchedule};
use crate::methods::method::{
    Common, DataKind, MethodConfig, MethodInfo, PresetOf, build, listed, settings,
};

use super::*;

/// DP-auto-GAN settings; presets below.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct DpAutoGanConfig {
    /// The preset and the private switch, which the registry sets.
    #[serde(flatten)]
    pub common: Common,
    /// Latent code width c of the autoencoder.
    pub code_dim: usize,
    /// Tanh instead of LeakyReLU in the encoder (the paper's choice for binary data).
    pub tanh_encoder: bool,
    /// One linear layer each way (MIMIC) instead of d → (d+c)/2 → c.
    pub single_layer_ae: bool,
    pub ae_batch: usize,
    pub ae_steps: u64,
    pub ae_lr: f64,
    pub ae_clip: f64,
    pub latent_dim: usize,
    pub gan_batch: usize,
    pub critic_steps: u64,
    pub n_critic: u64,
    pub gan_lr: f64,
    pub gan_clip: f64,
    pub weight_clip: f64,
    /// The adversarial loss; see [`GanLoss`].
    #[serde(default)]
    pub gan_loss: GanLoss,
    /// Share of ε planned for phase 1 (the autoencoder).
    pub phase1_share: f64,
    pub tau: f64,
    /// Class column of a class-conditional run ("" for none; images only): the latent
    /// generator is given a class drawn uniformly (a public default, nothing read from
    /// the rows), and the critic sees the class beside the image as label maps.
    #[serde(default)]
    pub label: String,
    /// Channels of a convolutional encoder (empty: the dense autoencoder); with
    /// `conv_decoder` and `conv_critic`, for labelled images.
    #[serde(default)]
    pub conv_encoder: Vec<usize>,
    /// Channels of a convolutional decoder: code → maps → transposed convolutions → pixels.
    #[serde(default)]
    pub conv_decoder: Vec<usize>,
    /// Channels of a convolutional critic reading label maps beside the image.
    #[serde(default)]
    pub conv_critic: Vec<usize>,
    /// The critic reads codes ⊕ class, not decoded images: real rows reach it through the
    /// frozen encoder (see [`codes_of`]), generated codes directly. A decoder's output is
    /// always blurrier than a real image, and a critic on pixels wins by the blur alone.
    #[serde(default)]
    pub code_critic: bool,
}

impl DpAutoGanConfig {
    /// The GAN phase's schedule under these settings.
    pub(super) fn schedule(&self) -> GanSchedule {
        GanSchedule {
            loss: self.gan_loss,
            latent_dim: self.latent_dim,
            batch: self.gan_batch,
            critic_steps: self.critic_steps,
            n_critic: self.n_critic,
            lr: self.gan_lr,
            clip: self.gan_clip,
            weight_clip: self.weight_clip,
        }
    }

    /// Whether the networks are the convolutional image ones.
    pub(super) fn conv(&self) -> bool {
        !(self.conv_encoder.is_empty()
            && self.conv_decoder.is_empty()
            && self.conv_critic.is_empty())
    }

    /// `adult-paper` (the paper's ADULT setup: AE d→(d+c)/2→15, Adam (lr 0.001, not the
    /// paper's 0.005 — see below), 20,000 steps
    /// of batch 64; generator 64→64→64→15 with residual layer-norm blocks; critic
    /// d→2d/3→d/3→1, RMSProp 0.005, batch 128, 15 critic steps per generator step, 225,000
    /// critic steps, the WGAN loss with weight clipping), `mimic-paper` (binary
    /// high-dimensional: one tanh layer to 128), and our settings: `quick` (under a minute
    /// on two cores), `adult` (longer), `mnist` (images with their label, code width 64),
    /// `mnist-conv` (convolutional autoencoder and critic around a class-conditional
    /// latent generator) and `tiny` (seconds, for tests).
    pub(super) fn paper() -> Self {
        Self {
            common: Common::private(),
            code_dim: 15,
            tanh_encoder: false,
            single_layer_ae: false,
            ae_batch: 64,
            ae_steps: 20_000,
            // The paper's Adam lr 0.005 diverges under DP noise on ADULT (measured: the
            // reconstruction loss falls until ~6k steps, then climbs past its start);
            // 0.001 keeps improving through all 20k steps.
            ae_lr: 0.001,
            ae_clip: 0.1,
            latent_dim: 64,
            gan_batch: 128,
            critic_steps: 225_000,
            n_critic: 15,
            gan_lr: 0.005,
            gan_clip: 0.022,
            weight_clip: 0.01,
            gan_loss: GanLoss::Wasserstein,
            phase1_share: 0.5,
            tau: 0.2,
            label: String::new(),
            conv_encoder: Vec::new(),
            conv_decoder: Vec::new(),
            conv_critic: Vec::new(),
            code_critic: false,
        }
    }

    // Our settings: the paper's networks with the logistic loss, a large batch and one
    // critic step per generator step (see `GanLoss` for why).
    pub(super) fn tuned() -> Self {
        Self {
            ae_steps: 2_000,
            gan_loss: GanLoss::Logistic,
            gan_batch: 512,
            critic_steps: 2_000,
            n_critic: 1,
            gan_lr: 0.002,
            gan_clip: 1.0,
            ..Self::paper()
        }
    }

    pub(super) fn mimic_paper() -> Self {
        Self {
            code_dim: 128,
            tanh_encoder: true,
            single_layer_ae: true,
            ae_batch: 100,
            ae_steps: 30_000,
            ae_lr: 1e-3,
            critic_steps: 100_000,
            n_critic: 10,
            ..Self::paper()
        }
    }

    pub(super) fn adult() -> Self {
        Self {
            ae_steps: 4_000,
            critic_steps: 3_000,
            gan_batch: 1024,
            gan_lr: 0.001,
            ..Self::tuned()
        }
    }

    pub(super) fn mnist() -> Self {
        Self {
            code_dim: 64,
            ae_batch: 256,
            ae_steps: 1_500,
            ae_clip: 1.0,
            critic_steps: 1_500,
            gan_lr: 0.001,
            ..Self::tuned()
        }
    }

    // The conditional DCGAN's networks around a code: the autoencoder is a
    // convolutional encoder (label maps, 4×4 stride-2 convolutions to 32 and 64
    // channels, a linear layer to the code) and a transposed-convolution decoder
    // (code → 64 maps of 7×7 → 32 of 14×14 → the image); the latent generator is
    // given the class, and the critic reads codes ⊕ class (see the module doc).
    // Codes in (−1, 1) (tanh) on both sides of the GAN. Large batches, one
    // critic step per generator step, as DP-GAN's.
    pub(super) fn mnist_conv() -> Self {
        Self {
            code_dim: 64,
            tanh_encoder: true,
            code_critic: true,
            ae_batch: 256,
            ae_steps: 1_000,
            ae_lr: 0.001,
            ae_clip: 1.0,
            gan_batch: 256,
            critic_steps: 3_000,
            gan_lr: 0.0007,
            label: "label".into(),
            conv_encoder: vec![32, 64],
            conv_decoder: vec![64, 32],
            conv_critic: vec![32, 64],
            ..Self::tuned()
        }
    }

    pub(super) fn tiny() -> Self {
        Self {
            ae_steps: 200,
            critic_steps: 300,
            gan_batch: 128,
            ..Self::tuned()
        }
    }
}

/// Every preset, the default first.
pub(super) const PRESETS: [PresetOf<DpAutoGanConfig>; 7] = [
    PresetOf {
        name: "quick",
        doc: "the paper's networks with a logistic loss and large batches; about a minute on two cores",
        settings: DpAutoGanConfig::tuned,
    },
    PresetOf {
        name: "tiny",
        doc: "seconds: for tests and smoke checks",
        settings: DpAutoGanConfig::tiny,
    },
    PresetOf {
        name: "adult",
        doc: "longer than quick (4,000 autoencoder and 3,000 critic steps, batch 1,024)",
        settings: DpAutoGanConfig::adult,
    },
    PresetOf {
        name: "mnist",
        doc: "28×28 digits with their label: code width 64",
        settings: DpAutoGanConfig::mnist,
    },
    PresetOf {
        name: "mnist-conv",
        doc: "28×28 digits: convolutional encoder and decoder, a class-conditional latent generator and a critic on codes ⊕ class (MNIST at ε = 10: 77.5 % CNN-judge accuracy on real test digits)",
        settings: DpAutoGanConfig::mnist_conv,
    },
    PresetOf {
        name: "adult-paper",
        doc: "the paper's ADULT setup (WGAN, 225,000 critic steps): hours",
        settings: DpAutoGanConfig::paper,
    },
    PresetOf {
        name: "mimic-paper",
        doc: "the paper's MIMIC setup for binary high-dimensional data: hours",
        settings: DpAutoGanConfig::mimic_paper,
    },
];

impl MethodConfig for DpAutoGanConfig {
    const PRESETS: &'static [PresetOf<Self>] = &PRESETS;

    fn common(&mut self) -> &mut Common {
        &mut self.common
    }

    fn into_method(self) -> Box<dyn Synthesizer + Send> {
        Box::new(DpAutoGan::new(self))
    }
}

/// The registry entry of DP-auto-GAN.
pub const INFO: MethodInfo = MethodInfo {
    id: "dp-auto-gan",
    title: "DP-auto-GAN",
    sentence: "Learns to compress a row into a short code, then learns to invent codes; both steps see the data only through noisy, clipped gradients. Best for mixed tables.",
    pick_when: "Better when a table has many continuous columns and you can train for tens of minutes (preset adult); its quick preset is weak.",
    paper: "Tantipongpipat et al., Differentially Private Synthetic Mixed-Type Data Generation (2021)",
    url: "https://arxiv.org/abs/1912.03250",
    kinds: &[DataKind::Table, DataKind::Images],
    private: true,
    critic: true,
    streams: false,
    presets: &listed(&PRESETS),
    settings: settings::<DpAutoGanConfig>,
    build: build::<DpAutoGanConfig>,
};
