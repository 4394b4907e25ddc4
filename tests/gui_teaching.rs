//! The teaching path through the real window: what ε means beside the cost
//! preview, with the budget stated as an accepted attack risk and put back into the form;
//! an ε sweep of the Adult sample (public: charged nothing) whose runs open in the Results
//! tab; the figure and table saved through a typed path; two runs side by side; and the
//! attack curve in a run's privacy statement.

mod common;

use common::wait_for;
use eframe::egui;
use egui_kittest::kittest::Queryable as _;

/// Scrolls `label` into view (a click outside the visible area lands nowhere), then clicks.
fn click(h: &mut egui_kittest::Harness<'_, dpsynth::gui::App>, label: &str) {
    h.get_by_label(label).scroll_to_me();
    h.run_steps(3);
    h.get_by_label(label).click();
    h.run_steps(2);
}

#[test]
fn risk_sweep_and_side_by_side() {
    let dir = tempfile::tempdir().unwrap();
    let mut h = common::isolated_window(dir.path(), false);
    h.run_steps(3);
    common::open_adult(&mut h);
    h.get_by_label("2 · Train and export").click();
    wait_for(&mut h, "this dataset's budget: total ε 3.000", 20);

    // What ε means, and the budget stated the other way round: an attacker right at most
    // 60 % of the time allows ε = ln(1.2/0.8 − …) ≈ 0.405; using it prices that run.
    h.get_by_label("What ε means for a person in the data")
        .click();
    h.run_steps(3);
    h.get_by_label_contains("The red curve bounds every possible attack");
    click(&mut h, "What ε is that?");
    h.get_by_label_contains("ε ≤ 0.4055");
    click(&mut h, "Use this ε");
    wait_for(&mut h, "this run 0.405", 20);
    wait_for(&mut h, "right at most 60.0 %", 20);

    // The sweep: DP-MERF at its tiny preset, ε = 1 and ∞, on the public sample.
    click(&mut h, "ε sweep (teaching)");
    h.run_steps(3);
    // A lesson's defaults: the recommended method (AIM on a table), four ε
    // from 0.01 to 1, two repeats: eight runs.
    h.get_by_label_contains("methods: aim (chosen above)");
    h.get_by_label_contains("8 runs on data declared public");
    set_sweep(&mut h);
    h.get_by_label_contains("2 runs on data declared public: nothing is charged");
    click(&mut h, "Run the sweep");
    common::wait_until(&mut h, "Save figure (SVG)", "the sweep stopped", 400);
    assert_eq!(h.query_all_by_label("Open results").count(), 2);
    // Figure and table through a typed path (no system dialog).
    let out = dir.path().join("lab").join("adult-sweep");
    click(&mut h, "save as");
    h.run_steps(1);
    h.key_press_modifiers(egui::Modifiers::COMMAND, egui::Key::A);
    h.get_by_label("save as")
        .type_text(&out.display().to_string());
    h.run_steps(2);
    click(&mut h, "Save figure (SVG)");
    h.run_steps(2);
    click(&mut h, "Save table (CSV)");
    h.run_steps(2);
    let svg = std::fs::read_to_string(out.with_extension("svg")).unwrap();
    assert!(svg.starts_with("<svg") && svg.contains("dp-merf"));
    let csv = std::fs::read_to_string(out.with_extension("csv")).unwrap();
    assert_eq!(csv.lines().count(), 3, "{csv}");
    // Saving again asks before replacing.
    click(&mut h, "Save table (CSV)");
    h.run_steps(2);
    h.get_by_label_contains("exists: press again to replace it");

    // Each point opens its run's results.
    h.query_all_by_label("Open results")
        .next()
        .unwrap()
        .scroll_to_me();
    h.run_steps(3);
    h.query_all_by_label("Open results").next().unwrap().click();
    h.run_steps(3);
    h.get_by_label_contains("sweep: dp-merf at ε = 1");
    wait_for(&mut h, "Mean distance from the line", 120);
    h.get_by_label("2 · Train and export").click();
    h.run_steps(3);
    h.query_all_by_label("Open results")
        .nth(1)
        .unwrap()
        .scroll_to_me();
    h.run_steps(3);
    h.query_all_by_label("Open results").nth(1).unwrap().click();
    h.run_steps(3);
    h.get_by_label_contains("sweep: dp-merf at ε = ∞");
    wait_for(&mut h, "Mean distance from the line", 120);

    // Side by side: the same figure for both runs, labelled a non-private diagnostic.
    h.get_by_label("Side by side").click();
    h.run_steps(3);
    h.get_by_label_contains("A non-private diagnostic");
    h.get_by_label("histograms").click();
    h.run_steps(3);
    assert!(
        h.query_all_by_label_contains("mean 1-way TV").count() >= 2,
        "both columns show their headline"
    );
    h.get_by_label("swap").click();
    h.run_steps(2);

    // The statement of the ε = 1 run draws its attack curve from the PLD.
    h.get_by_label("Privacy statement").click();
    h.run_steps(2);
    h.get_by_label("sweep: dp-merf at ε = 1").click();
    h.run_steps(3);
    h.get_by_label_contains("What this means for a person in the data");
    h.get_by_label_contains("from the run's privacy-loss distribution");

    // Nothing was charged to the user's ledger: the sample is public.
    let ledger = dir.path().join("ledger.sqlite3");
    let key = dpsynth::job::cost::dataset_key(
        &dpsynth::gui::sample_path("adult/adult_train.csv"),
        &ledger,
    )
    .unwrap();
    let l = dpsynth::privacy::ledger::Ledger::open(&ledger).unwrap();
    assert!(l.standing(&key).unwrap().entries.is_empty());

    // The sweep is kept like a run: after a restart, the same sweep as set
    // shows its figure and its runs at once, with nothing run again.
    drop(h);
    let mut h = common::isolated_window(dir.path(), false);
    h.run_steps(3);
    common::open_adult(&mut h);
    h.get_by_label("2 · Train and export").click();
    h.run_steps(3);
    click(&mut h, "ε sweep (teaching)");
    h.run_steps(3);
    set_sweep(&mut h);
    wait_for(&mut h, "2 of these runs finished in an earlier sweep", 20);
    h.get_by_label("Save figure (SVG)");
    assert_eq!(h.query_all_by_label("Open results").count(), 2);

    // Stop answers at once (the button says so and stays put), and the sweep ends.
    click(&mut h, "ε values");
    h.run_steps(1);
    h.key_press_modifiers(egui::Modifiers::COMMAND, egui::Key::A);
    h.get_by_label("ε values").type_text("0.5");
    h.run_steps(3);
    click(&mut h, "Run the sweep");
    h.run_steps(2);
    // A running sweep shows its clock: the time so far and the runs done.
    h.get_by_label_contains("so far, 0 of 1 run done");
    let before = h.get_by_label("Stop").rect();
    h.get_by_label("Stop").click();
    h.run_steps(2);
    let after = h.get_by_label("Stopping…").rect();
    assert_eq!(before.min.x, after.min.x, "Stop did not move");
    h.get_by_label_contains("stopping: the run in progress ends");
    common::wait_until(&mut h, "the sweep stopped", "Save figure (SVG)", 120);
}

/// DP-MERF at its tiny preset, ε = 1 and ∞, one repeat: a sweep the test can afford.
fn set_sweep(h: &mut egui_kittest::Harness<'_, dpsynth::gui::App>) {
    click(h, "DP-MERF");
    h.run_steps(2);
    click(h, "Preset:");
    h.run_steps(2);
    h.get_by_label("tiny").click();
    h.run_steps(2);
    click(h, "ε values");
    h.run_steps(1);
    h.key_press_modifiers(egui::Modifiers::COMMAND, egui::Key::A);
    h.get_by_label("ε values").type_text("1, inf");
    h.run_steps(3);
    // A lesson's default is two repeats (bars); one each here, to keep the test short.
    h.get_by_label_contains("4 runs on data declared public");
    click(h, "repeats");
    h.run_steps(2);
    h.key_press_modifiers(egui::Modifiers::COMMAND, egui::Key::A);
    h.get_by_label("repeats").type_text("1");
    h.key_press(egui::Key::Enter);
    h.run_steps(3);
}
