//! Brief overview: every method, listed once.
//!
//! The CLI's `--method`/`--preset` validation and help, `dpsynth methods`, the job and the
//! window's method cards all read this list; nothing else names a method. Adding a method
//! is one new file (its [`MethodInfo`] constant beside its code) and one line in
//! [`METHODS`].

use super::{MethodError, Result, Synthesizer};

pub use super::method::{DataKind, MethodInfo, Preset};

/// Every method the product offers, in the order the window shows them.
pub static METHODS: &[&MethodInfo] = &[
    &super::dp_auto_gan::INFO,
    &super::dp_gan::INFO,
    &super::dp_merf::INFO,
    &super::pearl::INFO,
    &super::pate_gan::INFO,
    &super::mst::INFO,
    &super::aim::INFO,
    &super::dp_gan::NON_PRIVATE_INFO,
];

/// Methods the design promises that this version does not have yet (named in the error).
const PLANNED: &[&str] = &[];

/// The method and preset a newcomer should start from, per kind of data (the window
/// selects it until the user picks another, and marks its card).
///
/// Tables: AIM. On four unseen real tables it lands within 0.00–0.03 AUROC of the
/// real-data ceiling at ε = 1, and on Adult at ε = 1 its RF AUROC is 0.890 against 0.901
/// on real rows, while the GANs' `quick` presets score 0.38–0.72 on the same tables.
/// Images: DP-MERF's `mnist-local-long`, the best image model this product has (CNN judge
/// on all 60,000 MNIST digits 93.2–94.0 % at ε = 1 as drawn, 95.8–96.2 % exported with
/// `--jitter`, the window's default for digits), in 20–38 minutes on two cores;
/// `mnist-conv` stays the preset to try things in a few minutes (86.5 %).
pub fn recommended(kind: DataKind) -> (&'static str, &'static str) {
    match kind {
        DataKind::Table => ("aim", super::method::DEFAULT_PRESET),
        DataKind::Images => ("dp-merf", "mnist-local-long"),
    }
}

/// The method called `id`, or an error that lists the ones there are.
pub fn find(id: &str) -> Result<&'static MethodInfo> {
    if let Some(m) = METHODS.iter().find(|m| m.id == id) {
        return Ok(m);
    }
    let names = ids().join(", ");
    Err(if PLANNED.contains(&id) {
        MethodError::Unavailable(format!(
            "method '{id}' is not available yet in this version; use one of {names}"
        ))
    } else {
        MethodError::Usage(format!("unknown method '{id}'; use one of {names}"))
    })
}

/// The CLI names, in registry order.
pub fn ids() -> Vec<&'static str> {
    METHODS.iter().map(|m| m.id).collect()
}

impl MethodInfo {
    /// [`Self::instantiate`], followed by post-GAN boosting over the run's last snapshots
    /// when `boost` is given (refused for a method without a critic to boost with).
    pub fn instantiate_boosted(
        &self,
        preset: &str,
        epsilon: f64,
        overrides: &serde_json::Map<String, serde_json::Value>,
        boost: Option<&super::post_gan_boosting::BoostConfig>,
    ) -> Result<Box<dyn Synthesizer + Send>> {
        let method = self.instantiate(preset, epsilon, overrides)?;
        let Some(b) = boost else {
            return Ok(method);
        };
        if !self.critic {
            let able: Vec<&str> = METHODS.iter().filter(|m| m.critic).map(|m| m.id).collect();
            return Err(MethodError::Usage(format!(
                "{} trains no discriminator, so post-GAN boosting has nothing to combine; boost one of {}",
                self.id,
                able.join(", ")
            )));
        }
        b.validate().map_err(MethodError::Usage)?;
        if let Some(why) = method.boosting_refused() {
            return Err(MethodError::Usage(format!(
                "{} ({preset}) cannot be boosted: {why}",
                self.id
            )));
        }
        Ok(super::post_gan_boosting::boosted(
            method,
            b.clone(),
            self.is_private_at(epsilon),
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_unique_and_every_preset_builds() {
        let ids = ids();
        let mut sorted = ids.clone();
        sorted.sort();
        sorted.dedup();
        assert_eq!(sorted.len(), ids.len(), "duplicate method ids: {ids:?}");
        for m in METHODS {
            assert!(!m.presets.is_empty(), "{} has no preset", m.id);
            assert!(!m.kinds.is_empty(), "{} accepts no data", m.id);
            for p in m.presets {
                let s = m.preset_settings(p.name).unwrap();
                assert!(!s.is_empty(), "{} {} has no settings", m.id, p.name);
                let built = m.instantiate(p.name, 1.0, &Default::default()).unwrap();
                assert_eq!(built.id(), m.id);
            }
            assert!(
                m.instantiate("no-such-preset", 1.0, &Default::default())
                    .is_err()
            );
        }
    }

    /// The shared preset names hold for every method: the command line's default is each
    /// one's first, each has the smoke preset, each image method the digits preset.
    #[test]
    fn every_method_has_the_shared_presets() {
        use crate::util::presets::{DEFAULT_PRESET, DIGITS_PRESET, SMOKE_PRESET};
        for m in METHODS {
            assert_eq!(m.default_preset(), DEFAULT_PRESET, "{}", m.id);
            assert!(m.has_preset(SMOKE_PRESET), "{}", m.id);
            if m.accepts(DataKind::Images) {
                assert!(m.has_preset(DIGITS_PRESET), "{}", m.id);
            }
        }
    }

    #[test]
    fn unknown_and_planned_methods_are_told_apart() {
        assert!(find("mst").is_ok() && find("aim").is_ok());
        let e = find("nope").unwrap_err().to_string();
        assert!(
            e.contains("unknown method 'nope'") && e.contains("dp-gan"),
            "{e}"
        );
    }

    /// The pre-training warning: 1,000 rows at ε = 1 give DP-SGD a noise multiplier in
    /// the tens (the collapsed run), the whole of Adult does not.
    #[test]
    fn a_plan_whose_noise_drowns_the_data_is_flagged_before_training() {
        let budget = crate::privacy::Budget {
            epsilon: 1.0,
            delta: 1e-5,
        };
        let m = find("dp-gan")
            .unwrap()
            .instantiate("quick", 1.0, &Default::default())
            .unwrap();
        let w = m.plan(1_000, budget, &[]).unwrap().noise_warning();
        assert!(
            w.as_deref().is_some_and(|w| w.contains("Expect noise")),
            "{w:?}"
        );
        assert_eq!(m.plan(32_561, budget, &[]).unwrap().noise_warning(), None);
        // Methods without DP-SGD never trip it.
        let mst = find("mst")
            .unwrap()
            .instantiate("quick", 1.0, &Default::default())
            .unwrap();
        assert_eq!(mst.plan(1_000, budget, &[]).unwrap().noise_warning(), None);
    }

    #[test]
    fn overrides_name_real_settings_only() {
        let m = find("dp-gan").unwrap();
        let mut o = serde_json::Map::new();
        o.insert("lr".into(), serde_json::json!(0.5));
        assert!(m.instantiate("tiny", 1.0, &o).is_ok());
        o.insert("private".into(), serde_json::json!(false));
        let e = m.instantiate("tiny", 1.0, &o).err().unwrap().to_string();
        assert!(e.contains("unknown setting 'private'"), "{e}");
    }
}
