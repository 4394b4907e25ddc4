//! Runs are kept: a run trained in the window is listed again in Results after the user
//! opens another file and comes back, and after the window restarts; "Delete run…" asks
//! once more, then removes it and its model file. Column settings are kept per file too.

mod common;

use common::wait_for;

use eframe::egui;
use egui_kittest::kittest::Queryable as _;

fn click(h: &mut egui_kittest::Harness<'_, dpsynth::gui::App>, label: &str) {
    h.get_by_label(label).scroll_to_me();
    h.run_steps(2);
    h.get_by_label(label).click();
    h.run_steps(3);
}

fn open_adult(h: &mut egui_kittest::Harness<'_, dpsynth::gui::App>) {
    h.get_by_label("Try it with the Adult census sample")
        .click();
    wait_for(h, "32561 rows × 15 columns", 60);
}

#[test]
fn a_run_survives_a_file_switch_and_a_restart_until_deleted() {
    let dir = tempfile::tempdir().unwrap();
    let models = dir.path().join("dpsynth").join("models");
    {
        let mut h = common::isolated_window(dir.path(), false);
        h.run_steps(3);
        open_adult(&mut h);
        // A column setting made now is kept for this file.
        h.get_by_role_and_label(egui::accesskit::Role::ComboBox, "kind of fnlwgt")
            .click();
        h.run_steps(2);
        h.get_by_label("ignored").click();
        h.run_steps(3);
        h.get_by_label("2 · Train and export").click();
        wait_for(&mut h, "this dataset's budget: total ε", 20);
        click(&mut h, "MST");
        h.get_by_role_and_label(egui::accesskit::Role::ComboBox, "Preset:")
            .click();
        h.run_steps(2);
        h.get_by_label("tiny").click();
        h.run_steps(3);
        click(&mut h, "Train (Ctrl+Enter)");
        wait_for(&mut h, "mst · tiny · ε 1.00", 120);

        // Another file, then back: the run is listed again.
        h.get_by_label("Try it with MNIST digits").click();
        wait_for(&mut h, "images of 28×28 pixels", 60);
        h.get_by_label("3 · Results").click();
        h.run_steps(3);
        h.get_by_label_contains("No results yet");
        open_adult(&mut h);
        h.get_by_label("3 · Results").click();
        h.run_steps(3);
        h.get_by_label("mst · tiny · ε 1.00");
    }
    // The column setting was kept (written off the UI thread: it may trail a moment).
    let schemas = dir.path().join("dpsynth").join("schemas");
    let kept_schema = || -> Option<String> {
        std::fs::read_dir(&schemas)
            .ok()?
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| !p.file_name().unwrap().to_string_lossy().starts_with("run-"))
            .find_map(|p| std::fs::read_to_string(p).ok())
    };
    let t0 = std::time::Instant::now();
    while kept_schema().is_none() && t0.elapsed().as_secs() < 10 {
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let text = kept_schema().expect("the column settings are kept");
    let s = dpsynth::data::schema::Schema::from_json(&text, "kept").unwrap();
    assert_eq!(
        s.column("fnlwgt").unwrap().kind,
        dpsynth::data::schema::Kind::Ignored
    );
    // A new window on the same app folder (a restart).
    let mut h = common::isolated_window(dir.path(), false);
    h.run_steps(3);
    open_adult(&mut h);
    h.get_by_label_contains("Your column settings for this file from last time are back");
    h.get_by_label("3 · Results").click();
    h.run_steps(3);
    h.get_by_label("mst · tiny · ε 1.00");
    // Shown, it is evaluated against the open file.
    h.get_by_label_contains("evaluating");
    let kept = |m: &std::path::Path| {
        std::fs::read_dir(m)
            .unwrap()
            .filter_map(|e| e.ok())
            .filter(|e| e.path().extension().is_some_and(|x| x == "dpsynth"))
            .count()
    };
    assert_eq!(kept(&models), 1);
    click(&mut h, "Delete run…");
    h.get_by_label_contains("Delete this run's model file for good?");
    click(&mut h, "Yes, delete it");
    h.get_by_label_contains("No results yet");
    assert_eq!(kept(&models), 0);
}
