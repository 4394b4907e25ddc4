//! A streamed run (`train --stream`: the file read in parts, never whole) against the same
//! run in memory: one model, one ledger key, for CSV and Parquet, in parts that split the
//! file at odd places. And what a streamed run refuses.

use crate::common;

use std::path::{Path, PathBuf};

use dpsynth::job::{self, RunConfig};
use dpsynth::methods::released::ReleasedModel;
use dpsynth::privacy::ledger::Ledger;

pub(crate) fn formats(name: &str) -> PathBuf {
    common::repo(&format!("tests/data/formats/{name}"))
}

pub(crate) fn config(dir: &Path, method: &str, data: PathBuf, tag: &str) -> RunConfig {
    let mut cfg = common::adult_run(
        method,
        "tiny",
        1.0,
        dir.join(format!("{method}-{tag}.dpsynth")),
    );
    cfg.data = data;
    cfg.delta = 1e-4;
    cfg
}

/// Everything a model releases, as data: its header and a seeded sample's digest.
pub(crate) fn fingerprint(path: &Path) -> (serde_json::Value, String) {
    let m = ReleasedModel::load(path, &candle_core::Device::Cpu).expect("the model loads");
    let mut header = serde_json::to_value(&m.header).expect("the header serialises");
    // The statement lists the run's charges: the same plan, the same values.
    header["library_version"] = serde_json::Value::Null;
    let sample = m.sample(2_000, Some(5)).expect("the model samples");
    (header, dpsynth::data::digest::table_key(&sample))
}

#[test]
fn streamed_runs_give_the_in_memory_model_and_share_its_budget() {
    let dir = tempfile::tempdir().unwrap();
    let ledger = dir.path().join("ledger.sqlite3");
    for method in ["mst", "aim"] {
        let whole = config(dir.path(), method, formats("adult_1k.csv"), "whole");
        let s = common::run_job(whole, &ledger, None).expect("the in-memory run succeeds");
        let want = fingerprint(&s.model);
        // 97 rows a part: eleven parts, none on a round boundary.
        for (file, tag) in [("adult_1k.csv", "csv"), ("adult_1k.parquet", "parquet")] {
            let mut cfg = config(dir.path(), method, formats(file), tag);
            cfg.stream = true;
            cfg.part_rows = Some(97);
            let s = common::run_job(cfg, &ledger, None).expect("the streamed run succeeds");
            assert_eq!(fingerprint(&s.model), want, "{method} streamed from {file}");
        }
    }
    // Three files (CSV read whole, CSV and Parquet streamed), one dataset in the ledger.
    let l = Ledger::open(&ledger).unwrap();
    let key = |f: &str| {
        let bytes = job::workspace::byte_key(&formats(f)).unwrap();
        l.alias(&bytes)
            .unwrap()
            .expect("the file is known to the ledger")
    };
    assert_eq!(key("adult_1k.csv"), key("adult_1k.parquet"));
    let csv = dpsynth::data::csv::load_csv(&formats("adult_1k.csv"), &Default::default()).unwrap();
    assert_eq!(key("adult_1k.csv"), dpsynth::data::digest::table_key(&csv));
}

#[test]
fn a_streamed_run_refuses_what_it_cannot_do_before_spending() {
    let dir = tempfile::tempdir().unwrap();
    let ledger = dir.path().join("ledger.sqlite3");
    let refused = |cfg: RunConfig| common::run_job(cfg, &ledger, None).unwrap_err();
    // A method that needs the rows in memory.
    let mut cfg = config(dir.path(), "dp-gan", formats("adult_1k.csv"), "gan");
    cfg.stream = true;
    assert!(refused(cfg).contains("--stream"));
    // No schema: kinds and domains would come from the rows.
    let mut cfg = config(dir.path(), "mst", formats("adult_1k.csv"), "noschema");
    cfg.stream = true;
    cfg.schema = None;
    assert!(refused(cfg).contains("needs a schema"));
    // A format a scan does not read.
    let mut cfg = config(dir.path(), "mst", formats("adult_1k.xlsx"), "xlsx");
    cfg.stream = true;
    assert!(refused(cfg).contains("CSV and Parquet"));
    // A value the schema cannot take, in a late part: refused by the first pass.
    let bad = dir.path().join("bad.csv");
    let mut text = std::fs::read_to_string(formats("adult_1k.csv")).unwrap();
    let row = text.lines().nth(1).unwrap().to_string();
    let (_, rest) = row.split_once(',').unwrap();
    text.push_str(&format!("Pirate,{rest}\n"));
    std::fs::write(&bad, text).unwrap();
    let mut cfg = config(dir.path(), "mst", bad, "bad");
    cfg.stream = true;
    cfg.part_rows = Some(100);
    assert!(refused(cfg).contains("Pirate"));
    // Nothing was spent: no run reached the ledger's books.
    let l = Ledger::open(&ledger).unwrap();
    let bytes = job::workspace::byte_key(&formats("adult_1k.csv")).unwrap();
    assert!(
        l.alias(&bytes)
            .unwrap()
            .is_none_or(|k| !l.has_entries(&k).unwrap())
    );
}

/// The window's streamed file ("Connect…" with a file's path): the survey counts the
/// records and gives the content key an in-memory open of the same rows has (one ledger
/// entry), for CSV and Parquet; a file that cannot be read in parts, and a schema the rows
/// do not fit, are refused when the user connects.
#[test]
fn a_file_connected_in_the_window_is_surveyed_in_parts() {
    let schema = common::repo("assets/adult/adult.schema.json");
    let whole = job::workspace::open(&formats("adult_1k.csv"), &mut |_, _| {}).unwrap();
    for file in ["adult_1k.csv", "adult_1k.parquet"] {
        assert!(job::workspace::streamed(&formats(file)));
        let c = job::workspace::connect(&formats(file), &schema).expect("the survey succeeds");
        assert_eq!(c.records, 1_000, "{file}");
        assert_eq!(c.content_key, whole.content_key, "{file}");
        assert_eq!(c.identity, formats(file).display().to_string());
    }
    assert!(!job::workspace::streamed(Path::new(
        "ballista://local/x.parquet"
    )));
    let err = job::workspace::connect(&formats("adult_1k.xlsx"), &schema).unwrap_err();
    assert!(err.to_string().contains("CSV or Parquet"), "{err}");
    let dir = tempfile::tempdir().unwrap();
    let narrow = dir.path().join("narrow.json");
    let mut s = dpsynth::data::schema::Schema::load(&schema).unwrap();
    s.columns.truncate(3);
    std::fs::write(&narrow, serde_json::to_string(&s).unwrap()).unwrap();
    assert!(job::workspace::connect(&formats("adult_1k.csv"), &narrow).is_err());
}
