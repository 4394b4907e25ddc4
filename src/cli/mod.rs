//! The command line (DESIGN.md §7): a contract others script against.
//!
//! Exit status: 0 success, 2 bad usage (clap), 1 any other error with a one-paragraph
//! message on stderr naming the file, line or column at fault. With `--json`, stdout
//! carries exactly one JSON object.

mod audit;
mod bench;
mod budget;
mod evaluate;
mod evaluate_linked;
mod inspect;
mod linked;
mod methods;
mod privacy;
mod runs;
mod sweep;
mod train;

use std::ffi::OsString;
use std::process::ExitCode;

use clap::{Parser, Subcommand};

/// Differentially private synthetic data. Run without arguments to open the window.
#[derive(Debug, Parser)]
#[command(name = "dpsynth", version, about, long_about = None)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Show each column's kind, domain, provenance, missing and distinct counts.
    Inspect(inspect::InspectArgs),
    /// Train a synthesizer on a private table within a privacy budget; writes a model file.
    Train(train::TrainArgs),
    /// Generate synthetic rows from a released model file (no private data needed).
    Sample(train::SampleArgs),
    /// Compare synthetic rows with real ones: every metric of the papers, as JSON and HTML.
    Evaluate(evaluate::EvaluateArgs),
    /// Privacy arithmetic: ε of a DP-SGD run, or the noise a target ε needs.
    #[command(subcommand)]
    Privacy(privacy::PrivacyCmd),
    /// The per-dataset privacy budget ledger.
    #[command(subcommand)]
    Budget(budget::BudgetCmd),
    /// The methods this version offers, with their presets and the data they accept.
    Methods(methods::MethodsArgs),
    /// Benchmarks (speed goals live here, never in tests).
    #[command(subcommand)]
    Bench(bench::BenchCmd),
    /// Utility against ε: one charged run per (method, ε), scored the papers' way, as a
    /// table (CSV/JSON) and a figure (SVG/HTML).
    Sweep(sweep::SweepArgs),
    /// Empirical lower bounds on ε beside the claimed ε: a one-run canary audit of a
    /// method on a table, or (--mechanisms) distinguishing tests of every noise primitive.
    Audit(audit::AuditArgs),
    /// The runs the window kept (listed again when their file is reopened): list or delete.
    Runs(runs::RunsArgs),
    /// (development) Fuzz the readers of untrusted files: CSV, IDX, schema JSON, model
    /// files. Exit 1 when an input panicked.
    #[command(hide = true)]
    Fuzz(FuzzArgs),
    /// (internal) Read a Parquet or Arrow IPC file and exit: the child process that opening
    /// such a file runs first (`data::columnar::check_in_child_process`).
    #[command(hide = true, name = "__check-columnar")]
    CheckColumnar { file: std::path::PathBuf },
}

#[derive(Debug, clap::Args)]
pub struct FuzzArgs {
    /// csv, idx, schema, model, workbook, columnar, spss, stata or all.
    #[arg(long, default_value = "all")]
    target: String,
    /// Executions per target.
    #[arg(long, default_value_t = 10_000)]
    executions: u64,
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Folder to write panicking inputs to.
    #[arg(long)]
    findings: Option<std::path::PathBuf>,
    #[arg(long)]
    json: bool,
    /// Print every distinct outcome.
    #[arg(long)]
    verbose: bool,
}

/// `dpsynth fuzz`: runs the fuzz targets and reports executions, outcomes and panics.
fn fuzz(a: FuzzArgs) -> anyhow::Result<()> {
    let targets = crate::fuzz::Target::parse(&a.target).ok_or_else(|| {
        crate::job::JobError::Usage(format!(
            "unknown fuzz target '{}'; use csv, idx, schema, model, workbook, columnar, spss, stata or all",
            a.target
        ))
    })?;
    let mut reports = Vec::new();
    for t in targets {
        let r = crate::fuzz::run(t, a.executions, a.seed, a.findings.as_deref());
        if !a.json {
            println!(
                "{:<7} {:>9} executions in {:>7.1} s: {} accepted, {} refused, {} distinct outcomes, {} panics, {} reader crashes contained",
                t.name(),
                r.executions,
                r.seconds,
                r.accepted,
                r.refused,
                r.outcomes,
                r.panics,
                r.contained_crashes
            );
            for m in &r.panic_messages {
                println!("        panic: {m}");
            }
            if a.verbose {
                for o in &r.outcome_list {
                    println!("        {o}");
                }
            }
        }
        reports.push(r);
    }
    if a.json {
        print_json(&serde_json::json!({ "targets": reports }))?;
    }
    let panics: u64 = reports.iter().map(|r| r.panics).sum();
    anyhow::ensure!(panics == 0, "{panics} input(s) panicked");
    Ok(())
}

/// Parses `args` (including the program name), runs the command, and maps the outcome to
/// the exit status of the contract.
pub fn main_with_args(args: Vec<OsString>) -> ExitCode {
    let cli = match Cli::try_parse_from(args) {
        Ok(c) => c,
        Err(e) => {
            // Help and version go to stdout with status 0; usage errors exit with 2.
            let _ = e.print();
            return ExitCode::from(if e.use_stderr() { 2 } else { 0 });
        }
    };
    let result = match cli.command {
        Command::Inspect(a) => inspect::run(a),
        Command::Train(a) if a.child.is_some() => linked::train(&a),
        Command::Train(a) => train::train(a),
        Command::Sample(a) if linked::is_linked_sample(&a) => linked::sample(&a),
        Command::Sample(a) => train::sample(a),
        Command::Evaluate(a) if a.real_train_child.is_some() => evaluate_linked::run(&a),
        Command::Evaluate(a) => evaluate::run(a),
        Command::Privacy(c) => privacy::run(c),
        Command::Budget(c) => budget::run(c),
        Command::Bench(c) => bench::run(c),
        Command::Methods(a) => methods::run(a),
        Command::Audit(a) => audit::run(a),
        Command::Sweep(a) => sweep::run(a),
        Command::Runs(a) => runs::run(a),
        Command::Fuzz(a) => fuzz(a),
        Command::CheckColumnar { file } => {
            return ExitCode::from(crate::data::columnar::check_here(&file) as u8);
        }
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("dpsynth: error: {e:#}");
            // A job's errors know whether they are bad usage (2) or anything else (1).
            ExitCode::from(
                e.downcast_ref::<crate::job::JobError>()
                    .map_or(1, |j| j.exit_code()),
            )
        }
    }
}

/// Prints one JSON object on stdout.
pub(crate) fn print_json(v: &serde_json::Value) -> anyhow::Result<()> {
    println!("{}", serde_json::to_string_pretty(v)?);
    Ok(())
}

/// Parses a comma-separated list of missing-value tokens.
pub(crate) fn missing_tokens(arg: &Option<String>) -> Vec<String> {
    match arg {
        None => crate::data::csv::default_missing_tokens(),
        Some(s) => s
            .split(',')
            .map(|t| t.trim().to_string())
            .filter(|t| !t.is_empty())
            .collect(),
    }
}

/// Parses a delimiter given as a character or a name (`tab`, `comma`, `semicolon`).
pub(crate) fn delimiter(arg: &Option<String>) -> anyhow::Result<Option<u8>> {
    Ok(match arg.as_deref() {
        None => None,
        Some("tab" | "\\t") => Some(b'\t'),
        Some("comma") => Some(b','),
        Some("semicolon") => Some(b';'),
        Some("pipe") => Some(b'|'),
        Some(s) if s.len() == 1 && s.is_ascii() => Some(s.as_bytes()[0]),
        Some(s) => anyhow::bail!(
            "--delimiter '{s}' is not one ASCII character (or tab/comma/semicolon/pipe)"
        ),
    })
}
