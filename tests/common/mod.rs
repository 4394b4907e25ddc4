//! Helpers shared by the integration tests.
#![allow(dead_code)]

use std::path::PathBuf;
use std::process::{Command, Output};

pub fn repo(rel: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(rel)
}

/// The header and first `n` data lines of a bundled CSV (real rows, fewer of them: for
/// tests whose assertions do not need the whole table and whose time goes into scoring it).
pub fn head_lines(rel: &str, n: usize) -> Vec<String> {
    let text = std::fs::read_to_string(repo(rel)).expect("bundled csv readable");
    text.lines().take(n + 1).map(str::to_string).collect()
}

/// The first `train` and `test` rows of the Adult sample, written into `dir` under the
/// sample's own names (so a sweep finds the `…test…` file beside the `…train…` one).
pub fn adult_head(dir: &std::path::Path, train: usize, test: usize) -> (PathBuf, PathBuf) {
    let write = |name: &str, lines: Vec<String>| {
        let p = dir.join(name);
        std::fs::write(&p, lines.join("\n") + "\n").expect("write csv");
        p
    };
    (
        write(
            "adult_train.csv",
            head_lines("assets/adult/adult_train.csv", train),
        ),
        write(
            "adult_test.csv",
            head_lines("assets/adult/adult_test.csv", test),
        ),
    )
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

/// Opens the bundled Adult sample with its button and waits until the Data tab shows it.
pub fn open_adult(h: &mut egui_kittest::Harness<'_, dpsynth::gui::App>) {
    use egui_kittest::kittest::Queryable as _;
    h.get_by_label("Try it with the Adult census sample")
        .click();
    wait_for(h, "32561 rows × 15 columns", 60);
}

/// Steps the window's frames until a label containing `label` is on screen.
pub fn wait_for(h: &mut egui_kittest::Harness<'_, dpsynth::gui::App>, label: &str, secs: u64) {
    use egui_kittest::kittest::Queryable as _;
    let t0 = std::time::Instant::now();
    while h.query_by_label_contains(label).is_none() {
        assert!(
            t0.elapsed() < std::time::Duration::from_secs(secs),
            "'{label}' did not appear within {secs} s; on screen:\n{}",
            on_screen(h)
        );
        h.run_steps(2);
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
}

/// The labels the window shows now, one a line (what a failed wait saw).
pub fn on_screen(h: &egui_kittest::Harness<'_, dpsynth::gui::App>) -> String {
    use egui_kittest::kittest::{NodeT as _, Queryable as _};
    h.query_all_by_label_contains("")
        .filter_map(|n| {
            let n = n.accesskit_node();
            n.label().or_else(|| n.value())
        })
        .filter(|l| !l.is_empty())
        .take(200)
        .collect::<Vec<_>>()
        .join("\n")
}

/// Brings the widget labelled `label` into view, then clicks it (a click below the
/// window's edge lands nowhere, and how far down a widget sits depends on how the text
/// above it wraps).
pub fn click(h: &mut egui_kittest::Harness<'_, dpsynth::gui::App>, label: &str) {
    use egui_kittest::kittest::Queryable as _;
    h.get_by_label(label).scroll_to_me();
    h.run_steps(3);
    h.get_by_label(label).click();
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
            "'{done}' did not appear within {secs} s; on screen:\n{}",
            on_screen(h)
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

/// A run of `method` on the bundled Adult sample under its public schema, writing
/// `out` (seeded: reproducible, not for release; one thread).
pub fn adult_run(
    method: &str,
    preset: &str,
    epsilon: f64,
    out: PathBuf,
) -> dpsynth::job::RunConfig {
    dpsynth::job::RunConfig {
        schema: Some(repo("assets/adult/adult.schema.json")),
        preset: preset.into(),
        seed: Some(3),
        out,
        threads: Some(1),
        ..dpsynth::job::RunConfig::new(repo("assets/adult/adult_train.csv"), method, epsilon, 1e-5)
    }
}

/// Runs `cfg` on a worker against `ledger`, cancelling once a progress report reaches
/// step `cancel_after`; the run's summary or its error in words.
pub fn run_job(
    cfg: dpsynth::job::RunConfig,
    ledger: &std::path::Path,
    cancel_after: Option<u64>,
) -> Result<dpsynth::job::RunSummary, String> {
    use dpsynth::job::Event;
    let h = dpsynth::job::spawn(cfg, ledger.to_path_buf(), None);
    let mut out = None;
    for ev in h.events.iter() {
        match ev {
            Event::Progress(p) => {
                if cancel_after.is_some_and(|k| p.step >= k) {
                    h.cancel();
                }
            }
            Event::Finished(r) => out = Some(r.map_err(|e| e.to_string())),
            _ => {}
        }
    }
    h.join();
    out.unwrap_or_else(|| Err("the job ended without a result".into()))
}

/// Every `*_steps` setting of the method's preset set to `steps` (a run in seconds).
pub fn few_steps(
    method: &str,
    preset: &str,
    steps: u64,
) -> serde_json::Map<String, serde_json::Value> {
    dpsynth::job::preset_settings(method, preset)
        .unwrap()
        .into_iter()
        .filter(|(k, _)| k.ends_with("_steps"))
        .map(|(k, _)| (k, serde_json::json!(steps)))
        .collect()
}

/// The JSON paths (`a/b/3/c`) where two values differ.
pub fn json_differences(
    a: &serde_json::Value,
    b: &serde_json::Value,
    at: String,
    out: &mut Vec<String>,
) {
    use serde_json::Value;
    match (a, b) {
        (Value::Object(x), Value::Object(y)) => {
            let keys: std::collections::BTreeSet<&String> = x.keys().chain(y.keys()).collect();
            for k in keys {
                let (u, v) = (x.get(k), y.get(k));
                match (u, v) {
                    (Some(u), Some(v)) => json_differences(u, v, format!("{at}/{k}"), out),
                    _ => out.push(format!("{at}/{k}")),
                }
            }
        }
        (Value::Array(x), Value::Array(y)) if x.len() == y.len() => {
            for (i, (u, v)) in x.iter().zip(y).enumerate() {
                json_differences(u, v, format!("{at}/{i}"), out);
            }
        }
        _ if a != b => out.push(at),
        _ => {}
    }
}
