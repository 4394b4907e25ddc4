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

mod column;
pub use column::{
    ColumnSpec, Domain, EstimateMechanism, Kind, MAX_CATEGORIES, MAX_POINT_MASSES, Provenance,
    SCHEMA_FORMAT,
};

/// The kinds and domains of every column of a table.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Schema {
    #[serde(default = "format_tag")]
    pub format: String,
    pub columns: Vec<ColumnSpec>,
    /// Rules between columns the user states as public facts, one per entry in the
    /// grammar of [`crate::data::rules`] (`education -> education-num`,
    /// `capital-gain > 0 => capital-loss = 0`). They change no charge; a release obeys them.
    /// Checked against the columns by `rules::of_schema` where they are used (a run's
    /// check before it reserves anything, sampling, the window's editor), not here: the
    /// rules read the schema, so the schema does not read them back.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub rules: Vec<String>,
    /// The binary or categorical column the evaluation's classifiers predict (train on
    /// synthetic, test on real), when the user picked one; else a default is chosen
    /// (`job::evaluation::default_label`). A choice about scoring, not about the rows.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target: Option<String>,
}

fn format_tag() -> String {
    SCHEMA_FORMAT.to_string()
}

impl Schema {
    pub fn new(columns: Vec<ColumnSpec>) -> Self {
        Self {
            format: format_tag(),
            columns,
            rules: Vec::new(),
            target: None,
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
        if let Some(t) = &self.target {
            match self.column(t) {
                None => {
                    return Err(DataError::Schema(format!(
                        "the target '{t}' is not a column of the schema"
                    )));
                }
                Some(c) if !matches!(c.kind, Kind::Binary | Kind::Categorical) => {
                    return Err(DataError::column(
                        t,
                        "is the target, which classifiers predict: it must be binary or categorical",
                    ));
                }
                Some(_) => {}
            }
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
        self.check_fits_at(t, estimated, 0)
    }

    /// [`Self::check_fits`] on a part of a file that starts after `before` data rows, so a
    /// bad cell is named by its row in the file.
    pub fn check_fits_at(
        &self,
        t: &Table,
        estimated: &[String],
        before: usize,
    ) -> Result<(), DataError> {
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
                                before + r + 1
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
                        "has {missing} blank cells but the schema says it has none: tick \"may be blank\" in the Data tab's column table (in a schema file, \"missing\": true)"
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

    /// A domain typed in the window leaves no flag read off the rows behind: one row with
    /// a fraction or a blank must not change what the released header says, and whole
    /// bounds do not make whole values.
    #[test]
    fn a_typed_domain_takes_public_defaults_for_the_guessed_flags() {
        let mut c: ColumnSpec = serde_json::from_str(
            r#"{"name": "rate", "kind": "continuous", "integer": true, "missing": true,
                "decimals": 3, "domain": {"bounds": {"lower": 0.0, "upper": 1.0}}}"#,
        )
        .unwrap();
        c.made_public();
        assert!(!c.missing && !c.integer && c.decimals.is_none(), "{c:?}");
        c.set_precision(Some(0));
        assert!(c.integer && c.precision() == Some(0));
        c.set_precision(Some(2));
        assert!(!c.integer && c.decimals == Some(2) && c.precision() == Some(2));
        c.set_precision(None);
        assert!(!c.integer && c.precision().is_none());
    }

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
