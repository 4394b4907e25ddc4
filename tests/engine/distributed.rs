//! The distributed count source (cargo feature `ballista`): a Ballista scheduler and two
//! executors on localhost count the table where it lies, and the model is the in-memory
//! run's, for Parquet and CSV. Run with
//! `cargo test --release --features ballista --test engine distributed`.

use crate::common;
use crate::streaming::{config, fingerprint, formats};

use std::path::PathBuf;

use dpsynth::privacy::ledger::Ledger;

#[test]
fn a_ballista_cluster_counts_what_memory_counts() {
    let cluster = dpsynth::data::engine::LocalCluster::start(2, 1)
        .expect("a scheduler and two executors start");
    let dir = tempfile::tempdir().unwrap();
    let ledger = dir.path().join("ledger.sqlite3");
    let url = |file: &str| {
        PathBuf::from(format!(
            "ballista://localhost:{}{}",
            cluster.port,
            formats(file).display()
        ))
    };
    let csv = dpsynth::data::csv::load_csv(&formats("adult_1k.csv"), &Default::default()).unwrap();
    let key = dpsynth::data::digest::table_key(&csv);
    let spent = || Ledger::open(&ledger).unwrap().spent(&key).unwrap().epsilon;
    for method in ["mst", "aim"] {
        let whole = config(dir.path(), method, formats("adult_1k.csv"), "whole");
        let s = common::run_job(whole, &ledger, None).expect("the in-memory run succeeds");
        let want = fingerprint(&s.model);
        for (file, tag) in [("adult_1k.parquet", "bparquet"), ("adult_1k.csv", "bcsv")] {
            let before = spent();
            let cfg = config(dir.path(), method, url(file), tag);
            let s = common::run_job(cfg, &ledger, None)
                .unwrap_or_else(|e| panic!("the engine run of {method} on {file} failed: {e}"));
            let (mut header, sample) = fingerprint(&s.model);
            // The statement says where the rows were counted; all else is the same model.
            let at = header["privacy"]
                .as_object_mut()
                .and_then(|p| p.remove("counted_by"));
            // An opaque reference: the engine's host, port and path stay unreleased.
            let named = dpsynth::data::engine::EngineSource::parse(&url(file))
                .and_then(Result::ok)
                .map(|e| e.opaque_identity());
            assert_eq!(at, named.map(Into::into));
            assert!(!at.as_ref().unwrap().to_string().contains("localhost"));
            assert_eq!(
                (header, sample),
                want,
                "{method} counted by the engine from {file}"
            );
            assert!(
                spent() > before,
                "the engine's run of {file} is charged to the file's own book"
            );
        }
    }
    // The same records are one dataset whoever reads them: the file read here and the
    // engine's tables (found by their identities) are booked under the file's content key,
    // so the six runs above drew on one budget, not three.
    let l = Ledger::open(&ledger).unwrap();
    for file in ["adult_1k.parquet", "adult_1k.csv"] {
        let engine = l
            .alias(&format!("engine:{}", url(file).display()))
            .unwrap()
            .expect("the engine table is known to the ledger");
        assert_eq!(engine, key, "the engine's {file} is keyed as the file is");
    }
    let file = dpsynth::job::workspace::byte_key(&formats("adult_1k.csv")).unwrap();
    assert_eq!(l.alias(&file).unwrap(), Some(key.clone()));
    assert!(l.has_entries(&key).unwrap());

    // What an engine run cannot do is refused before anything is spent.
    let refused = |cfg| common::run_job(cfg, &ledger, None).unwrap_err();
    let cfg = config(dir.path(), "dp-gan", url("adult_1k.parquet"), "gan");
    assert!(refused(cfg).contains("engine tables"));
    let mut cfg = config(dir.path(), "mst", url("adult_1k.parquet"), "noschema");
    cfg.schema = None;
    assert!(refused(cfg).contains("needs a schema"));
    let cfg = config(
        dir.path(),
        "mst",
        PathBuf::from(format!(
            "ballista://localhost:{}/nowhere/t.parquet",
            cluster.port
        )),
        "missing",
    );
    assert!(refused(cfg).contains("ballista://"));

    // A cancel while the engine surveys the table stops the query before anything is
    // spent: the ledger never hears of the table.
    let stop_ledger = dir.path().join("stopped.sqlite3");
    let cfg = config(dir.path(), "aim", url("adult_1k.parquet"), "stopped");
    let h = dpsynth::job::spawn(cfg, stop_ledger.clone(), None);
    h.cancel();
    let mut out = None;
    for ev in h.events.iter() {
        if let dpsynth::job::Event::Finished(r) = ev {
            out = Some(r.map(|_| ()).map_err(|e| e.to_string()));
        }
    }
    h.join();
    let e = out.expect("the job finished").unwrap_err();
    assert!(e.contains(dpsynth::data::engine::STOPPED), "{e}");
    let l = Ledger::open(&stop_ledger).unwrap();
    assert!(
        l.alias(&format!("engine:{}", url("adult_1k.parquet").display()))
            .unwrap()
            .is_none()
    );
}

/// Records that change between the survey that keys the budget and the counting pass
/// would be counted under another table's key: the engine's second look refuses them,
/// whether a record was added or one was edited in place (the same size).
#[test]
fn an_engine_table_changed_after_its_survey_is_refused() {
    use dpsynth::data::engine::CHANGED;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("people.csv");
    let text = std::fs::read_to_string(formats("adult_1k.csv")).unwrap();
    std::fs::write(&path, &text).unwrap();
    let schema =
        dpsynth::data::schema::Schema::load(&common::repo("assets/adult/adult.schema.json"))
            .unwrap();
    let (table, survey) = surveyed(&path, &schema);
    // The survey's key is the file's.
    let csv = dpsynth::data::csv::load_csv(&path, &Default::default()).unwrap();
    assert_eq!(survey.content_key, dpsynth::data::digest::table_key(&csv));
    assert_eq!(survey.rows, csv.n_rows);
    table
        .check_unchanged(&mut || false)
        .expect("an unchanged table passes");
    // One more person.
    let first = text.lines().nth(1).unwrap();
    std::fs::write(&path, format!("{text}{first}\n")).unwrap();
    let e = table.check_unchanged(&mut || false).unwrap_err();
    assert!(e.to_string().contains(CHANGED), "{e}");
    // A person's age edited in place: the same size, other records.
    let edited = text.replacen("\n25,", "\n26,", 1);
    assert_eq!(edited.len(), text.len());
    std::fs::write(&path, &edited).unwrap();
    let e = table.check_unchanged(&mut || false).unwrap_err();
    assert!(e.to_string().contains(CHANGED), "{e}");
    // Put back, the table is the one surveyed again.
    std::fs::write(&path, &text).unwrap();
    table.check_unchanged(&mut || false).unwrap();
}

/// Dates and times held as Parquet types key alike through the engine and from the file:
/// the engine's records are written as dpsynth's own reader writes them.
#[test]
fn an_engine_table_of_dates_and_times_is_keyed_as_its_file() {
    let file = formats("dates.parquet");
    let schema: dpsynth::data::schema::Schema = serde_json::from_str(
        r#"{"columns":[{"name":"day","kind":"ignored"},{"name":"when","kind":"ignored"},
        {"name":"visits","kind":"categorical","domain":{"categories":["0","1","2","3","4","5"]}}]}"#,
    )
    .unwrap();
    let (_, survey) = surveyed(&file, &schema);
    let t = match dpsynth::data::open(&file, &Default::default()).unwrap() {
        dpsynth::data::Dataset::Table(t) => t,
        _ => unreachable!(),
    };
    assert_eq!(survey.rows, 40);
    assert_eq!(survey.content_key, dpsynth::data::digest::table_key(&t));
}

/// `file` as an in-process engine holds it, surveyed under `schema`.
fn surveyed(
    file: &std::path::Path,
    schema: &dpsynth::data::schema::Schema,
) -> (
    dpsynth::data::engine::EngineTable,
    dpsynth::data::engine::EngineSurvey,
) {
    use dpsynth::data::engine::{EngineSource, EngineTable};
    let url = PathBuf::from(format!("ballista://local{}", file.display()));
    let mut table = EngineTable::connect(EngineSource::parse(&url).unwrap().unwrap()).unwrap();
    let survey = table
        .survey(schema, &Default::default(), &mut || false)
        .expect("the survey reads the table");
    (table, survey)
}
