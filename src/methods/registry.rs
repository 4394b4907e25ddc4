//! Brief overview: every method, listed once.
//!
//! The CLI's `--method`/`--preset` validation and help, `dpsynth methods`, the job and the
//! window's method cards all read this list; nothing else names a method. Adding a method
//! is one new file (its [`MethodInfo`] constant beside its code) and one line in
//! [`METHODS`].

use serde::Serialize;

use super::{MethodError, Result, Synthesizer};

/// What a method can be trained on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum DataKind {
    /// A CSV table under a schema.
    Table,
    /// Small images with their label (MNIST-style IDX or pixel CSV).
    Images,
}

/// A named, documented settings value of a method.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct Preset {
    pub name: &'static str,
    /// One sentence: what it is for and roughly how long it takes.
    pub doc: &'static str,
}

/// A method as the product presents and builds it.
#[derive(Clone, Copy, Serialize)]
pub struct MethodInfo {
    /// The stable CLI name (`--method`).
    pub id: &'static str,
    pub title: &'static str,
    /// One plain sentence for a person who does not read papers.
    pub sentence: &'static str,
    /// One line: when this method is the better choice than the recommended one (the cards
    /// and `dpsynth methods` show it, so a newcomer knows when to leave the default).
    pub pick_when: &'static str,
    /// Where the idea comes from.
    pub paper: &'static str,
    pub url: &'static str,
    pub kinds: &'static [DataKind],
    /// `false` for the non-private reference (ε = ∞ whatever the user typed).
    pub private: bool,
    /// Trains a critic whose snapshots post-GAN boosting can combine (`train --boost`).
    pub critic: bool,
    /// The first is the default.
    pub presets: &'static [Preset],
    /// A preset's settings as a JSON object (what `overrides` may name).
    #[serde(skip)]
    pub settings: fn(preset: &str) -> Result<serde_json::Value>,
    /// The method under a preset with `overrides` applied; `private = false` trains the
    /// same networks without noise or accounting.
    #[serde(skip)]
    pub build: fn(
        preset: &str,
        private: bool,
        overrides: &serde_json::Map<String, serde_json::Value>,
    ) -> Result<Box<dyn Synthesizer + Send>>,
}

impl std::fmt::Debug for MethodInfo {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MethodInfo").field("id", &self.id).finish()
    }
}

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

/// The method called `id`, or an error that lists the ones there are.
/// The method and preset a newcomer should start from, per kind of data (the window
/// selects it until the user picks another, and marks its card).
///
/// Tables: AIM. On four unseen real tables it lands within 0.00–0.03 AUROC of the
/// real-data ceiling at ε = 1, and on Adult at ε = 1 its RF AUROC is 0.890 against 0.901
/// on real rows, while the GANs' `quick` presets score 0.38–0.72 on the same tables.
/// Images: DP-MERF's convolutional generator, the best image model at ε = 1 among the
/// presets that train in minutes (CNN judge 86.5 % on MNIST).
pub fn recommended(kind: DataKind) -> (&'static str, &'static str) {
    match kind {
        DataKind::Table => ("aim", "quick"),
        DataKind::Images => ("dp-merf", "mnist-conv"),
    }
}

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
    /// Whether a run at `epsilon` is private (the reference method never is).
    pub fn is_private_at(&self, epsilon: f64) -> bool {
        self.private && epsilon.is_finite()
    }

    pub fn accepts(&self, kind: DataKind) -> bool {
        self.kinds.contains(&kind)
    }

    pub fn default_preset(&self) -> &'static str {
        self.presets.first().map_or("quick", |p| p.name)
    }

    pub fn has_preset(&self, name: &str) -> bool {
        self.presets.iter().any(|p| p.name == name)
    }

    /// The error for a preset this method does not have, listing those it has.
    pub fn unknown_preset(&self, name: &str) -> MethodError {
        let names: Vec<&str> = self.presets.iter().map(|p| p.name).collect();
        MethodError::Usage(format!(
            "unknown preset '{name}' for {}; use one of {}",
            self.id,
            names.join(", ")
        ))
    }

    /// A preset's settings by name, as overrides name them: without `private` and
    /// `preset`, which the method's name and the preset picker set.
    pub fn preset_settings(
        &self,
        preset: &str,
    ) -> Result<serde_json::Map<String, serde_json::Value>> {
        if !self.has_preset(preset) {
            return Err(self.unknown_preset(preset));
        }
        match (self.settings)(preset)? {
            serde_json::Value::Object(mut o) => {
                o.remove("private");
                o.remove("preset");
                Ok(o)
            }
            _ => Err(MethodError::Plan("settings are not an object".into())),
        }
    }

    /// The method, ready to plan and train.
    pub fn instantiate(
        &self,
        preset: &str,
        epsilon: f64,
        overrides: &serde_json::Map<String, serde_json::Value>,
    ) -> Result<Box<dyn Synthesizer + Send>> {
        if !self.has_preset(preset) {
            return Err(self.unknown_preset(preset));
        }
        (self.build)(preset, self.is_private_at(epsilon), overrides)
    }

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

/// A method's settings type: named presets, a `private` switch, and the method it builds.
/// [`settings`] and [`build`] turn any such type into a registry entry's two functions.
pub trait MethodConfig: Serialize + serde::de::DeserializeOwned + Sized {
    /// The settings of the preset called `name`.
    fn preset(name: &str) -> Result<Self>;
    fn set_private(&mut self, private: bool);
    /// The method these settings describe.
    fn into_method(self) -> Box<dyn Synthesizer + Send>;
}

/// A preset's settings as JSON, for [`MethodInfo::settings`].
pub fn settings<C: MethodConfig>(preset: &str) -> Result<serde_json::Value> {
    serde_json::to_value(C::preset(preset)?).map_err(|e| MethodError::Plan(e.to_string()))
}

/// A preset with overrides applied, built into its method, for [`MethodInfo::build`].
pub fn build<C: MethodConfig>(
    preset: &str,
    private: bool,
    overrides: &serde_json::Map<String, serde_json::Value>,
) -> Result<Box<dyn Synthesizer + Send>> {
    let mut c = with_overrides(C::preset(preset)?, overrides)?;
    c.set_private(private);
    Ok(c.into_method())
}

/// Applies `overrides` to a settings value by field name; unknown names and values of the
/// wrong type are errors that say which.
pub fn with_overrides<T>(
    settings: T,
    overrides: &serde_json::Map<String, serde_json::Value>,
) -> Result<T>
where
    T: Serialize + serde::de::DeserializeOwned,
{
    if overrides.is_empty() {
        return Ok(settings);
    }
    let bad = |m: String| MethodError::Usage(m);
    let mut v = serde_json::to_value(&settings).map_err(|e| bad(e.to_string()))?;
    let Some(obj) = v.as_object_mut() else {
        return Err(bad("settings are not an object".into()));
    };
    for (k, val) in overrides {
        if !obj.contains_key(k) || k == "private" || k == "preset" {
            let mut names: Vec<&str> = obj
                .keys()
                .map(|s| s.as_str())
                .filter(|k| *k != "private" && *k != "preset")
                .collect();
            names.sort();
            return Err(bad(format!(
                "unknown setting '{k}'; this method's settings are: {}",
                names.join(", ")
            )));
        }
        obj.insert(k.clone(), val.clone());
    }
    serde_json::from_value(v).map_err(|e| bad(format!("bad setting value: {e}")))
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
