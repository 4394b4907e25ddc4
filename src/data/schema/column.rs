//! One column as a schema describes it: its kind, its domain (bounds or categories), where
//! that domain came from (the user, the rows, a private estimate, a codebook), and the
//! checks a column's description must pass.

use serde::{Deserialize, Serialize};

use crate::data::error::DataError;
use crate::data::table::Values;

/// Most categories a categorical column may have.
pub const MAX_CATEGORIES: usize = 5_000;
/// Most decimals a continuous column may keep (past this an f64 holds no more).
pub const MAX_DECIMALS: u32 = 12;
/// Most point masses a continuous column may have.
pub const MAX_POINT_MASSES: usize = 32;
/// The tag written into every schema file.
pub const SCHEMA_FORMAT: &str = "dpsynth-schema/1";

/// What a column is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Kind {
    /// Exactly two values; encoded as one 0/1 column.
    Binary,
    /// A fixed list of categories; encoded one-hot.
    Categorical,
    /// A number within public bounds; encoded min-max scaled into [0, 1].
    Continuous,
    /// Not synthesized (identifiers, free text).
    Ignored,
}

impl Kind {
    pub const ALL: [Kind; 4] = [
        Kind::Binary,
        Kind::Categorical,
        Kind::Continuous,
        Kind::Ignored,
    ];

    pub fn label(self) -> &'static str {
        match self {
            Kind::Binary => "binary",
            Kind::Categorical => "categorical",
            Kind::Continuous => "continuous",
            Kind::Ignored => "ignored",
        }
    }
}

/// The public set of values a column can take.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum Domain {
    /// Values of a binary (two) or categorical column, as text.
    Categories(Vec<String>),
    /// Inclusive bounds of a continuous column.
    Bounds { lower: f64, upper: f64 },
}

/// Where a domain came from; decides whether the privacy guarantee covers it.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum Provenance {
    /// Entered or confirmed by the user as public knowledge. Covered by the guarantee.
    #[default]
    UserProvided,
    /// Estimated from the data by a DP mechanism, charged to the run that did it. `epsilon`
    /// and `delta` are the figure of the whole domain-estimation step (every estimated
    /// column together: their noise is calibrated jointly).
    DpEstimated {
        epsilon: f64,
        #[serde(default)]
        delta: f64,
        #[serde(default)]
        mechanism: EstimateMechanism,
    },
    /// Read off the private data without noise: NOT covered by the guarantee.
    FromData,
    /// To be estimated privately when a private run trains (charged then); until then the
    /// domain shown is the data's, a non-private hint that is never released.
    ToEstimate,
}

/// How a DP-estimated domain was obtained.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum EstimateMechanism {
    /// Not recorded (schemas written before the mechanism was).
    #[default]
    Unspecified,
    /// Bounds, integer flag and missingness from a Gaussian histogram on a public grid.
    GaussianGridHistogram,
    /// Categories from a thresholded Gaussian histogram of the data's levels.
    ThresholdedGaussianHistogram,
}

impl Provenance {
    pub fn is_private(self) -> bool {
        !matches!(self, Provenance::FromData | Provenance::ToEstimate)
    }

    /// A short badge for tables and the window.
    pub fn badge(self) -> String {
        match self {
            Provenance::UserProvided => "user-provided".to_string(),
            Provenance::DpEstimated { epsilon, .. } => {
                format!("DP-estimated (ε={})", crate::util::fmt::number(epsilon))
            }
            Provenance::FromData => "FROM DATA: not private".to_string(),
            Provenance::ToEstimate => "to estimate privately".to_string(),
        }
    }
}

pub(super) fn is_false(b: &bool) -> bool {
    !*b
}

/// One column's kind, domain and provenance.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ColumnSpec {
    pub name: String,
    pub kind: Kind,
    /// Continuous values are whole numbers (decoded values are rounded).
    #[serde(default, skip_serializing_if = "is_false")]
    pub integer: bool,
    /// Continuous values are written with at most this many decimals (a column of money
    /// written to the cent: 2), a public fact like `integer`: decoded values are rounded to
    /// it, so a synthetic 12.3456789 never sits beside real 12.35.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub decimals: Option<u32>,
    /// The column may be missing; encoded as its own category or an indicator column.
    #[serde(default, skip_serializing_if = "is_false")]
    pub missing: bool,
    /// A continuous column of dates/times written in this strftime format (e.g.
    /// `%Y-%m-%d`): its bounds are days since 1970-01-01 and synthetic values are written
    /// back in the format ([`crate::data::times`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub time_format: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub domain: Option<Domain>,
    /// Values of a continuous column that many rows hold exactly (0 gains, a top code such
    /// as 99999, a "not applicable" code). Each is its own cell of every method's encoding
    /// ([`crate::data::encode`]: a one-hot slot beside the scaled value) and comes back
    /// exactly, where a bin decoded uniformly would turn the 0 most people have into 38,
    /// 991, 2,174 …. They are part of the domain: public when the user names them (the
    /// schema, the window's column editor), estimated privately with the domain otherwise
    /// (the column's `provenance` covers them), never read off the rows.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub point_masses: Vec<f64>,
    /// The point masses came from a private estimate with the domain
    /// ([`crate::privacy::point_masses`]), not from the user: the statement says so.
    #[serde(default, skip_serializing_if = "is_false")]
    pub point_masses_estimated: bool,
    /// The user says the column holds no value many rows share exactly (a public fact,
    /// like its bounds): a private run then spends nothing looking for one. Without it, a
    /// number column whose bounds are public and whose schema names no point masses has
    /// them found privately ([`crate::data::estimate`]), so typed bounds keep the zeros a
    /// survey's hours hold.
    #[serde(default, skip_serializing_if = "is_false")]
    pub no_point_masses: bool,
    /// The kind (and a date column's format) was guessed from the private rows by
    /// [`crate::data::infer`], not given by the user. A guess is a deterministic function of the
    /// rows — one added record turns a 0–9 column continuous or an identifier categorical —
    /// so a released header that carries it is not covered by the guarantee, and the
    /// statement names the column (`non_private_kinds`). The user clears it by confirming
    /// the kinds as public facts (the window's "Kinds are public", `train --public-kinds`,
    /// or deleting the key from a schema file); a hand-written schema never has it.
    #[serde(default, skip_serializing_if = "is_false")]
    pub kind_from_data: bool,
    /// The share of blank cells a release keeps, from a private domain estimate (a DP
    /// output). An estimated column always encodes blanks, because rows holding a value
    /// too rare to release are encoded as blank; a model then generates blanks where the
    /// real column may have none. Decoding fills generated blanks beyond this share with
    /// the column's other synthetic values ([`crate::data::encode`]), so a column the estimate
    /// found complete (share 0) gets no invented blanks. `None`: blanks are kept as drawn.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub blank_share: Option<f64>,
    /// The category list is the file's own codebook (SPSS/Stata value labels, every label
    /// whether a row uses it or not), not the rows' levels. A label set may still have been
    /// written from the rows, so the domain stays `FromData` until the user says the
    /// codebook is public ([`Schema::confirm_codebook`]: the window's "The file's codebook
    /// is public", `train --public-codebook`).
    #[serde(default, skip_serializing_if = "is_false")]
    pub codebook: bool,
    /// A hand-written domain is the user's own, hence the default.
    #[serde(default)]
    pub provenance: Provenance,
}

impl ColumnSpec {
    /// The domain just became the user's (typed in the window): the flags a guess read off
    /// the rows take public defaults, so no fact of the rows rides along with a domain the
    /// statement calls public. A codebook's column has no blanks unless it says so, and
    /// whole bounds say nothing of the values between them (a tax rate in 0–1): the column
    /// is neither blank-able nor whole until the user says it is (the editor's "may be
    /// blank" box and decimals choice). One added row with a fraction or a blank would
    /// otherwise flip them.
    pub fn made_public(&mut self) {
        self.missing = false;
        self.blank_share = None;
        self.integer = false;
        self.decimals = None;
    }

    /// The column's precision as the editor offers it: `Some(0)` for whole numbers,
    /// `Some(d)` for at most `d` decimals, `None` for any.
    pub fn precision(&self) -> Option<u32> {
        if self.integer { Some(0) } else { self.decimals }
    }

    /// Sets [`Self::precision`].
    pub fn set_precision(&mut self, p: Option<u32>) {
        self.integer = p == Some(0);
        self.decimals = p.filter(|d| *d > 0);
    }

    /// The category list of a binary or categorical column.
    pub fn categories(&self) -> Option<&[String]> {
        match &self.domain {
            Some(Domain::Categories(c)) => Some(c),
            _ => None,
        }
    }

    pub fn bounds(&self) -> Option<(f64, f64)> {
        match self.domain {
            Some(Domain::Bounds { lower, upper }) => Some((lower, upper)),
            _ => None,
        }
    }

    /// The kind in words: "date/time" for a continuous column with a time format.
    pub fn kind_label(&self) -> &'static str {
        if self.time_format.is_some() && self.kind == Kind::Continuous {
            "date/time"
        } else {
            self.kind.label()
        }
    }

    /// A bound or value of this column as a person reads it: a date in the column's
    /// format, else the number.
    pub fn show_value(&self, x: f64) -> String {
        match &self.time_format {
            Some(f) => crate::data::times::format(x, f),
            None => crate::util::fmt::number(x),
        }
    }

    /// The column's cells as numbers: numbers as they are, text read as dates with the
    /// time format (or as numbers without one). An unreadable cell is an error naming it.
    pub fn numbers(&self, col: &crate::data::table::Column) -> Result<Vec<Option<f64>>, DataError> {
        match &col.values {
            Values::Number(v) => Ok(v.clone()),
            Values::Text(t) => t
                .iter()
                .enumerate()
                .map(|(r, c)| match c {
                    None => Ok(None),
                    Some(s) => {
                        let x = match &self.time_format {
                            Some(f) => crate::data::times::parse(s, f),
                            None => crate::util::fmt::parse_number(s),
                        };
                        x.map(Some).ok_or_else(|| {
                            DataError::column(
                                &self.name,
                                match &self.time_format {
                                    Some(f) => format!(
                                        "row {} holds '{s}', not a date/time in the format '{f}'; fix the cell or the column's format",
                                        r + 1
                                    ),
                                    None => format!(
                                        "is continuous in the schema but row {} holds '{s}', not a number",
                                        r + 1
                                    ),
                                },
                            )
                        })
                    }
                })
                .collect(),
        }
    }

    /// The domain in a few words, e.g. `[17, 90]` or `8 levels: Private, …`.
    pub fn domain_summary(&self, max_chars: usize) -> String {
        match &self.domain {
            None => "-".to_string(),
            Some(Domain::Bounds { lower, upper }) => {
                format!("[{}, {}]", self.show_value(*lower), self.show_value(*upper))
            }
            Some(Domain::Categories(c)) => {
                let mut s = if self.kind == Kind::Binary {
                    c.join(" / ")
                } else {
                    format!("{} levels: {}", c.len(), c.join(", "))
                };
                if s.chars().count() > max_chars {
                    s = s
                        .chars()
                        .take(max_chars.saturating_sub(1))
                        .collect::<String>()
                        + "…";
                }
                s
            }
        }
    }

    /// The slot of `x` among the point masses, when it is one of them. Values are compared
    /// at a relative tolerance of 1e-9 so that a value read back from text or from an f32
    /// scaling still finds its slot.
    pub fn point_mass_of(&self, x: f64) -> Option<usize> {
        self.point_masses
            .iter()
            .position(|p| (p - x).abs() <= 1e-9 * p.abs().max(1.0))
    }

    /// Decimals apply to continuous columns, at most [`MAX_DECIMALS`].
    fn check_decimals(&self) -> Result<(), DataError> {
        let Some(d) = self.decimals else {
            return Ok(());
        };
        let m = if self.kind != Kind::Continuous {
            format!(
                "'decimals' applies to continuous columns only, but the kind is {}",
                self.kind.label()
            )
        } else if d > MAX_DECIMALS {
            format!("'decimals' is {d}; at most {MAX_DECIMALS} are kept")
        } else {
            return Ok(());
        };
        Err(DataError::column(&self.name, m))
    }

    /// Point masses are finite, distinct, inside the bounds, and only on continuous columns.
    fn check_point_masses(&self) -> Result<(), DataError> {
        if self.point_masses.is_empty() {
            return Ok(());
        }
        let err = |m: String| Err(DataError::column(&self.name, m));
        if self.kind != Kind::Continuous {
            return err(format!(
                "'point_masses' apply to continuous columns only, but the kind is {}",
                self.kind.label()
            ));
        }
        if self.point_masses.len() > MAX_POINT_MASSES {
            return err(format!(
                "has {} point masses; at most {MAX_POINT_MASSES} are supported (a column with that many common values is better categorical)",
                self.point_masses.len()
            ));
        }
        for (i, p) in self.point_masses.iter().enumerate() {
            if !p.is_finite() {
                return err(format!("point mass {p} is not a finite number"));
            }
            if let Some((lo, hi)) = self.bounds() {
                if *p < lo || *p > hi {
                    return err(format!(
                        "point mass {} is outside the bounds [{}, {}]; widen the bounds or remove it",
                        self.show_value(*p),
                        self.show_value(lo),
                        self.show_value(hi)
                    ));
                }
            }
            if self.integer && p.fract() != 0.0 {
                return err(format!(
                    "point mass {p} is not a whole number, but the column is integer"
                ));
            }
            if self.point_masses[..i].iter().any(|q| q == p) {
                return err(format!("point mass {p} is listed twice"));
            }
        }
        Ok(())
    }

    /// Checks this column's spec on its own.
    pub fn validate(&self) -> Result<(), DataError> {
        let err = |m: String| Err(DataError::column(&self.name, m));
        if self.name.trim().is_empty() {
            return Err(DataError::Schema(
                "a column in the schema has an empty name".into(),
            ));
        }
        if self.integer && self.kind != Kind::Continuous {
            return err(format!(
                "'integer' applies to continuous columns only, but the kind is {}",
                self.kind.label()
            ));
        }
        if let Some(f) = &self.time_format {
            if self.kind != Kind::Continuous {
                return err(format!(
                    "'time_format' applies to continuous (date/time) columns only, but the kind is {}",
                    self.kind.label()
                ));
            }
            if let Err(m) = crate::data::times::check_format(f) {
                return err(m);
            }
        }
        self.check_point_masses()?;
        self.check_decimals()?;
        if let Provenance::DpEstimated { epsilon, .. } = self.provenance {
            if !(epsilon.is_finite() && epsilon > 0.0) {
                return err(format!(
                    "dp_estimated provenance needs a positive finite epsilon, got {epsilon}"
                ));
            }
        }
        match (self.kind, &self.domain) {
            (Kind::Ignored, None) => Ok(()),
            (Kind::Ignored, Some(_)) => err("is ignored but has a domain; remove the domain or change the kind".into()),
            (Kind::Binary | Kind::Categorical | Kind::Continuous, None) => {
                err(format!("a {} column needs a domain", self.kind.label()))
            }
            (Kind::Binary, Some(Domain::Categories(c))) => {
                if c.len() != 2 || c[0] == c[1] {
                    err(format!("a binary column needs exactly two different values, got {c:?}"))
                } else {
                    Ok(())
                }
            }
            (Kind::Categorical, Some(Domain::Categories(c))) => {
                if c.is_empty() {
                    return err("a categorical column needs at least one category".into());
                }
                if c.len() > MAX_CATEGORIES {
                    return err(format!(
                        "has {} categories; at most {MAX_CATEGORIES} are supported (mark it ignored, or group rare values)",
                        c.len()
                    ));
                }
                let mut seen = std::collections::HashSet::new();
                for v in c {
                    if !seen.insert(v) {
                        return err(format!("category '{v}' is listed twice"));
                    }
                }
                Ok(())
            }
            (Kind::Continuous, Some(Domain::Bounds { lower, upper })) => {
                if !(lower.is_finite() && upper.is_finite() && lower < upper) {
                    err(format!("bounds must be finite with lower < upper, got [{lower}, {upper}]"))
                } else {
                    Ok(())
                }
            }
            (Kind::Continuous, Some(Domain::Categories(_))) => {
                err("a continuous column needs bounds {\"bounds\": {\"lower\": …, \"upper\": …}}, not categories".into())
            }
            (Kind::Binary | Kind::Categorical, Some(Domain::Bounds { .. })) => err(format!(
                "a {} column needs {{\"categories\": [...]}}, not bounds",
                self.kind.label()
            )),
        }
    }
}
