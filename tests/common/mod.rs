//! Helpers shared by the integration tests.
#![allow(dead_code)]

use std::path::PathBuf;
use std::process::{Command, Output};

/// `../shared/<rel>` next to the crate (the reference data and fixtures).
pub fn shared(rel: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("..")
        .join("shared")
        .join(rel)
}

pub fn repo(rel: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(rel)
}

/// Runs the real `dpsynth` binary.
pub fn dpsynth(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_dpsynth"))
        .args(args)
        .env(
            "DPSYNTH_LEDGER",
            std::env::temp_dir().join("dpsynth-test-unused-ledger.sqlite3"),
        )
        .output()
        .expect("the dpsynth binary runs")
}

pub fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// Steps the window's frames until a label containing `label` is on screen.
pub fn wait_for(h: &mut egui_kittest::Harness<'_, dpsynth::gui::App>, label: &str, secs: u64) {
    use egui_kittest::kittest::Queryable as _;
    let t0 = std::time::Instant::now();
    while h.query_by_label_contains(label).is_none() {
        assert!(
            t0.elapsed() < std::time::Duration::from_secs(secs),
            "'{label}' did not appear within {secs} s"
        );
        h.run_steps(2);
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
}

/// Steps the window until a label containing `done` shows (long work in a worker:
/// training, evaluation, a sweep); fails at once when one containing `failed` does.
pub fn wait_until(
    h: &mut egui_kittest::Harness<'_, dpsynth::gui::App>,
    done: &str,
    failed: &str,
    secs: u64,
) {
    use egui_kittest::kittest::Queryable as _;
    let t0 = std::time::Instant::now();
    loop {
        h.run_steps(5);
        if h.query_by_label_contains(done).is_some() {
            return;
        }
        if let Some(n) = h.query_by_label_contains(failed) {
            panic!("'{failed}' showed while waiting for '{done}': {n:?}");
        }
        assert!(
            t0.elapsed() < std::time::Duration::from_secs(secs),
            "'{done}' did not appear within {secs} s"
        );
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
}

/// The real window with its ledger and data folder in `dir` (each GUI test binary runs
/// one test, so setting the environment here races with nothing).
pub fn isolated_window(
    dir: &std::path::Path,
    wgpu: bool,
) -> egui_kittest::Harness<'static, dpsynth::gui::App> {
    // SAFETY: called at the start of a test binary's only test, before any thread starts.
    unsafe {
        std::env::set_var("DPSYNTH_LEDGER", dir.join("ledger.sqlite3"));
        std::env::set_var("XDG_DATA_HOME", dir);
    }
    let b = egui_kittest::Harness::builder().with_size(eframe::egui::vec2(1200.0, 800.0));
    let b = if wgpu { b.wgpu() } else { b };
    b.build_eframe(|cc| dpsynth::gui::App::new(cc))
}
