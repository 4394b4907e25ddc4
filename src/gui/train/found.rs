//! Exact values a run found privately, shown back in the Data tab's column editor: a DP
//! output of the run (post-processing to show), which the next run reuses instead of
//! paying for the search again.

use crate::data::schema::{Provenance, Schema};
use crate::gui::panel::Ctx;
use crate::gui::{Content, Loaded};

use super::TrainPanel;

impl TrainPanel {
    /// Puts the exact values the last run found into the open table's schema when it is
    /// the table that run trained on. Whether the schema changed.
    pub(super) fn adopt_found(&mut self, cx: &mut Ctx<'_>) -> bool {
        let Some((data, found)) = self.found.take() else {
            return false;
        };
        let Some(Loaded {
            path,
            content: Content::Table { schema, .. },
            ..
        }) = cx.loaded.as_deref_mut()
        else {
            return false;
        };
        *path == data && adopt(schema, &found)
    }
}

/// Gives each public number column that still names no exact values (and does not say
/// it has none) the ones found, marked as estimated. Whether any changed.
pub(super) fn adopt(schema: &mut Schema, found: &[(String, Vec<f64>)]) -> bool {
    let mut changed = false;
    for (name, values) in found {
        let Some(c) = schema.columns.iter_mut().find(|c| &c.name == name) else {
            continue;
        };
        let open = c.point_masses.is_empty() && !c.no_point_masses;
        if open && c.provenance == Provenance::UserProvided && !values.is_empty() {
            c.point_masses = values.clone();
            c.point_masses_estimated = true;
            changed = true;
        }
    }
    changed
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn found_values_fill_only_columns_that_name_none() {
        let mut s = Schema::from_json(
            r#"{"columns":[
            {"name":"hours","kind":"continuous","domain":{"bounds":{"lower":0,"upper":5000}}},
            {"name":"wage","kind":"continuous","point_masses":[7.25],"domain":{"bounds":{"lower":0,"upper":30}}},
            {"name":"tax","kind":"continuous","no_point_masses":true,"domain":{"bounds":{"lower":0,"upper":1}}}]}"#,
            "t",
        )
        .unwrap();
        let found = vec![
            ("hours".to_string(), vec![0.0]),
            ("wage".to_string(), vec![0.0]),
            ("tax".to_string(), vec![0.5]),
        ];
        assert!(adopt(&mut s, &found));
        let c = |n: &str| s.column(n).unwrap().clone();
        assert_eq!(c("hours").point_masses, vec![0.0]);
        assert!(c("hours").point_masses_estimated);
        assert_eq!(
            c("wage").point_masses,
            vec![7.25],
            "typed values stay the user's"
        );
        assert!(
            c("tax").point_masses.is_empty(),
            "a column said to have none stays so"
        );
        assert!(!adopt(&mut s, &found), "nothing more to fill");
    }
}
