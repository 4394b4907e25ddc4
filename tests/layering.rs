//! DESIGN.md §1: lower layers never import higher ones. The privacy core has no candle,
//! polars or GUI code in it, and the window only draws: it reaches methods, the
//! accountant, the ledger and candle through `job` alone.

use std::path::{Path, PathBuf};

/// Every `.rs` file under `dir`, recursively.
fn rust_files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            out.extend(rust_files(&path));
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
    out
}

/// The `file:line` of every use of a banned name outside comments.
fn violations(module: &str, banned: &[&str]) -> (usize, Vec<String>) {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("src")
        .join(module);
    let files = rust_files(&dir);
    let mut found = Vec::new();
    for path in &files {
        let text = std::fs::read_to_string(path).unwrap();
        for (i, line) in text.lines().enumerate() {
            let code = line.split("//").next().unwrap_or("");
            for b in banned {
                if code.contains(b) {
                    found.push(format!("{}:{}: uses `{b}`", path.display(), i + 1));
                }
            }
        }
    }
    (files.len(), found)
}

#[test]
fn privacy_module_imports_no_ml_data_or_gui_crates() {
    let (files, found) = violations(
        "privacy",
        &[
            "polars",
            "candle",
            "egui",
            "eframe",
            "wgpu",
            "crate::data",
            "crate::gui",
            "crate::cli",
            "crate::job",
            "crate::methods",
            "crate::nn",
            "crate::eval",
        ],
    );
    assert!(files >= 5);
    assert!(found.is_empty(), "{}", found.join("\n"));
}

#[test]
fn the_window_reaches_methods_privacy_and_candle_only_through_the_job() {
    let (files, found) = violations(
        "gui",
        &["crate::privacy", "crate::methods", "crate::nn", "candle"],
    );
    assert!(files >= 8);
    assert!(found.is_empty(), "{}", found.join("\n"));
}

#[test]
fn methods_and_nn_never_reach_up() {
    for module in ["methods", "nn", "data", "eval"] {
        let (_, found) = violations(
            module,
            &["crate::job", "crate::gui", "crate::cli", "egui", "eframe"],
        );
        assert!(found.is_empty(), "{}", found.join("\n"));
    }
}

/// Compute kernels take and return plain numbers: the GPU layer knows no method, tensor
/// library, privacy code or window.
#[test]
fn the_gpu_layer_stands_alone() {
    let (_, found) = violations(
        "gpu",
        &[
            "crate::methods",
            "crate::privacy",
            "crate::job",
            "crate::gui",
            "crate::nn",
            "candle",
        ],
    );
    assert!(found.is_empty(), "{}", found.join("\n"));
}

/// The check itself must be able to fail: a banned line in a scratch module is found.
#[test]
fn the_layering_check_finds_a_planted_import() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/gui");
    let hits: usize = rust_files(&dir)
        .iter()
        .map(|p| {
            std::fs::read_to_string(p)
                .unwrap()
                .lines()
                .filter(|l| l.split("//").next().unwrap_or("").contains("crate::job"))
                .count()
        })
        .sum();
    assert!(
        hits > 0,
        "the scan reads the window's code (it must import the job)"
    );
}

/// The evaluation's networks and its classifier zoo share `eval::xy`, not each other.
#[test]
fn eval_networks_do_not_import_the_classifier_zoo() {
    let net =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("src/eval/net.rs"))
            .unwrap();
    let uses: Vec<&str> = net
        .lines()
        .filter(|l| l.split("//").next().unwrap_or("").contains("models::"))
        .collect();
    assert!(uses.is_empty(), "eval/net.rs uses models: {uses:?}");
}

/// Issue #40: a plain clone passes its own tests. No test and no default path reads the
/// shared folder that sits beside the repository only on the development machine; data a
/// test needs is copied under `tests/` or `assets/`, and tests of large data are ignored
/// with the command that runs them.
#[test]
fn no_test_or_default_reaches_outside_the_repo() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    // Built here so that this file does not match itself.
    let needles = [["..", "/shared"].concat(), ["shared", "(\""].concat()];
    let mut found = Vec::new();
    for dir in ["src", "tests"] {
        for path in rust_files(&root.join(dir)) {
            let text = std::fs::read_to_string(&path).unwrap();
            for (i, line) in text.lines().enumerate() {
                let code = line.split("//").next().unwrap_or("");
                if needles.iter().any(|n| code.contains(n.as_str())) {
                    found.push(format!("{}:{}: {}", path.display(), i + 1, line.trim()));
                }
            }
        }
    }
    assert!(
        found.is_empty(),
        "reads outside the repository:\n{}",
        found.join("\n")
    );
}
