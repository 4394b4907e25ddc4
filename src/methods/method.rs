//! The shape every method has: what the product shows of it ([`MethodInfo`]), its named
//! presets, and its settings type ([`MethodConfig`]) with the two functions a registry
//! entry builds from it. Apart from [`super::registry`], which lists the methods, so that
//! a method's file depends on this shape and never on the list it is in.

use serde::Serialize;

use super::{MethodError, Result, Synthesizer};

pub use crate::util::presets::{DEFAULT_PRESET, DIGITS_PRESET, SMOKE_PRESET};

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
    /// Needs only counts of the rows, so it can read a file in parts (`train --stream`,
    /// [`crate::data::stream`]): MST and AIM.
    pub streams: bool,
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

impl MethodInfo {
    /// Whether a run at `epsilon` is private (the reference method never is).
    pub fn is_private_at(&self, epsilon: f64) -> bool {
        self.private && epsilon.is_finite()
    }

    pub fn accepts(&self, kind: DataKind) -> bool {
        self.kinds.contains(&kind)
    }

    pub fn default_preset(&self) -> &'static str {
        self.presets.first().map_or(DEFAULT_PRESET, |p| p.name)
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
                for f in Common::FIELDS {
                    o.remove(f);
                }
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
}

/// The two settings every method has. The registry sets them (the preset picked, and
/// whether the run is private), never the user's overrides; a config carries them
/// flattened, so its JSON keeps the plain `preset` and `private` keys.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Common {
    /// The preset these settings started from (shown in statements and model headers).
    pub preset: String,
    /// Measure with noise and account for it (false: the same training without noise, for
    /// the non-private reference and for public data).
    pub private: bool,
}

impl Common {
    /// The JSON keys of these fields, which overrides may not name.
    pub const FIELDS: [&'static str; 2] = ["preset", "private"];

    /// What a preset's settings function writes: the registry fills in the name.
    pub const fn private() -> Self {
        Self {
            preset: String::new(),
            private: true,
        }
    }
}

/// A preset as its method's file writes it, once: the name, the sentence the product shows,
/// and the settings.
pub struct PresetOf<C> {
    pub name: &'static str,
    /// One sentence: what it is for and roughly how long it takes.
    pub doc: &'static str,
    pub settings: fn() -> C,
}

/// The presets as the product lists them ([`MethodInfo::presets`]), from a method's
/// [`MethodConfig::PRESETS`] table; `const` so that a method's `INFO` holds the list.
pub const fn listed<C, const N: usize>(presets: &[PresetOf<C>; N]) -> [Preset; N] {
    let mut out = [Preset { name: "", doc: "" }; N];
    let mut i = 0;
    while i < N {
        out[i] = Preset {
            name: presets[i].name,
            doc: presets[i].doc,
        };
        i += 1;
    }
    out
}

/// A method's settings type: its presets, the [`Common`] settings, and the method it
/// builds. [`settings`] and [`build`] turn any such type into a registry entry's two
/// functions.
pub trait MethodConfig: Serialize + serde::de::DeserializeOwned + Sized + 'static {
    /// Every preset of the method, the default first. Adding a preset is adding a line
    /// here: the registry, the CLI's `--preset` and the window's picker read this table.
    const PRESETS: &'static [PresetOf<Self>];

    fn common(&mut self) -> &mut Common;

    /// The method these settings describe.
    fn into_method(self) -> Box<dyn Synthesizer + Send>;

    /// The settings of the preset called `name`.
    fn preset(name: &str) -> Result<Self> {
        let Some(p) = Self::PRESETS.iter().find(|p| p.name == name) else {
            let names: Vec<&str> = Self::PRESETS.iter().map(|p| p.name).collect();
            return Err(MethodError::Usage(format!(
                "unknown preset '{name}'; use one of {}",
                names.join(", ")
            )));
        };
        let mut c = (p.settings)();
        c.common().preset = name.to_string();
        Ok(c)
    }
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
    c.common().private = private;
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
        if !obj.contains_key(k) || Common::FIELDS.contains(&k.as_str()) {
            let mut names: Vec<&str> = obj
                .keys()
                .map(|s| s.as_str())
                .filter(|k| !Common::FIELDS.contains(k))
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
