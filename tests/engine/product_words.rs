//! The repository speaks of the product, not of how it was made: no text a contributor or
//! a user reads names a development session, a stop or a tracker's issue number, which
//! mean nothing outside the team that wrote them. A measured figure names the command and
//! the commit instead.

use std::path::{Path, PathBuf};

/// Folders and files whose text is read; binaries, data and the build are not.
const ROOTS: [&str; 11] = [
    "src",
    "tests",
    "guide",
    "docs",
    "scripts",
    "packaging",
    "assets",
    "README.md",
    "ARCHITECTURE.md",
    "Cargo.toml",
    ".ci",
];
const TEXT: [&str; 12] = [
    "rs", "md", "json", "rules", "sh", "py", "txt", "toml", "xml", "desktop", "wgsl", "yml",
];

/// The words that name a piece of the team's history when a number follows them.
const HISTORY_WORDS: [&str; 3] = ["session", "issue", "stop"];

fn text_files(path: &Path, out: &mut Vec<PathBuf>) {
    if path.is_dir() {
        let Ok(entries) = std::fs::read_dir(path) else {
            return;
        };
        for e in entries.flatten() {
            text_files(&e.path(), out);
        }
    } else {
        let ext = path.extension().and_then(|e| e.to_str()).unwrap_or("");
        let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
        if TEXT.contains(&ext) || name == "run" {
            out.push(path.to_path_buf());
        }
    }
}

/// After `at`: optional spaces, an optional `#`, optional spaces, then a digit.
fn number_follows(rest: &[u8]) -> bool {
    let mut i = 0;
    while i < rest.len() && rest[i] == b' ' {
        i += 1;
    }
    if i < rest.len() && rest[i] == b'#' {
        i += 1;
    }
    while i < rest.len() && rest[i] == b' ' {
        i += 1;
    }
    i < rest.len() && rest[i].is_ascii_digit()
}

/// Whether a line names a session, issue or stop by number (one of the words, an
/// optional `#`, digits), or cites a tracker number alone (`#` and up to three digits
/// after a space or an opening parenthesis); the test below spells the cases out.
fn names_history(line: &str) -> bool {
    let lower = line.to_ascii_lowercase();
    let b = lower.as_bytes();
    for word in HISTORY_WORDS {
        let mut from = 0;
        while let Some(k) = lower[from..].find(word) {
            let start = from + k;
            let mut end = start + word.len();
            from = end;
            let starts_word = start == 0 || !b[start - 1].is_ascii_alphanumeric();
            if end < b.len() && b[end] == b's' {
                end += 1;
            }
            if starts_word && number_follows(&b[end..]) {
                return true;
            }
        }
    }
    b.windows(2).enumerate().any(|(i, w)| {
        w[0] == b'#'
            && w[1].is_ascii_digit()
            && (i == 0 || b[i - 1] == b' ' || b[i - 1] == b'(')
            && {
                let digits = b[i + 1..].iter().take_while(|c| c.is_ascii_digit()).count();
                let after = b.get(i + 1 + digits);
                digits <= 3 && !after.is_some_and(|c| c.is_ascii_alphanumeric())
            }
    })
}

#[test]
fn the_check_finds_history_and_passes_product_words() {
    let word = |w: &str, rest: &str| format!("{w}{rest}");
    assert!(names_history(&word("measured in sess", "ion 43")));
    assert!(names_history(&word("Sess", "ions 40–43 (a step)")));
    assert!(names_history(&format!("see iss{}#{}, item 3", "ue ", 42)));
    assert!(names_history(&word("after st", "op 57's CI run")));
    assert!(names_history(&format!("kept runs ({}{}): listed", "#", 41)));
    assert!(!names_history("a stop after 3 rounds is heard at once"));
    assert!(!names_history("#[derive(Debug)]"));
    assert!(!names_history("the session keeps 4 runs"));
    assert!(!names_history("color: #4a4a4a; issues are reported"));
    assert!(!names_history("stops: 12 kept"));
}

#[test]
fn no_text_names_a_development_session_or_issue() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    for r in ROOTS {
        text_files(&root.join(r), &mut files);
    }
    assert!(files.len() > 100, "only {} text files found", files.len());
    let mut found = Vec::new();
    for f in files {
        let Ok(text) = std::fs::read_to_string(&f) else {
            continue;
        };
        for (i, line) in text.lines().enumerate() {
            if names_history(line) {
                let shown: String = line.trim().chars().take(100).collect();
                found.push(format!("{}:{}: {shown}", f.display(), i + 1));
            }
        }
    }
    assert!(
        found.is_empty(),
        "name the command and the commit instead:\n{}",
        found.join("\n")
    );
}
