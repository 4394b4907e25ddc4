//! The runs the harness checks: every private method at its tiny preset, boosted, streamed,
//! engine-counted, with estimated domains, with the record count not given, with the
//! codebook's rules, PATE-GAN under each vote aggregator, and the image methods.

use std::path::PathBuf;

use dpsynth::job::{self, DomainPolicy, RunConfig};

use crate::common;
use crate::tables::N;

/// What an engine-counted config's data path starts with: the run's table is D (or a
/// neighbour) as an in-process Ballista engine holds it.
pub const ENGINE: &str = "ballista://local";

/// A run on the tiny Adult table.
fn adult(method: &str, preset: &str) -> RunConfig {
    let mut cfg = common::adult_run(method, preset, 2.0, PathBuf::new());
    cfg.overrides = common::few_steps(method, preset, 5);
    cfg.public_rows = Some(N);
    cfg
}

/// The tables' configs: (name, config).
pub fn tables() -> Vec<(String, RunConfig)> {
    let mut out = Vec::new();
    for m in job::methods().iter().filter(|m| m.private) {
        let preset = if m.has_preset("tiny") {
            "tiny"
        } else {
            m.default_preset()
        };
        out.push((m.id.to_string(), adult(m.id, preset)));
    }
    let mut boosted = adult("dp-gan", "tiny");
    boosted.boost = Some(job::BoostConfig {
        generators: 2,
        samples_per_generator: 50,
        rounds: 5,
        ..Default::default()
    });
    out.push(("dp-gan boosted".into(), boosted));
    // The streamed count source: the marginal methods reading the file in parts of 128
    // rows, so a neighbour's record shifts every later part.
    for method in ["mst", "aim"] {
        let mut cfg = adult(method, "tiny");
        cfg.stream = true;
        cfg.part_rows = Some(128);
        out.push((format!("{method}, streamed"), cfg));
    }
    // The engine count source (a build with `--features ballista`).
    if dpsynth::data::engine::AVAILABLE {
        for method in ["mst", "aim"] {
            let mut cfg = adult(method, "tiny");
            cfg.data = PathBuf::from(ENGINE);
            out.push((format!("{method}, counted by an engine"), cfg));
        }
    }
    for method in ["pearl", "aim"] {
        let mut cfg = adult(method, "tiny");
        cfg.schema = None;
        cfg.public_kinds = true;
        cfg.domains = DomainPolicy::Estimate { share: 0.2 };
        out.push((format!("{method}, domains estimated"), cfg));
    }
    // The default path: the record count is not a public fact, so the run releases its
    // own noisy count and plans with that.
    for method in ["mst", "dp-gan", "pate-gan"] {
        let mut cfg = adult(method, "tiny");
        cfg.public_rows = None;
        out.push((format!("{method}, record count not given"), cfg));
    }
    // The codebook's rules: structural zeros on the graphical models, a measured `->` map
    // on the neural ones.
    for method in ["mst", "aim", "dp-merf"] {
        let mut cfg = adult(method, "tiny");
        cfg.schema = None;
        cfg.inline_schema = Some(adult_with_rules());
        out.push((format!("{method}, with the codebook's rules"), cfg));
    }
    // PATE-GAN's other vote aggregators (its tiny preset uses one).
    for aggregator in ["laplace", "soft", "gaussian"] {
        let mut cfg = adult("pate-gan", "tiny");
        cfg.overrides
            .insert("aggregator".into(), serde_json::json!(aggregator));
        out.push((format!("pate-gan, {aggregator} votes"), cfg));
    }
    out
}

/// The Adult schema with the rules of `assets/adult/adult.rules`.
fn adult_with_rules() -> dpsynth::data::schema::Schema {
    let mut s =
        dpsynth::data::schema::Schema::load(&common::repo("assets/adult/adult.schema.json"))
            .unwrap();
    s.rules = std::fs::read_to_string(common::repo("assets/adult/adult.rules"))
        .unwrap()
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .map(str::to_string)
        .collect();
    s
}

/// The image methods on digits: the convolutional DP-SGD GAN, and DP-MERF with its
/// DP-SGD labeller.
pub fn images() -> Vec<(String, RunConfig)> {
    let digits = |method: &str, preset: &str| {
        let mut cfg = RunConfig {
            schema: None,
            preset: preset.into(),
            seed: Some(3),
            threads: Some(1),
            public_rows: Some(crate::tables::DIGITS),
            ..RunConfig::new(PathBuf::new(), method, 2.0, 1e-5)
        };
        cfg.overrides = common::few_steps(method, preset, 3);
        cfg
    };
    let conv = digits("dp-gan", "mnist-conv");
    let mut labelled = digits("dp-merf", "tiny");
    for (k, v) in [
        ("label", serde_json::json!("label")),
        ("labeller_share", serde_json::json!(0.5)),
        ("labeller_steps", serde_json::json!(3)),
        ("labeller_batch", serde_json::json!(32)),
    ] {
        labelled.overrides.insert(k.into(), v);
    }
    vec![
        ("dp-gan, convolutional, digits".into(), conv),
        ("dp-merf with a labeller, digits".into(), labelled),
    ]
}
