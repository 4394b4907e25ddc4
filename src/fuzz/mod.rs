//! Fuzzing the readers of untrusted files on stable Rust: a seeded mutation driver
//! ([`mutate`]) over an in-repo seed corpus (`tests/data/bad` and `tests/data/fuzz`,
//! compiled in), with eight targets — the CSV loader (through schema inference and
//! encoding), the IDX loader, the schema JSON, the model-file reader (through
//! sampling), and the workbook, Parquet/Arrow, SPSS and Stata readers (through the same
//! inference and encoding as CSV). Each execution runs under `catch_unwind`; a panic is a finding.
//!
//! No coverage instrumentation is needed to run it (none exists on stable). As feedback,
//! an input whose *outcome* — `ok`, or its error message with numbers and names blanked —
//! was never seen before joins the corpus, so mutations reach past the first check. The
//! count of distinct outcomes is reported as a coarse coverage measure.
//!
//! Runs: `dpsynth fuzz --target all --executions 1000000` (hidden subcommand), and a short
//! run in the test suite (`tests/engine/fuzz.rs`).

pub mod mutate;

use std::collections::HashSet;
use std::panic::AssertUnwindSafe;
use std::time::Instant;

use rand::SeedableRng as _;
use rand::rngs::StdRng;
use rand::{Rng as _, RngCore as _};
use serde::Serialize;

use crate::data::csv::{LoadOptions, parse_csv_bytes};
use crate::data::encode::Encoding;
use crate::data::schema::Schema;
use crate::data::{Dataset, image, infer};
use crate::methods::released::{Draw, ReleasedModel};

/// A reader under test.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Target {
    Csv,
    Idx,
    Schema,
    Model,
    /// Excel/ODS workbooks (calamine).
    Workbook,
    /// Parquet and Arrow IPC (polars).
    Columnar,
    Spss,
    Stata,
}

impl Target {
    pub const ALL: [Target; 8] = [
        Target::Csv,
        Target::Idx,
        Target::Schema,
        Target::Model,
        Target::Workbook,
        Target::Columnar,
        Target::Spss,
        Target::Stata,
    ];

    pub fn parse(s: &str) -> Option<Vec<Target>> {
        Some(match s {
            "csv" => vec![Target::Csv],
            "idx" => vec![Target::Idx],
            "schema" => vec![Target::Schema],
            "model" => vec![Target::Model],
            "workbook" => vec![Target::Workbook],
            "columnar" => vec![Target::Columnar],
            "spss" => vec![Target::Spss],
            "stata" => vec![Target::Stata],
            "all" => Self::ALL.to_vec(),
            _ => return None,
        })
    }

    pub fn name(self) -> &'static str {
        match self {
            Target::Csv => "csv",
            Target::Idx => "idx",
            Target::Schema => "schema",
            Target::Model => "model",
            Target::Workbook => "workbook",
            Target::Columnar => "columnar",
            Target::Spss => "spss",
            Target::Stata => "stata",
        }
    }

    /// The seed corpus, compiled in so the binary fuzzes anywhere.
    fn seeds(self) -> Vec<Vec<u8>> {
        macro_rules! files {
            ($($p:literal),* $(,)?) => { vec![$(include_bytes!(concat!(env!("CARGO_MANIFEST_DIR"), "/", $p)).to_vec()),*] };
        }
        match self {
            Target::Csv => files![
                "tests/data/fuzz/adult-40.csv",
                "tests/data/fuzz/pixels.csv",
                "tests/data/fuzz/semicolons.csv",
                "tests/data/bad/all_columns_missing.csv",
                "tests/data/bad/crlf_ragged.csv",
                "tests/data/bad/duplicate_header.csv",
                "tests/data/bad/empty_header_name.csv",
                "tests/data/bad/gzip_csv.csv",
                "tests/data/bad/header_only.csv",
                "tests/data/bad/image_pixel_out_of_range.csv",
                "tests/data/bad/invalid_utf8.csv",
                "tests/data/bad/latin1.csv",
                "tests/data/bad/mixed_types.csv",
                "tests/data/bad/nul_bytes.csv",
                "tests/data/bad/one_row.csv",
                "tests/data/bad/only_missing_column.csv",
                "tests/data/bad/ragged_long.csv",
                "tests/data/bad/ragged_short.csv",
                "tests/data/bad/thousands_separators.csv",
                "tests/data/bad/unclosed_quote.csv",
            ],
            Target::Idx => files![
                "tests/data/fuzz/tiny-images-idx3-ubyte",
                "tests/data/fuzz/tiny-images-idx3-ubyte.gz",
                "tests/data/fuzz/tiny-labels-idx1-ubyte",
                "tests/data/bad/header-cut-images-idx3-ubyte",
                "tests/data/bad/huge-dims-images-idx3-ubyte",
                "tests/data/bad/short-images-idx3-ubyte",
                "tests/data/bad/truncated-images-idx3-ubyte.gz",
                "tests/data/bad/wrong-dims-images-idx3-ubyte",
                "tests/data/bad/zero-images-idx3-ubyte",
            ],
            Target::Schema => files![
                "tests/data/fuzz/adult.schema.json",
                "assets/adult/adult_pearl_sdgym.schema.json",
            ],
            Target::Model => files![
                "tests/data/fuzz/boosted.dpsynth",
                "tests/data/fuzz/merf.dpsynth",
            ],
            Target::Workbook => files![
                "tests/data/formats/bad/merged.xlsx",
                "tests/data/formats/bad/empty_sheet.xlsx",
                "tests/data/formats/small.xlsx",
            ],
            Target::Columnar => files![
                "tests/data/formats/small.parquet",
                "tests/data/formats/small.arrow",
            ],
            Target::Spss => files!["tests/data/formats/survey.sav"],
            Target::Stata => files!["tests/data/formats/small.dta"],
        }
    }

    /// Tokens worth inserting: what the format's parser branches on.
    fn tokens(self) -> &'static [&'static [u8]] {
        match self {
            Target::Csv => &[
                b"NaN",
                b"1e309",
                b"-0",
                b"?",
                b"\"\"",
                b"\r\n",
                b",,,",
                b" 1.5 ",
                b"label",
                b"pixel0",
                b"99999999999999999999999",
                b"\xEF\xBB\xBF",
                b"\"a\nb\"",
            ],
            Target::Idx => &[
                b"\x00\x00\x08\x03",
                b"\x00\x00\x08\x01",
                b"\xff\xff\xff\xff",
            ],
            Target::Workbook | Target::Columnar | Target::Spss | Target::Stata => &[
                b"\x00\x00\x00\x00",
                b"\xff\xff\xff\xff",
                b"\xff\xff\xff\x7f",
                b"PK\x03\x04",
                b"PAR1",
                b"<c r=\"A1\"",
                b"$FL2",
            ],
            Target::Schema | Target::Model => &[
                b"null",
                b"-1",
                b"1e400",
                b"\"\"",
                b"[]",
                b"{}",
                b"true",
                b"\"categorical\"",
                b"\"continuous\"",
                b"\"binary\"",
                b"0.0",
                b"4294967296",
            ],
        }
    }

    /// One execution: `Ok(())` when the input was accepted (and used), else the error.
    fn exec(self, input: &[u8]) -> Result<(), String> {
        match self {
            Target::Csv => csv(input),
            Target::Idx => idx(input),
            Target::Schema => schema(input),
            Target::Model => model(input),
            Target::Workbook => file(input, "xlsx"),
            Target::Columnar => file(input, "parquet"),
            Target::Spss => file(input, "sav"),
            Target::Stata => file(input, "dta"),
        }
    }
}

/// A binary table format: the bytes as a file (the readers take paths), opened, its
/// schema guessed and the table encoded, as the CSV target does.
fn file(input: &[u8], ext: &str) -> Result<(), String> {
    let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
    let path = dir.path().join(format!("fuzz.{ext}"));
    std::fs::write(&path, input).map_err(|e| e.to_string())?;
    // The temporary folder's name would make every message a new outcome.
    let dir_name = dir.path().display().to_string();
    let Dataset::Table(table) = crate::data::open(&path, &LoadOptions::default())
        .map_err(|e| e.to_string().replace(&dir_name, ""))?
    else {
        return Ok(());
    };
    use_table(table)
}

/// What a run does with an opened table: guess its schema, encode it, key it.
fn use_table(table: crate::data::Table) -> Result<(), String> {
    let schema = infer::infer_schema(&table)
        .map_err(|e| e.to_string())?
        .schema;
    let enc = Encoding::new(&schema).map_err(|e| e.to_string())?;
    enc.encode(&table).map_err(|e| e.to_string())?;
    crate::data::digest::content_key(&Dataset::Table(table));
    Ok(())
}

fn csv(input: &[u8]) -> Result<(), String> {
    let table = parse_csv_bytes(input.to_vec(), "fuzz.csv", &LoadOptions::default())
        .map_err(|e| e.to_string())?;
    if image::is_image_header(&table) {
        let set = image::from_pixel_table(&table, "fuzz.csv").map_err(|e| e.to_string())?;
        set.encode().map_err(|e| e.to_string())?;
        return Ok(());
    }
    use_table(table)
}

fn idx(input: &[u8]) -> Result<(), String> {
    let set = image::parse_idx(input, "fuzz-images-idx3-ubyte").map_err(|e| e.to_string())?;
    set.label_counts();
    if set.labels.is_none() {
        set.encode().map_err(|e| e.to_string())?;
    }
    Ok(())
}

fn schema(input: &[u8]) -> Result<(), String> {
    let text = std::str::from_utf8(input).map_err(|e| e.to_string())?;
    let s = Schema::from_json(text, "fuzz.schema.json").map_err(|e| e.to_string())?;
    Encoding::new(&s).map_err(|e| e.to_string())?;
    Ok(())
}

fn model(input: &[u8]) -> Result<(), String> {
    // The header alone (the kept-runs list reads only it) must fail cleanly too.
    let header = ReleasedModel::header_from(input, "fuzz.dpsynth");
    let m = ReleasedModel::from_bytes(input, "fuzz.dpsynth", &candle_core::Device::Cpu)
        .map_err(|e| e.to_string())?;
    // What loads whole has the header the header alone gives.
    assert!(
        header.is_ok(),
        "the full load accepted a file whose header alone was refused: {header:?}"
    );
    let draw = if m.mixture.is_some() {
        Draw::Boosted
    } else {
        Draw::Generator
    };
    m.sample_with(5, Some(1), draw).map_err(|e| e.to_string())?;
    Ok(())
}

/// A model file whose header (as JSON) was mutated and which was then written again with
/// a valid checksum: byte mutations alone almost never get past the checksum.
fn resealed(seed: &[u8], rng: &mut StdRng) -> Option<Vec<u8>> {
    let m = ReleasedModel::from_bytes(seed, "seed", &candle_core::Device::Cpu).ok()?;
    let mut v = serde_json::to_value(&m.header).ok()?;
    for _ in 0..1 + rng.random_range(0..3) {
        mutate_json(&mut v, rng);
    }
    let header = serde_json::from_value(v).ok()?;
    ReleasedModel { header, ..m }.to_bytes().ok()
}

/// Changes one leaf (or drops one key) of a JSON tree, chosen at random.
fn mutate_json(v: &mut serde_json::Value, rng: &mut StdRng) {
    use serde_json::Value as J;
    match v {
        J::Object(map) if !map.is_empty() => {
            let keys: Vec<String> = map.keys().cloned().collect();
            let k = &keys[rng.random_range(0..keys.len())];
            if rng.random_range(0..8) == 0 {
                map.remove(k);
            } else if let Some(child) = map.get_mut(k) {
                mutate_json(child, rng);
            }
        }
        J::Array(items) if !items.is_empty() => {
            let i = rng.random_range(0..items.len());
            match rng.random_range(0..6) {
                0 => {
                    items.remove(i);
                }
                1 => {
                    let c = items[i].clone();
                    items.push(c);
                }
                _ => mutate_json(&mut items[i], rng),
            }
        }
        _ => {
            *v = match rng.random_range(0..9) {
                0 => J::Null,
                1 => J::from(-1),
                2 => J::from(0),
                3 => J::from(u32::MAX as u64 + 1),
                4 => J::from(1e300),
                5 => J::from(""),
                6 => J::from(rng.next_u32() % 1000),
                7 => J::from(-0.5),
                _ => J::from(true),
            };
        }
    }
}

/// What a fuzz run found.
#[derive(Debug, Clone, Serialize)]
pub struct Report {
    pub target: Target,
    pub executions: u64,
    /// Inputs accepted (and used to the end).
    pub accepted: u64,
    /// Inputs refused with an error message.
    pub refused: u64,
    /// Distinct outcomes (`ok` or an error message with numbers and names blanked).
    pub outcomes: usize,
    /// Those outcomes, sorted.
    #[serde(skip)]
    pub outcome_list: Vec<String>,
    /// Inputs that panicked: each is a bug.
    pub panics: u64,
    /// The first panicking inputs' messages (at most 5).
    pub panic_messages: Vec<String>,
    /// Inputs that crashed a reader in its child process (Parquet, IPC): contained, so
    /// not a failure of the run, but kept in `findings` like panics.
    pub contained_crashes: u64,
    pub seconds: f64,
}

/// An error message with the digits and quoted names blanked, so one check's refusals
/// count as one outcome.
fn outcome_class(r: &Result<(), String>) -> String {
    match r {
        Ok(()) => "ok".into(),
        Err(e) => {
            let mut out = String::new();
            let mut quoted = false;
            for c in e.chars() {
                if c == '\'' {
                    quoted = !quoted;
                    out.push('\'');
                } else if quoted {
                } else if c.is_ascii_digit() {
                    if !out.ends_with('#') {
                        out.push('#');
                    }
                } else {
                    out.push(c);
                }
            }
            out.chars().take(80).collect()
        }
    }
}

/// Runs `executions` mutated inputs through `target`. Panicking inputs are written to
/// `findings` when given. The panic hook is silenced for the run.
pub fn run(
    target: Target,
    executions: u64,
    seed: u64,
    findings: Option<&std::path::Path>,
) -> Report {
    let t0 = Instant::now();
    let mut rng = StdRng::seed_from_u64(seed ^ (target as u64).wrapping_mul(0x9E37_79B9));
    let seeds = target.seeds();
    let mut corpus = seeds.clone();
    let mut seen: HashSet<String> = HashSet::new();
    let hook = std::panic::take_hook();
    std::panic::set_hook(Box::new(|_| {}));
    let (mut accepted, mut refused, mut panics, mut contained) = (0, 0, 0, 0);
    let mut panic_messages = Vec::new();
    for i in 0..executions {
        let input = if (i as usize) < seeds.len() {
            seeds[i as usize].clone()
        } else if target == Target::Model && rng.random_range(0..2) == 0 {
            // Half the model inputs change the header's meaning behind a valid checksum.
            let s = &seeds[rng.random_range(0..seeds.len())];
            match resealed(s, &mut rng) {
                Some(v) => v,
                None => continue,
            }
        } else {
            let mut v = corpus[rng.random_range(0..corpus.len())].clone();
            mutate::mutate(&mut v, target.tokens(), &corpus, &mut rng);
            v
        };
        let result = std::panic::catch_unwind(AssertUnwindSafe(|| target.exec(&input)));
        match result {
            Ok(r) => {
                if r.is_ok() {
                    accepted += 1;
                } else {
                    refused += 1;
                }
                if r.as_ref()
                    .is_err_and(|e| e.contains("the reader crashed on it"))
                {
                    contained += 1;
                    keep_finding(
                        findings,
                        &format!("{}-crash-{i}.bin", target.name()),
                        &input,
                    );
                }
                if seen.insert(outcome_class(&r)) && corpus.len() < 1_000 {
                    corpus.push(input);
                }
            }
            Err(p) => {
                panics += 1;
                if panic_messages.len() < 5 {
                    panic_messages.push(panic_message(p.as_ref()));
                }
                keep_finding(findings, &format!("{}-{i}.bin", target.name()), &input);
            }
        }
    }
    std::panic::set_hook(hook);
    Report {
        target,
        executions: accepted + refused + panics,
        accepted,
        refused,
        outcomes: seen.len(),
        outcome_list: {
            let mut v: Vec<String> = seen.into_iter().collect();
            v.sort();
            v
        },
        panics,
        panic_messages,
        contained_crashes: contained,
        seconds: t0.elapsed().as_secs_f64(),
    }
}

/// Saves an input that crashed a reader under `dir` (when findings are kept); a finding
/// that cannot be saved is not worth stopping the fuzzing for.
fn keep_finding(dir: Option<&std::path::Path>, name: &str, input: &[u8]) {
    if let Some(dir) = dir {
        let _ = std::fs::create_dir_all(dir)
            .and_then(|_| crate::util::atomic::write_atomic(&dir.join(name), input));
    }
}

/// A caught panic's message.
fn panic_message(p: &(dyn std::any::Any + Send)) -> String {
    p.downcast_ref::<String>()
        .cloned()
        .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
        .unwrap_or_else(|| "(no message)".into())
}
