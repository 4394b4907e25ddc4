//! The data view's unit tests.

use super::*;
use crate::data::schema::{ColumnSpec, Domain};

fn adult() -> (Loaded, tempfile::TempDir) {
    let path = super::super::sample_path("adult/adult_train.csv");
    let table = crate::data::csv::load_csv(&path, &Default::default()).unwrap();
    let inf = crate::data::infer::infer_schema(&table).unwrap();
    let stats = ColumnStats::of(&table);
    let profile = std::sync::Arc::new(crate::data::domain_check::profile(&table));
    (
        Loaded {
            key: None,
            path,
            dataset: None,
            linked: None,
            content: Content::Table {
                table: std::sync::Arc::new(table),
                schema: inf.schema,
                notes: inf.notes,
                stats,
                profile,
            },
        },
        tempfile::tempdir().unwrap(),
    )
}

#[test]
fn a_saved_schema_loads_back_and_a_foreign_one_is_refused() {
    let (mut l, dir) = adult();
    let mut p = DataPanel::default();
    if let Content::Table { schema, .. } = &mut l.content {
        schema.columns[0].provenance = Provenance::UserProvided;
        schema.columns[0].domain = Some(Domain::Bounds {
            lower: 17.0,
            upper: 90.0,
        });
    }
    let file = dir.path().join("s.json");
    assert!(!p.schema_file(Purpose::SaveSchema, &file, &mut l));
    let (mut fresh, _d) = adult();
    assert!(p.schema_file(Purpose::LoadSchema, &file, &mut fresh));
    let Content::Table { schema, .. } = &fresh.content else {
        panic!()
    };
    assert_eq!(schema.columns[0].bounds(), Some((17.0, 90.0)));
    assert!(schema.columns[0].provenance.is_private());

    // A schema of another table is refused with the column at fault, and the current
    // schema is kept.
    let other = dir.path().join("other.json");
    std::fs::write(
        &other,
        r#"{"columns":[{"name":"x","kind":"continuous","domain":{"bounds":{"lower":0,"upper":1}}}]}"#,
    )
    .unwrap();
    assert!(!p.schema_file(Purpose::LoadSchema, &other, &mut fresh));
    let Some(Err(m)) = &p.message else { panic!() };
    assert!(m.contains("does not fit this table"), "{m}");
    let Content::Table { schema, .. } = &fresh.content else {
        panic!()
    };
    assert_eq!(schema.columns[0].bounds(), Some((17.0, 90.0)));
}

#[test]
fn warnings_name_constant_sparse_and_wide_columns() {
    let mut spec = ColumnSpec {
        name: "c".into(),
        kind: Kind::Categorical,
        integer: false,
        missing: false,
        time_format: None,
        domain: Some(Domain::Categories((0..60).map(|i| i.to_string()).collect())),
        point_masses: Vec::new(),
        point_masses_estimated: false,
        no_point_masses: false,
        decimals: None,
        kind_from_data: false,
        blank_share: None,
        codebook: false,
        provenance: Provenance::UserProvided,
    };
    let w = warnings(
        &spec,
        ColumnStats {
            missing: 30,
            distinct: 60,
            range: None,
        },
        100,
    );
    assert!(w.iter().any(|w| w.contains("60 categories")), "{w:?}");
    assert!(w.iter().any(|w| w.contains("30 % missing")), "{w:?}");
    spec.domain = Some(Domain::Categories(vec!["a".into(), "b".into()]));
    let w = warnings(
        &spec,
        ColumnStats {
            missing: 0,
            distinct: 1,
            range: None,
        },
        100,
    );
    assert_eq!(w.len(), 1);
    assert!(w[0].contains("constant"));
    // Bounds: reversed ones are refused at once; narrower than the file, a warning.
    let mut b = spec.clone();
    b.kind = Kind::Continuous;
    b.domain = Some(Domain::Bounds {
        lower: 10.0,
        upper: 5.0,
    });
    let st = ColumnStats {
        missing: 0,
        distinct: 50,
        range: Some((0.0, 99.0)),
    };
    assert!(warnings(&b, st, 100)[0].contains("must be below the upper"));
    b.domain = Some(Domain::Bounds {
        lower: 0.0,
        upper: 50.0,
    });
    assert!(warnings(&b, st, 100)[0].contains("clamped"));
    b.domain = Some(Domain::Bounds {
        lower: 0.0,
        upper: 100.0,
    });
    assert!(warnings(&b, st, 100).is_empty());
    spec.kind = Kind::Ignored;
    assert!(
        warnings(
            &spec,
            ColumnStats {
                missing: 90,
                distinct: 1,
                range: None,
            },
            100
        )
        .is_empty()
    );
}
