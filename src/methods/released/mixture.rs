//! A boosted model's mixture: which generators' snapshots sampling draws from, with
//! which weights (post-processing of the boosting's private selection).

use serde::{Deserialize, Serialize};

/// What sampling draws from: a boosted model's mixture, or a labelled model's checked
/// generator.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Draw {
    /// The last generator, as without boosting.
    Generator,
    /// The boosted mixture: the weighted sample set, by its averaged weights φ̄.
    #[default]
    Boosted,
    /// The boosted mixture after discriminator rejection sampling with the mixture
    /// discriminator (on a finite set, rejection sampling is a re-weighting).
    BoostedDrs,
    /// A labelled image model's generator, each row kept only when its labeller reads the
    /// image as the row's class (`crate::methods::labeller`).
    Labelled,
}

impl Draw {
    pub fn name(self) -> &'static str {
        match self {
            Draw::Generator => "generator",
            Draw::Boosted => "boosted",
            Draw::BoostedDrs => "boosted-drs",
            Draw::Labelled => "labelled",
        }
    }

    /// Parses the CLI's names.
    pub fn parse(s: &str) -> std::result::Result<Self, String> {
        match s {
            "generator" | "last" => Ok(Draw::Generator),
            "boosted" | "pgb" => Ok(Draw::Boosted),
            "boosted-drs" | "drs" | "pgb+drs" => Ok(Draw::BoostedDrs),
            "labelled" | "labeled" | "checked" => Ok(Draw::Labelled),
            _ => Err(format!(
                "unknown draw '{s}'; use generator, boosted, boosted-drs or labelled"
            )),
        }
    }
}

/// How a boosted model's mixture was computed (the header's record of it).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Mixture {
    /// Rounds T of the post-GAN game.
    pub rounds: u64,
    /// Per-round ε₀ of the exponential mechanism; `None`: the non-private best response.
    pub epsilon0: Option<f64>,
    /// The training steps of the generators whose rows make up the set, oldest first.
    pub generator_steps: Vec<u64>,
    pub samples_per_generator: usize,
    /// The multiplicative-weights learning rate η.
    pub eta: f64,
    /// How often each generator's discriminator was selected (the mixture discriminator's
    /// weights), in the order of `generator_steps`.
    pub picks: Vec<u64>,
    /// The effective number of rows (1 / Σ w²) of the boosted weights and of the weights
    /// after rejection sampling: a mixture that leans on a few hundred rows repeats them.
    #[serde(default)]
    pub effective_rows: (f64, f64),
    /// DRS's shift γ as a percentile of the acceptance scores.
    pub drs_percentile: f64,
    /// What sampling draws unless told otherwise.
    pub draw: Draw,
}

/// A boosted model's weighted sample set: encoded rows (`rows × width`, concrete: one-hot
/// categories, 0/1 binaries) with the two weightings.
#[derive(Debug, Clone, PartialEq)]
pub struct MixtureSet {
    pub rows: Vec<f32>,
    pub weights: Vec<f64>,
    pub drs_weights: Vec<f64>,
}

impl MixtureSet {
    /// Whether the set is usable with an encoding of `width`: shapes agree, and each
    /// weighting is finite, non-negative and not all zero.
    pub(super) fn check(&self, width: usize) -> std::result::Result<(), String> {
        let n = self.weights.len();
        if n == 0 || self.drs_weights.len() != n || width == 0 || self.rows.len() != n * width {
            return Err(format!(
                "the mixture holds {} values and {}/{} weights, which do not fit rows of width {width}",
                self.rows.len(),
                n,
                self.drs_weights.len()
            ));
        }
        for (name, w) in [
            ("weights", &self.weights),
            ("DRS weights", &self.drs_weights),
        ] {
            if w.iter().any(|x| !x.is_finite() || *x < 0.0) || w.iter().sum::<f64>() <= 0.0 {
                return Err(format!("the mixture's {name} are not a distribution"));
            }
        }
        if self.rows.iter().any(|x| !x.is_finite()) {
            return Err("the mixture's rows hold values that are not finite".into());
        }
        Ok(())
    }

    /// `m` row indices drawn with replacement by `weights`.
    pub(super) fn draw(weights: &[f64], m: usize, rng: &mut impl rand::Rng) -> Vec<usize> {
        let mut cum = Vec::with_capacity(weights.len());
        let mut t = 0.0;
        for w in weights {
            t += w;
            cum.push(t);
        }
        (0..m)
            .map(|_| {
                let u = rng.random::<f64>() * t;
                cum.partition_point(|c| *c <= u).min(weights.len() - 1)
            })
            .collect()
    }
}
