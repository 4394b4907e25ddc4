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
fn violations(module: &str, banned: &[&str], exempt: &[&str]) -> (usize, Vec<String>) {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("src")
        .join(module);
    let files = rust_files(&dir);
    let mut found = Vec::new();
    for path in &files {
        if exempt.iter().any(|e| path.ends_with(e)) {
            continue;
        }
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

/// One layering rule: the files under `src/<module>` may not name any of `banned`, except
/// the files named in `exempt` (each with its reason in the rule's `why`).
struct Rule {
    module: &'static str,
    banned: &'static [&'static str],
    exempt: &'static [&'static str],
    /// Why the rule exists (printed with a violation, so whoever trips it knows).
    why: &'static str,
}

/// The rooms of ARCHITECTURE.md and what each may not use.
const RULES: &[Rule] = &[
    Rule {
        module: "privacy",
        exempt: &[],
        banned: &[
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
        why: "the privacy core is small enough to audit on its own: mechanisms, accountants \
              and the ledger, with no ML, data-frame or window code a reviewer must also read",
    },
    Rule {
        module: "gui",
        exempt: &[],
        banned: &["crate::privacy", "crate::methods", "crate::nn", "candle"],
        why: "the window only draws: every run, charge and model read goes through the job, \
              so the CLI and the window cannot disagree about what a run spent",
    },
    Rule {
        module: "cli",
        exempt: &["bench.rs"],
        banned: &["crate::methods"],
        why: "the command line runs, samples and evaluates through the job, as the window \
              does, so both say the same about what a run spent (`dpsynth bench` times \
              methods' own kernels, so it alone names them)",
    },
    Rule {
        module: "methods",
        exempt: &[],
        banned: &[
            "crate::job",
            "crate::gui",
            "crate::cli",
            "egui",
            "eframe",
            "datafusion",
            "ballista",
        ],
        why: "a method trains on rows it is given; where the rows, the ledger and the files \
              come from is the job's business (a query engine's types stay in data/engine: \
              a method sees groups of cells)",
    },
    Rule {
        module: "nn",
        exempt: &[],
        banned: &[
            "crate::job",
            "crate::gui",
            "crate::cli",
            "crate::methods",
            "egui",
            "eframe",
        ],
        why: "layers and DP-SGD know no method, run or window, so every method shares them",
    },
    Rule {
        module: "data",
        exempt: &[],
        banned: &[
            "crate::job",
            "crate::gui",
            "crate::cli",
            "crate::methods",
            "egui",
            "eframe",
        ],
        why: "readers and schemas are below everything that uses them",
    },
    Rule {
        module: "eval",
        exempt: &[],
        banned: &[
            "crate::job",
            "crate::gui",
            "crate::cli",
            "crate::methods",
            "egui",
            "eframe",
        ],
        why: "the metrics score tables, not runs: a synthetic file from any tool can be scored",
    },
    Rule {
        module: "gpu",
        exempt: &[],
        banned: &[
            "crate::methods",
            "crate::privacy",
            "crate::job",
            "crate::gui",
            "crate::nn",
            "candle",
        ],
        why: "compute kernels take and return plain numbers, so they can be tested against \
              plain loops",
    },
    Rule {
        module: "job",
        exempt: &[],
        banned: &[
            "crate::gui",
            "crate::cli",
            "egui",
            "eframe",
            "datafusion",
            "ballista",
        ],
        why: "the job is what the window and the CLI share: it never calls either (and it \
              reaches a query engine only through data/engine)",
    },
];

#[test]
fn every_layer_keeps_to_its_rule() {
    let mut report = Vec::new();
    for rule in RULES {
        let (files, found) = violations(rule.module, rule.banned, rule.exempt);
        assert!(
            files >= 1,
            "src/{} has no files: the rule checks nothing",
            rule.module
        );
        if !found.is_empty() {
            report.push(format!("{}\n  why: {}", found.join("\n"), rule.why));
        }
    }
    assert!(report.is_empty(), "{}", report.join("\n"));
}

/// Every `src` file as its module path (`gui/results/mod.rs` → `["gui", "results"]`).
fn modules() -> Vec<(Vec<String>, PathBuf)> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    rust_files(&src)
        .into_iter()
        .map(|p| {
            let rel = p.strip_prefix(&src).unwrap().with_extension("");
            let mut parts: Vec<String> = rel
                .iter()
                .map(|s| s.to_string_lossy().into_owned())
                .collect();
            if matches!(
                parts.last().map(String::as_str),
                Some("mod" | "lib" | "main")
            ) {
                parts.pop();
            }
            (parts, p)
        })
        .collect()
}

/// The paths a file names through `crate::…` and `super::…`, resolved to module paths
/// (`use a::{b, c::d}` gives both). Comments and the `#[cfg(test)] mod tests` at a
/// file's end are left out: tests may reach anything.
fn named_paths(module: &[String], text: &str) -> Vec<Vec<String>> {
    let code: String = text
        .split("#[cfg(test)]\nmod tests")
        .next()
        .unwrap_or("")
        .split("#[cfg(test)]\npub(super) mod tests")
        .next()
        .unwrap_or("")
        .lines()
        .map(|l| l.split("//").next().unwrap_or(""))
        .collect::<Vec<_>>()
        .join("\n");
    let ident = |c: char| c.is_alphanumeric() || c == '_';
    let mut out = Vec::new();
    let bytes: Vec<char> = code.chars().collect();
    let mut i = 0;
    while i < bytes.len() {
        let at_word = i == 0 || !ident(bytes[i - 1]);
        let rest: String = bytes[i..bytes.len().min(i + 7)].iter().collect();
        let (base, skip) = if at_word && rest.starts_with("crate::") {
            (Vec::new(), 7)
        } else if at_word && rest.starts_with("super::") {
            (module[..module.len().saturating_sub(1)].to_vec(), 7)
        } else {
            i += 1;
            continue;
        };
        i += skip;
        let mut path = base;
        loop {
            let start = i;
            while i < bytes.len() && ident(bytes[i]) {
                i += 1;
            }
            let word: String = bytes[start..i].iter().collect();
            if word == "super" {
                path.pop();
            } else if !word.is_empty() {
                path.push(word);
            }
            if bytes.get(i) == Some(&':') && bytes.get(i + 1) == Some(&':') {
                i += 2;
                if bytes.get(i) == Some(&'{') {
                    let end = bytes[i..]
                        .iter()
                        .position(|&c| c == '}')
                        .map_or(bytes.len(), |e| i + e);
                    let group: String = bytes[i + 1..end].iter().collect();
                    for item in group.split(',') {
                        let first = item.trim().split("::").next().unwrap_or("").trim();
                        let first = first.split_whitespace().next().unwrap_or("");
                        let mut p = path.clone();
                        if !first.is_empty() && first != "self" {
                            p.push(first.to_string());
                        }
                        out.push(p);
                    }
                    i = end;
                    break;
                }
                continue;
            }
            out.push(path);
            break;
        }
    }
    out
}

/// The file-level dependency graph: an edge from each file to the longest module path
/// with a file that it names.
fn file_graph() -> Vec<(String, Vec<String>)> {
    let mods = modules();
    let known: std::collections::HashSet<Vec<String>> =
        mods.iter().map(|(m, _)| m.clone()).collect();
    let resolve = |p: &[String]| -> Option<Vec<String>> {
        (1..=p.len())
            .rev()
            .map(|n| p[..n].to_vec())
            .find(|q| known.contains(q))
    };
    mods.iter()
        .map(|(m, path)| {
            let text = std::fs::read_to_string(path).unwrap();
            let mut deps: Vec<String> = named_paths(m, &text)
                .iter()
                .filter_map(|p| resolve(p))
                .filter(|d| d != m)
                .map(|d| d.join("/"))
                .collect();
            deps.sort();
            deps.dedup();
            (m.join("/"), deps)
        })
        .collect()
}

/// The groups of files that reach each other (Tarjan's strongly connected components of
/// more than one file).
fn cycles(graph: &[(String, Vec<String>)]) -> Vec<Vec<String>> {
    let index: std::collections::HashMap<&str, usize> = graph
        .iter()
        .enumerate()
        .map(|(i, (n, _))| (n.as_str(), i))
        .collect();
    let adj: Vec<Vec<usize>> = graph
        .iter()
        .map(|(_, ds)| {
            ds.iter()
                .filter_map(|d| index.get(d.as_str()).copied())
                .collect()
        })
        .collect();
    struct State {
        next: usize,
        idx: Vec<Option<usize>>,
        low: Vec<usize>,
        stack: Vec<usize>,
        on: Vec<bool>,
        found: Vec<Vec<usize>>,
    }
    fn visit(v: usize, adj: &[Vec<usize>], s: &mut State) {
        s.idx[v] = Some(s.next);
        s.low[v] = s.next;
        s.next += 1;
        s.stack.push(v);
        s.on[v] = true;
        for &w in &adj[v] {
            match s.idx[w] {
                None => {
                    visit(w, adj, s);
                    s.low[v] = s.low[v].min(s.low[w]);
                }
                Some(iw) if s.on[w] => s.low[v] = s.low[v].min(iw),
                Some(_) => {}
            }
        }
        if Some(s.low[v]) == s.idx[v] {
            let mut comp = Vec::new();
            while let Some(w) = s.stack.pop() {
                s.on[w] = false;
                comp.push(w);
                if w == v {
                    break;
                }
            }
            if comp.len() > 1 {
                s.found.push(comp);
            }
        }
    }
    let n = graph.len();
    let mut s = State {
        next: 0,
        idx: vec![None; n],
        low: vec![0; n],
        stack: Vec::new(),
        on: vec![false; n],
        found: Vec::new(),
    };
    for v in 0..n {
        if s.idx[v].is_none() {
            visit(v, &adj, &mut s);
        }
    }
    s.found
        .into_iter()
        .map(|c| {
            let mut names: Vec<String> = c.into_iter().map(|i| graph[i].0.clone()).collect();
            names.sort();
            names
        })
        .collect()
}

/// No two files reach each other, directly or round a loop. A cycle means
/// neither file can be read, tested or moved without the other; the fix is usually to
/// move the shared shapes into a third file both use (as `eval/results.rs`,
/// `methods/method.rs`, `privacy/mechanism.rs`'s `Charge` and `nn/dcgan.rs` were).
#[test]
fn no_two_files_depend_on_each_other() {
    let graph = file_graph();
    assert!(graph.len() > 100, "the scan found {} files", graph.len());
    let edges: usize = graph.iter().map(|(_, d)| d.len()).sum();
    assert!(edges > 200, "the scan found only {edges} file dependencies");
    let found = cycles(&graph);
    let text: Vec<String> = found
        .iter()
        .map(|c| {
            let inside: Vec<String> = c
                .iter()
                .map(|f| {
                    let deps = &graph.iter().find(|(n, _)| n == f).unwrap().1;
                    let within: Vec<&str> = deps
                        .iter()
                        .filter(|d| c.contains(d))
                        .map(String::as_str)
                        .collect();
                    format!("  {f} -> {}", within.join(", "))
                })
                .collect();
            inside.join("\n")
        })
        .collect();
    assert!(found.is_empty(), "file cycles:\n{}", text.join("\n\n"));
}

/// The cycle check can fail: a planted loop through `super::`, `crate::` and a use group
/// is found, and a chain is not.
#[test]
fn the_cycle_check_finds_a_planted_loop() {
    let m = |s: &str| s.split('/').map(String::from).collect::<Vec<_>>();
    let a = named_paths(
        &m("x/a"),
        "use super::b::Thing;\nfn f() { crate::y::{c, d::E}; }",
    );
    assert!(
        a.contains(&m("x/b/Thing")) && a.contains(&m("y/c")) && a.contains(&m("y/d")),
        "{a:?}"
    );
    let g = |pairs: &[(&str, &[&str])]| -> Vec<(String, Vec<String>)> {
        pairs
            .iter()
            .map(|(n, ds)| (n.to_string(), ds.iter().map(|d| d.to_string()).collect()))
            .collect()
    };
    let looped = g(&[
        ("x/a", &["x/b"]),
        ("x/b", &["y/c"]),
        ("y/c", &["x/a"]),
        ("z", &["x/a"]),
    ]);
    assert_eq!(
        cycles(&looped),
        vec![vec!["x/a".to_string(), "x/b".into(), "y/c".into()]]
    );
    let chain = g(&[("x/a", &["x/b"]), ("x/b", &["y/c"]), ("y/c", &[])]);
    assert!(cycles(&chain).is_empty());
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

/// A plain clone passes its own tests. No test and no default path reads the
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

/// Whether a line opens a function: `fn`, after any of `pub`, `pub(…)`, `const`, `async`
/// and `unsafe`.
fn opens_fn(line: &str) -> bool {
    let mut l = line.trim_start();
    if let Some(rest) = l.strip_prefix("pub(") {
        l = rest.split_once(')').map_or("", |(_, r)| r).trim_start();
    } else if let Some(rest) = l.strip_prefix("pub ") {
        l = rest.trim_start();
    }
    for word in ["const ", "async ", "unsafe "] {
        if let Some(rest) = l.strip_prefix(word) {
            l = rest.trim_start();
        }
    }
    l.starts_with("fn ")
}

/// Each function of `text` longer than `most` lines, as (name line, lines): brace-matched
/// from its `fn` line, `#[cfg(test)]` modules skipped (as `scripts/long_functions.py`).
fn long_functions(text: &str, most: usize) -> Vec<(String, usize)> {
    let lines: Vec<&str> = text.lines().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        if lines[i].trim_start().starts_with("#[cfg(test)]") {
            break;
        }
        if !opens_fn(lines[i]) {
            i += 1;
            continue;
        }
        let (mut depth, mut started, mut j) = (0i64, false, i);
        while j < lines.len() {
            for ch in lines[j].chars() {
                match ch {
                    '{' => (depth, started) = (depth + 1, true),
                    '}' => depth -= 1,
                    _ => {}
                }
            }
            if (started && depth == 0) || (!started && lines[j].trim_end().ends_with(';')) {
                break;
            }
            j += 1;
        }
        if started && j + 1 - i > most {
            out.push((lines[i].trim().to_string(), j + 1 - i));
        }
        i = if started { j + 1 } else { i + 1 };
    }
    out
}

/// Sizes: no file in `src/` over 600 lines and no function over 80, so each
/// room stays small enough to read whole.
#[test]
fn no_file_over_600_lines_and_no_function_over_80() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut found = Vec::new();
    for path in rust_files(&src) {
        let text = std::fs::read_to_string(&path).unwrap();
        let n = text.lines().count();
        if n > 600 {
            found.push(format!("{}: {n} lines", path.display()));
        }
        for (f, n) in long_functions(&text, 80) {
            found.push(format!("{}: `{f}` {n} lines", path.display()));
        }
    }
    assert!(found.is_empty(), "too long:\n{}", found.join("\n"));
}

/// The size check can fail: a function of 81 lines is found, one of 80 is not, and a
/// test module's functions are not counted.
#[test]
fn the_size_check_finds_a_long_function() {
    let body = |n: usize| format!("pub(crate) fn f() {{\n{}}}\n", "    x();\n".repeat(n - 2));
    assert_eq!(long_functions(&body(81), 80).len(), 1);
    assert!(long_functions(&body(80), 80).is_empty());
    let tested = format!("#[cfg(test)]\nmod tests {{\n{}}}\n", body(100));
    assert!(long_functions(&tested, 80).is_empty());
}
