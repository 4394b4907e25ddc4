//! Column kinds and public domains, with where each domain came from.
//!
//! A domain (two values, a category list, or bounds) shapes the encoding, so if it is read
//! off the private data it leaks: a bound *is* someone's value. Each domain therefore
//! records its [`Provenance`]; `FromData` is allowed but the guarantee then excludes it,
//! and the CLI and window say so. The schema is a JSON file a person can edit: unknown
//! keys are errors, and contradictions are errors naming the column.

use serde::{Deserialize, Serialize};

use super::error::DataError;
use super::table::{Table, Values};

/// Most categories a categorical column may have.
pub const MAX_CATEGORIES: usize = 5_000;
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

fn is_false(b: &bool) -> bool {
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
    /// The column may be missing; encoded as its own category or an indicator column.
    #[serde(default, skip_serializing_if = "is_false")]
    pub missing: bool,
    /// A continuous column of dates/times written in this strftime format (e.g.
    /// `%Y-%m-%d`): its bounds are days since 1970-01-01 and synthetic values are written
    /// back in the format ([`super::times`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub time_format: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub domain: Option<Domain>,
    /// The kind (and a date column's format) was guessed from the private rows by
    /// [`super::infer`], not given by the user. A guess is a deterministic function of the
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
    /// the column's other synthetic values ([`super::encode`]), so a column the estimate
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
            Some(f) => super::times::format(x, f),
            None => crate::util::fmt::number(x),
        }
    }

    /// The column's cells as numbers: numbers as they are, text read as dates with the
    /// time format (or as numbers without one). An unreadable cell is an error naming it.
    pub fn numbers(&self, col: &super::table::Column) -> Result<Vec<Option<f64>>, DataError> {
        match &col.values {
            Values::Number(v) => Ok(v.clone()),
            Values::Text(t) => t
                .iter()
                .enumerate()
                .map(|(r, c)| match c {
                    None => Ok(None),
                    Some(s) => {
                        let x = match &self.time_format {
                            Some(f) => super::times::parse(s, f),
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
            if let Err(m) = super::times::check_format(f) {
                return err(m);
            }
        }
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

/// The kinds and domains of every column of a table.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Schema {
    #[serde(default = "format_tag")]
    pub format: String,
    pub columns: Vec<ColumnSpec>,
}

fn format_tag() -> String {
    SCHEMA_FORMAT.to_string()
}

impl Schema {
    pub fn new(columns: Vec<ColumnSpec>) -> Self {
        Self {
            format: format_tag(),
            columns,
        }
    }

    pub fn column(&self, name: &str) -> Option<&ColumnSpec> {
        self.columns.iter().find(|c| c.name == name)
    }

    /// Parses and validates a schema file's text; `name` appears in messages.
    pub fn from_json(text: &str, name: &str) -> Result<Self, DataError> {
        let s: Schema = serde_json::from_str(text).map_err(|e| {
            DataError::Schema(format!(
                "{name}: line {} column {}: {e}",
                e.line(),
                e.column()
            ))
        })?;
        if s.format != SCHEMA_FORMAT {
            return Err(DataError::Schema(format!(
                "{name}: format is '{}', expected '{SCHEMA_FORMAT}'",
                s.format
            )));
        }
        s.validate()
            .map_err(|e| DataError::Schema(format!("{name}: {e}")))?;
        Ok(s)
    }

    pub fn load(path: &std::path::Path) -> Result<Self, DataError> {
        let text = std::fs::read_to_string(path).map_err(|e| DataError::io(path, e))?;
        Self::from_json(&text, &path.display().to_string())
    }

    pub fn to_json(&self) -> String {
        // Serialising plain data with string keys cannot fail.
        serde_json::to_string_pretty(self).unwrap_or_default()
    }

    /// Writes the schema atomically.
    pub fn save(&self, path: &std::path::Path) -> Result<(), DataError> {
        crate::util::atomic::write_atomic(path, (self.to_json() + "\n").as_bytes())
            .map_err(|e| DataError::io(path, e))
    }

    /// Checks every column, and that names are unique and something is left to synthesize.
    pub fn validate(&self) -> Result<(), DataError> {
        let mut seen = std::collections::HashSet::new();
        for c in &self.columns {
            if !seen.insert(c.name.as_str()) {
                return Err(DataError::column(&c.name, "appears twice in the schema"));
            }
            c.validate()?;
        }
        if self.columns.iter().all(|c| c.kind == Kind::Ignored) {
            return Err(DataError::Schema(
                "every column is ignored: nothing is left to synthesize".into(),
            ));
        }
        Ok(())
    }

    /// Columns whose domain was read off the data (not covered by the guarantee).
    pub fn non_private_domains(&self) -> Vec<&str> {
        self.columns
            .iter()
            .filter(|c| c.kind != Kind::Ignored && !c.provenance.is_private())
            .map(|c| c.name.as_str())
            .collect()
    }

    /// Columns whose kind (or date format) was guessed from the rows, ignored ones included
    /// (whether a column is left out is itself in the header): not covered by the guarantee.
    pub fn non_private_kinds(&self) -> Vec<&str> {
        self.columns
            .iter()
            .filter(|c| c.kind_from_data)
            .map(|c| c.name.as_str())
            .collect()
    }

    /// Columns a private domain estimate left with nothing (kind `ignored`, provenance
    /// `dp_estimated`): not synthesized.
    pub fn dropped_by_estimate(&self) -> Vec<&str> {
        self.columns
            .iter()
            .filter(|c| {
                c.kind == Kind::Ignored && matches!(c.provenance, Provenance::DpEstimated { .. })
            })
            .map(|c| c.name.as_str())
            .collect()
    }

    /// Marks every kind as a public fact the user confirmed (`train --public-kinds`, the
    /// window's "Kinds are public").
    pub fn confirm_kinds(&mut self) {
        for c in &mut self.columns {
            c.kind_from_data = false;
        }
    }

    /// The user states that the file's codebook (its SPSS/Stata value labels) is public: the
    /// columns whose kind and categories came from it become public facts. Returns how
    /// many columns that covered.
    pub fn confirm_codebook(&mut self) -> usize {
        let mut n = 0;
        for c in &mut self.columns {
            if c.codebook && c.provenance == Provenance::FromData {
                c.provenance = Provenance::UserProvided;
                c.kind_from_data = false;
                n += 1;
            }
        }
        n
    }

    /// The columns whose categories are the file's codebook, not yet confirmed public.
    pub fn unconfirmed_codebook(&self) -> Vec<&str> {
        self.columns
            .iter()
            .filter(|c| c.codebook && c.provenance == Provenance::FromData)
            .map(|c| c.name.as_str())
            .collect()
    }

    /// Checks, before anything is reserved, every fact the encoding will rely on: the
    /// columns match ([`Self::check_table`]) and each category cell is in its column's
    /// list (or the column allows missing values). Columns in `estimated` are about to get
    /// a private domain, which always allows missing values, so only their presence and
    /// cell types are checked. A mismatch found here costs no budget; found after the
    /// reservation it would have charged a plan that never ran.
    pub fn check_fits(&self, t: &Table, estimated: &[String]) -> Result<(), DataError> {
        let mut s = self.clone();
        for c in &mut s.columns {
            if estimated.contains(&c.name) {
                c.missing = true;
            }
        }
        s.check_table(t)?;
        for spec in &s.columns {
            if spec.missing || !matches!(spec.kind, Kind::Binary | Kind::Categorical) {
                continue;
            }
            let (Some(cats), Some(col)) = (spec.categories(), t.column(&spec.name)) else {
                continue;
            };
            let known: std::collections::HashSet<&str> = cats.iter().map(String::as_str).collect();
            for r in 0..col.values.len() {
                if let Some(v) = col.text(r) {
                    if !known.contains(v.as_str()) {
                        return Err(DataError::column(
                            &spec.name,
                            format!(
                                "row {} holds '{v}', which is not in the column's categories; add it to the domain or set \"missing\": true to encode unknown values as missing",
                                r + 1
                            ),
                        ));
                    }
                }
            }
        }
        Ok(())
    }

    /// Checks that the schema fits a table: the same columns, compatible values.
    pub fn check_table(&self, t: &Table) -> Result<(), DataError> {
        for col in &t.columns {
            if self.column(&col.name).is_none() {
                return Err(DataError::column(
                    &col.name,
                    "is in the data but not in the schema; add it (kind \"ignored\" drops it)",
                ));
            }
        }
        for spec in &self.columns {
            let Some(col) = t.column(&spec.name) else {
                return Err(DataError::column(
                    &spec.name,
                    "is in the schema but not in the data",
                ));
            };
            if spec.kind == Kind::Ignored {
                continue;
            }
            let missing = col.missing_count();
            if missing > 0 && !spec.missing {
                return Err(DataError::column(
                    &spec.name,
                    format!(
                        "has {missing} missing cells but the schema says it has none; set \"missing\": true"
                    ),
                ));
            }
            if spec.kind == Kind::Continuous {
                if let Values::Text(v) = &col.values {
                    if spec.time_format.is_none() {
                        // A text column every cell of which is missing (or a number) is
                        // numbers enough; the first cell that is not names the fault.
                        let Some((row, val)) = v.iter().enumerate().find_map(|(i, c)| {
                            c.filter(|s| crate::util::fmt::parse_number(s).is_none())
                                .map(|s| (i, s))
                        }) else {
                            continue;
                        };
                        return Err(DataError::column(
                            &spec.name,
                            format!(
                                "is continuous in the schema but row {} holds '{val}', not a number",
                                row + 1
                            ),
                        ));
                    }
                    spec.numbers(col)?;
                }
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unknown_keys_are_errors() {
        let j = r#"{"format":"dpsynth-schema/1","columns":[{"name":"a","kind":"binary","domain":{"categories":["x","y"]},"colour":"red"}]}"#;
        let e = Schema::from_json(j, "s.json").unwrap_err().to_string();
        assert!(e.contains("colour"), "{e}");
    }

    #[test]
    fn contradictions_name_the_column() {
        let j = r#"{"columns":[{"name":"age","kind":"continuous","domain":{"bounds":{"lower":90,"upper":17}}}]}"#;
        let e = Schema::from_json(j, "s.json").unwrap_err().to_string();
        assert!(e.contains("age") && e.contains("lower < upper"), "{e}");
        let j =
            r#"{"columns":[{"name":"sex","kind":"binary","domain":{"categories":["M","F","X"]}}]}"#;
        let e = Schema::from_json(j, "s.json").unwrap_err().to_string();
        assert!(e.contains("sex") && e.contains("exactly two"), "{e}");
        let j = r#"{"columns":[{"name":"k","kind":"categorical","integer":true,"domain":{"categories":["a"]}}]}"#;
        assert!(
            Schema::from_json(j, "s.json")
                .unwrap_err()
                .to_string()
                .contains("'k'")
        );
    }

    #[test]
    fn provenance_defaults_to_user_and_round_trips() {
        let j = r#"{"columns":[{"name":"a","kind":"continuous","integer":true,"domain":{"bounds":{"lower":0,"upper":1}}},
                   {"name":"b","kind":"categorical","missing":true,"domain":{"categories":["x"]},"provenance":{"dp_estimated":{"epsilon":0.1}}},
                   {"name":"c","kind":"ignored","provenance":"from_data"}]}"#;
        let s = Schema::from_json(j, "s.json").unwrap();
        assert_eq!(s.columns[0].provenance, Provenance::UserProvided);
        assert_eq!(
            s.columns[1].provenance,
            Provenance::DpEstimated {
                epsilon: 0.1,
                delta: 0.0,
                mechanism: EstimateMechanism::Unspecified
            }
        );
        let back = Schema::from_json(&s.to_json(), "again").unwrap();
        assert_eq!(s, back);
    }
}
