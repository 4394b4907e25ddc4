//! The files analysts have: the same 1,000 Adult rows saved by pandas, openpyxl,
//! pyarrow and pyreadstat (independent writers, `tests/data/formats/README.md`) as Excel,
//! OpenDocument, Parquet, Arrow IPC, SPSS and Stata open with the CSV's kinds, share its
//! ledger entry, and train AIM; broken files give errors a person can act on.

use crate::common;

use std::path::PathBuf;

use dpsynth::data::schema::{Kind, Provenance};
use dpsynth::data::{self, Dataset, Table};

fn fixture(name: &str) -> PathBuf {
    common::repo(&format!("tests/data/formats/{name}"))
}

fn open(path: &std::path::Path) -> Result<Table, String> {
    match data::open(path, &Default::default()).map_err(|e| e.to_string())? {
        Dataset::Table(t) => Ok(t),
        Dataset::Images(_) => Err("read as images".into()),
    }
}

/// Each column's kind by its canonical name (Stata and SPSS forbid `-` in names).
fn kinds(t: &Table) -> Vec<(String, Kind)> {
    let s = data::infer::infer_schema(t).unwrap().schema;
    let mut k: Vec<(String, Kind)> = s
        .columns
        .iter()
        .map(|c| (data::digest::canonical_name(&c.name), c.kind))
        .collect();
    k.sort_by(|a, b| a.0.cmp(&b.0));
    k
}

const SAVED_AS: &[&str] = &[
    "adult_1k.xlsx",
    "adult_1k.ods",
    "adult_1k.parquet",
    "adult_1k.arrow",
    "adult_1k.sav",
    "adult_1k.dta",
];

#[test]
fn every_format_reads_adult_with_the_csv_s_kinds_and_content_key() {
    let csv = open(&fixture("adult_1k.csv")).unwrap();
    let key = data::digest::table_key(&csv);
    assert_eq!(csv.n_rows, 1_000);
    for f in SAVED_AS {
        let t = open(&fixture(f)).unwrap_or_else(|e| panic!("{f}: {e}"));
        assert_eq!((t.n_rows, t.n_cols()), (1_000, 15), "{f}");
        assert_eq!(kinds(&t), kinds(&csv), "{f}");
        assert_eq!(
            data::digest::table_key(&t),
            key,
            "{f}: not the CSV's ledger entry"
        );
    }
    // A sheet and its header row chosen in the path; a title line above the header is
    // skipped when none is named.
    for sel in ["adult_1k.xlsx#titled:3", "adult_1k.xlsx#titled"] {
        let t = open(&fixture(sel)).unwrap_or_else(|e| panic!("{sel}: {e}"));
        assert_eq!((t.n_rows, t.n_cols()), (50, 15), "{sel}");
    }
    let tsv = open(&fixture("adult_200.tsv")).unwrap();
    assert_eq!((tsv.n_rows, tsv.n_cols()), (200, 15));
}

#[test]
fn semicolon_files_with_decimal_commas_read_as_numbers() {
    let t = open(&fixture("european.csv")).unwrap();
    let h = t.column("height_m").unwrap();
    assert_eq!(
        h.values,
        data::Values::Number(vec![Some(1.72), Some(1.65), Some(1.8), Some(1.59)].repeat(5))
    );
    assert!(matches!(
        t.column("town").unwrap().values,
        data::Values::Text(_)
    ));
}

#[test]
fn value_labels_become_the_codebook_and_user_missing_codes_are_missing() {
    let t = open(&fixture("survey.sav")).unwrap();
    let vote = t.column("vote").unwrap();
    // 8 "don't know" and 9 "refused" are user-missing: 2 of every 8 rows.
    assert_eq!(vote.missing_count(), 10);
    let mut s = data::infer::infer_schema(&t).unwrap().schema;
    let spec = s.column("vote").unwrap();
    assert!(spec.codebook);
    // Every label but the missing codes', "Undecided" though no row says it.
    assert_eq!(spec.categories().unwrap(), ["Yes", "No", "Undecided"]);
    assert_eq!(spec.provenance, Provenance::FromData);
    assert_eq!(s.unconfirmed_codebook(), ["vote"]);
    assert_eq!(s.confirm_codebook(), 1);
    let spec = s.column("vote").unwrap();
    assert_eq!(spec.provenance, Provenance::UserProvided);
    assert!(!spec.kind_from_data);
    // The Stata file's labelled columns read as their labels, in the codebook's order.
    let dta = open(&fixture("adult_1k.dta")).unwrap();
    let sex = data::infer::infer_schema(&dta).unwrap().schema;
    assert!(sex.column("sex").unwrap().codebook);
}

#[test]
fn aim_trains_on_each_format_and_charges_the_csv_s_entry() {
    let dir = tempfile::tempdir().unwrap();
    let ledger = dir.path().join("ledger.sqlite3");
    let csv = open(&fixture("adult_1k.csv")).unwrap();
    let key = data::digest::table_key(&csv);
    for (i, f) in [
        "adult_1k.csv",
        "adult_1k.xlsx",
        "adult_1k.parquet",
        "adult_1k.sav",
        "adult_1k.dta",
    ]
    .iter()
    .enumerate()
    {
        let mut cfg = dpsynth::job::RunConfig::new(fixture(f), "aim", 0.1, 1e-6);
        cfg.seed = Some(2);
        cfg.threads = Some(1);
        cfg.out = dir.path().join(format!("{i}.dpsynth"));
        cfg.domains = dpsynth::job::DomainPolicy::AllowData;
        cfg.public_kinds = true;
        cfg.public_codebook = true;
        let s = common::run_job(cfg, &ledger, None).unwrap_or_else(|e| panic!("{f}: {e}"));
        let rows = dpsynth::job::services::sample(&s.model, 100, Some(1)).unwrap();
        assert_eq!((rows.n_rows, rows.n_cols()), (100, 15), "{f}");
        let l = dpsynth::privacy::ledger::Ledger::open(&ledger).unwrap();
        assert_eq!(
            l.standing(&key).unwrap().entries.len(),
            i + 1,
            "{f}: not charged to the CSV's entry"
        );
    }
}

/// A run on a workbook's other sheet (`FILE#SHEET`) reads that sheet and charges its own
/// entry, not the first sheet's (it used to stop at a check for a file named `…#titled`).
#[test]
fn a_run_on_a_named_sheet_charges_that_sheet() {
    let dir = tempfile::tempdir().unwrap();
    let ledger = dir.path().join("ledger.sqlite3");
    let sheet = PathBuf::from(format!("{}#titled", fixture("adult_1k.xlsx").display()));
    let mut cfg = dpsynth::job::RunConfig::new(sheet.clone(), "aim", 0.1, 1e-6);
    cfg.seed = Some(2);
    cfg.threads = Some(1);
    cfg.out = dir.path().join("sheet.dpsynth");
    cfg.domains = dpsynth::job::DomainPolicy::AllowData;
    cfg.public_kinds = true;
    let s = common::run_job(cfg, &ledger, None).unwrap();
    assert!(s.model.exists());
    let key = |p: &std::path::Path| dpsynth::job::cost::dataset_key(p, &ledger).unwrap();
    let l = dpsynth::privacy::ledger::Ledger::open(&ledger).unwrap();
    assert_eq!(l.standing(&key(&sheet)).unwrap().entries.len(), 1);
    let first = fixture("adult_1k.xlsx");
    assert_ne!(key(&sheet), key(&first), "two sheets, two datasets");
    assert!(l.standing(&key(&first)).unwrap().entries.is_empty());
}

#[test]
fn broken_files_say_what_is_wrong() {
    let cases = [
        ("bad/truncated.xlsx", "is the file complete"),
        ("bad/protected.xlsx", "password-protected"),
        ("bad/empty_sheet.xlsx", "empty"),
        ("bad/merged.xlsx", "A2:A3 are merged"),
        ("bad/truncated.parquet", "is the file complete"),
        ("bad/truncated.sav", "truncated or damaged"),
        ("bad/truncated.dta", "is the file complete"),
        (
            "adult_1k.xlsx#no such sheet",
            "its sheets are: adult, titled",
        ),
        ("adult_1k.xlsx#adult:5000", "has no row 5000"),
        ("adult_1k.parquet#sheet", "spreadsheets only"),
    ];
    for (f, says) in cases {
        let e = open(&fixture(f)).expect_err(f);
        assert!(e.contains(says), "{f}: {e}");
    }
    // The same through the command line: exit 1 and the message, no panic.
    let o = common::dpsynth(&["inspect", fixture("bad/protected.xlsx").to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(1), "{}", common::stderr(&o));
    assert!(common::stderr(&o).contains("password-protected"));
}

/// A Parquet file (found by `dpsynth fuzz --target columnar`) whose page makes polars'
/// reader ask for 2⁶¹ bytes: an abort, which no `catch_unwind` stops. The binary reads it
/// in a child first, so the command ends with an error and the process (the window, in
/// the app) lives. Only through the binary: read in-process, it would end this test.
#[test]
fn a_file_that_crashes_the_reader_is_an_error_not_an_abort() {
    let f = fixture("bad/crashes_reader.parquet");
    let child = common::dpsynth(&["__check-columnar", f.to_str().unwrap()]);
    assert!(
        !child.status.success() && child.status.code() != Some(3),
        "the reader no longer crashes on this file; keep it as an ordinary bad file ({:?})",
        child.status
    );
    let o = common::dpsynth(&["inspect", f.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(1), "{}", common::stderr(&o));
    assert!(
        common::stderr(&o).contains("the reader crashed on it"),
        "{}",
        common::stderr(&o)
    );
}

#[test]
fn the_public_codebook_flag_covers_the_labelled_columns() {
    let dir = tempfile::tempdir().unwrap();
    let run = |public: bool| {
        let out = dir.path().join(format!("{public}.dpsynth"));
        let mut args = vec![
            "train".to_string(),
            "--data".into(),
            fixture("survey.sav").display().to_string(),
            "--method".into(),
            "mst".into(),
            "--preset".into(),
            "tiny".into(),
            "--epsilon".into(),
            "1".into(),
            "--delta".into(),
            "1e-6".into(),
            "--allow-data-domains".into(),
            "--public-kinds".into(),
            "--ledger".into(),
            dir.path().join("l.sqlite3").display().to_string(),
            "--out".into(),
            out.display().to_string(),
            "--json".into(),
        ];
        if public {
            args.push("--public-codebook".into());
        }
        let o = common::dpsynth(&args.iter().map(String::as_str).collect::<Vec<_>>());
        assert_eq!(o.status.code(), Some(0), "{}", common::stderr(&o));
        let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        v["non_private_domains"].clone()
    };
    let named = |v: &serde_json::Value| {
        v.as_array()
            .unwrap()
            .iter()
            .any(|c| c.as_str() == Some("vote"))
    };
    assert!(named(&run(false)));
    assert!(!named(&run(true)));
}

/// One list per fact: the table types in `data::source` are what the packages register.
/// Cargo.toml's file associations name each associated type's usual extension, the
/// desktop entry each associated type's MIME type, and every glob of the MIME package
/// belongs to the type it defines; detection by extension agrees with the list.
#[test]
fn the_packages_register_the_one_list_of_table_types() {
    use dpsynth::data::source::{TABLE_TYPES, detect};
    let text = |p: &str| std::fs::read_to_string(common::repo(p)).unwrap();
    let sorted = |mut v: Vec<String>| {
        v.sort();
        v
    };
    let associated: Vec<_> = TABLE_TYPES.iter().filter(|t| t.associated).collect();

    let cargo = text("Cargo.toml");
    let line = cargo
        .lines()
        .find(|l| l.contains("name = \"Tables\""))
        .expect("Cargo.toml associates tables");
    let inside = &line[line.find('[').unwrap() + 1..line.find(']').unwrap()];
    let listed: Vec<String> = inside
        .split(',')
        .map(|e| e.trim().trim_matches('"').to_string())
        .collect();
    let want: Vec<String> = associated.iter().map(|t| t.extensions[0].into()).collect();
    assert_eq!(
        sorted(listed),
        sorted(want),
        "Cargo.toml's table associations"
    );

    let desktop = text("packaging/dpsynth.desktop");
    let mimes = desktop
        .lines()
        .find_map(|l| l.strip_prefix("MimeType="))
        .expect("the desktop entry's MIME types");
    let listed: Vec<String> = mimes
        .split(';')
        .filter(|m| !m.is_empty() && *m != "application/x-dpsynth-model")
        .map(str::to_string)
        .collect();
    let want: Vec<String> = associated.iter().map(|t| t.mime.into()).collect();
    assert_eq!(
        sorted(listed),
        sorted(want),
        "the desktop entry's MIME types"
    );

    let xml = text("packaging/dpsynth-mime.xml");
    for block in xml.split("<mime-type type=\"").skip(1) {
        let mime = &block[..block.find('"').unwrap()];
        if mime == "application/x-dpsynth-model" {
            continue;
        }
        let t = TABLE_TYPES
            .iter()
            .find(|t| t.mime == mime)
            .unwrap_or_else(|| panic!("{mime} in the MIME package is no table type"));
        let globs: Vec<&str> = block
            .split("<glob pattern=\"*.")
            .skip(1)
            .map(|g| &g[..g.find('"').unwrap()])
            .collect();
        assert!(globs.contains(&t.extensions[0]), "{mime}: {globs:?}");
        for g in globs {
            assert!(
                t.extensions.contains(&g),
                "{mime}: *.{g} is not in the list"
            );
        }
    }

    // Detection by name: an empty file under each extension is read as its type.
    let dir = tempfile::tempdir().unwrap();
    for t in TABLE_TYPES {
        for e in t.extensions {
            let p = dir.path().join(format!("empty.{e}"));
            std::fs::write(&p, b"").unwrap();
            assert_eq!(detect(&p), t.format, ".{e}");
        }
    }
}

/// Dates and times stored as Parquet types (a warehouse's export) read as their text,
/// with the kinds a CSV of the same rows gets. The reader used to refuse any such column
/// as if the file were damaged ("is the file complete?"). A time's text carries its
/// type's precision (microseconds: six digits), where pandas' CSV writes as many as the
/// values need: the same instants, other text.
#[test]
fn parquet_dates_and_times_read_as_their_text() {
    let p = open(&fixture("dates.parquet")).unwrap();
    let c = open(&fixture("dates.csv")).unwrap();
    assert_eq!((p.n_rows, p.n_cols()), (40, 3));
    assert_eq!(kinds(&p), kinds(&c));
    let cell = |t: &Table, col: &str, r: usize| t.column(col).unwrap().text(r).unwrap();
    for r in 0..40 {
        assert_eq!(cell(&p, "day", r), cell(&c, "day", r), "row {r}");
        assert_eq!(cell(&p, "visits", r), cell(&c, "visits", r), "row {r}");
        let (when, written) = (cell(&p, "when", r), cell(&c, "when", r));
        assert!(
            when.starts_with(&written) && when.len() == "2024-03-01 10:00:00.000000".len(),
            "row {r}: {when} against {written}"
        );
    }
}
