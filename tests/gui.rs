//! The newcomer's path through the real window, driven headlessly through its
//! accessibility tree: open the Adult sample, confirm a column's domain, train
//! DP-auto-GAN at ε = 1, watch it finish, see every result tab, export a CSV and read it
//! back.

use std::time::{Duration, Instant};

use eframe::egui;
use egui_kittest::Harness;
use egui_kittest::kittest::Queryable as _;

#[test]
fn open_sample_train_and_export() {
    let dir = tempfile::tempdir().unwrap();
    // SAFETY: this test binary runs this one test; nothing else reads the environment.
    unsafe {
        std::env::set_var("DPSYNTH_LEDGER", dir.path().join("ledger.sqlite3"));
        std::env::set_var("XDG_DATA_HOME", dir.path());
    }
    let mut h = Harness::builder()
        .with_size(egui::vec2(1200.0, 800.0))
        .build_eframe(|_cc| dpsynth::gui::App::default());
    h.get_by_label("Try it with the Adult census sample")
        .click();
    h.run_steps(4);
    h.get_by_label_contains("32561 rows × 15 columns");
    let before = h.query_all_by_label("Confirm public").count();
    assert_eq!(before, 15, "every inferred domain starts unconfirmed");
    h.query_all_by_label("Confirm public")
        .next()
        .unwrap()
        .click();
    h.run_steps(4);
    assert_eq!(h.query_all_by_label("Confirm public").count(), 14);

    h.get_by_label("2 · Train and export").click();
    h.run_steps(4);
    h.get_by_label_contains("this dataset's budget: total ε 3.000");
    h.get_by_label("Train (Ctrl+Enter)").click();
    let t0 = Instant::now();
    // When the run finishes the window shows its results and evaluates it off-thread.
    loop {
        h.run_steps(5);
        if h.query_by_label_contains("Always guessing").is_some()
            || h.query_by_label_contains("Mean distance from the line")
                .is_some()
        {
            break;
        }
        assert!(
            h.query_by_label_contains("failed").is_none(),
            "the run or its evaluation failed"
        );
        assert!(
            t0.elapsed() < Duration::from_secs(400),
            "training and evaluation did not finish"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    // Every result tab shows its figures.
    for (tab, expect) in [
        ("Dimension-wise prediction", "Mean distance from the line"),
        ("Dimension-wise probability", "share of its second value"),
        ("Histograms", "Total variation distance"),
        ("2-way PCA", "Wasserstein score"),
        ("Train on synthetic, test on real", "Always guessing"),
        ("Privacy risk", "membership-inference AUC"),
        ("Privacy statement", "differential privacy, by the"),
        ("Compare runs", "PCA Wasserstein score"),
    ] {
        h.get_by_label(tab).click();
        h.run_steps(3);
        assert!(
            h.query_by_label_contains(expect).is_some(),
            "tab '{tab}' does not show '{expect}'"
        );
    }
    h.get_by_label("2 · Train and export").click();
    h.run_steps(3);
    h.get_by_label_contains("finished: ε = ");
    // The default export path is in the (temporary) data folder.
    h.get_by_label("Export CSV").click();
    h.run_steps(4);
    h.get_by_label_contains("wrote 1000 rows to");
    let csv = dir.path().join("dpsynth").join("synthetic.csv");
    let t = dpsynth::data::csv::load_csv(&csv, &Default::default()).unwrap();
    assert_eq!(t.n_rows, 1000);
    assert_eq!(t.n_cols(), 15);
    // The run is in the ledger, settled.
    let key =
        dpsynth::privacy::ledger::dataset_key(&dpsynth::gui::sample_path("adult/adult_train.csv"))
            .unwrap();
    let l = dpsynth::privacy::ledger::Ledger::open(&dir.path().join("ledger.sqlite3")).unwrap();
    let st = l.standing(&key).unwrap();
    assert_eq!(st.entries.len(), 1);
    assert_eq!(st.entries[0].state, "settled");
}
