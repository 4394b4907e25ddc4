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
    for method in ["mst", "aim"] {
        let whole = config(dir.path(), method, formats("adult_1k.csv"), "whole");
        let s = common::run_job(whole, &ledger, None).expect("the in-memory run succeeds");
        let want = fingerprint(&s.model);
        for (file, tag) in [("adult_1k.parquet", "bparquet"), ("adult_1k.csv", "bcsv")] {
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
        }
    }
    // The engine's table is booked under its own content key, found by its identity.
    let l = Ledger::open(&ledger).unwrap();
    let key = l
        .alias(&format!("engine:{}", url("adult_1k.parquet").display()))
        .unwrap()
        .expect("the engine table is known to the ledger");
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
