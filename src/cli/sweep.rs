//! `dpsynth sweep …`: utility against ε for one or more methods, one charged run per point.

use std::fmt::Write as _;
use std::path::PathBuf;
use std::sync::atomic::AtomicBool;

use crate::job::sweep::{self, SweepConfig, SweepReport};
use crate::job::{self, JobError, RunConfig};

#[derive(Debug, clap::Args)]
pub struct SweepArgs {
    /// The table (a held-out `…test…` file beside a `…train…` file is used as real-test).
    #[arg(long)]
    pub data: PathBuf,
    #[arg(long)]
    pub schema: Option<PathBuf>,
    /// A method to sweep (repeat for several on one chart).
    #[arg(long = "method", required = true)]
    pub methods: Vec<String>,
    /// The ε values, comma-separated; `inf` is the non-private point.
    #[arg(long, value_delimiter = ',', required = true, value_parser = super::train::parse_epsilon)]
    pub epsilons: Vec<f64>,
    #[arg(long, default_value_t = 1e-5)]
    pub delta: f64,
    #[arg(long, default_value = crate::job::DEFAULT_PRESET)]
    pub preset: String,
    /// Runs per (method, ε): more give error bars (the smallest to the largest score).
    #[arg(long, default_value_t = 1)]
    pub repeats: usize,
    /// The data is public (e.g. the bundled samples): run against a scratch ledger and
    /// charge nothing. Without it every run is charged to the dataset's ledger.
    #[arg(long)]
    pub public: bool,
    /// Folder for the models (default: `sweeps/<file name>`, or `sweeps/<file name>-public`
    /// with --public, in the app's folder, never beside the data: a bundled sample may be
    /// read-only). A private sweep reuses only points that were charged.
    #[arg(long)]
    pub out: Option<PathBuf>,
    #[arg(long)]
    pub seed: Option<u64>,
    #[arg(long)]
    pub ledger: Option<PathBuf>,
    /// Write the table as JSON to FILE.
    #[arg(long)]
    pub json: Option<PathBuf>,
    /// Write the figure and the table as one HTML page to FILE.
    #[arg(long)]
    pub html: Option<PathBuf>,
    /// Write the table as CSV to FILE.
    #[arg(long)]
    pub csv: Option<PathBuf>,
    /// Write the figure as SVG to FILE.
    #[arg(long)]
    pub svg: Option<PathBuf>,
}

pub fn run(a: SweepArgs) -> anyhow::Result<()> {
    let out_dir = a.out.clone().unwrap_or_else(|| {
        let stem = a
            .data
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_else(|| "data".into());
        // Public and charged sweeps never share a folder (nor, so, kept points).
        let folder = if a.public {
            format!("{stem}-public")
        } else {
            stem
        };
        job::paths::data_dir().join("sweeps").join(folder)
    });
    let cfg = SweepConfig {
        base: RunConfig {
            schema: a.schema.clone(),
            preset: a.preset.clone(),
            seed: a.seed,
            ledger: a.ledger.clone(),
            domains: if a.public {
                job::DomainPolicy::AllowData
            } else {
                job::DomainPolicy::Refuse
            },
            ..RunConfig::new(a.data.clone(), "", 1.0, a.delta)
        },
        methods: a.methods.clone(),
        epsilons: a.epsilons.clone(),
        repeats: a.repeats,
        public: a.public,
        out_dir,
    };
    let runs = cfg.methods.len() * cfg.epsilons.len() * cfg.repeats.max(1);
    if a.public {
        eprintln!(
            "dpsynth: {runs} runs on data declared public: nothing is charged (the runs' ε add up to {:.3})",
            cfg.planned_total()
        );
    } else {
        eprintln!(
            "dpsynth: {runs} runs, each charged to the dataset's ledger: at most ε {:.3} in all (the ledger composes them, which is less)",
            cfg.planned_total()
        );
    }
    let ledger = a
        .ledger
        .clone()
        .unwrap_or_else(super::budget::default_ledger_path);
    let cancel = AtomicBool::new(false);
    let r = crate::nn::device::with_cpu_threads(
        std::thread::available_parallelism().map_or(1, |n| n.get()),
        || sweep::run_sweep(&cfg, &ledger, &|l| eprintln!("dpsynth: {l}"), &cancel),
    )
    .map_err(|e| JobError::Training(e.to_string()))??;
    if let Some(p) = &a.json {
        sweep::write(p, &serde_json::to_string_pretty(&r)?)?;
    }
    if let Some(p) = &a.csv {
        sweep::write(p, &sweep::to_csv(&r))?;
    }
    if let Some(p) = &a.svg {
        sweep::write(p, &sweep::to_svg(&r))?;
    }
    if let Some(p) = &a.html {
        sweep::write(p, &html(&r))?;
    }
    print_table(&r);
    Ok(())
}

fn print_table(r: &SweepReport) {
    let f = |v: Option<f64>| v.map_or("-".to_string(), |x| format!("{x:.3}"));
    println!(
        "{:<14} {:>6} {:>8} {:>10} {:>8} {:>7} {:>6} {:>6}",
        "method", "ε", "spent", "TSTR acc", "AUROC", "1-way TV", "PCA", "s"
    );
    for p in &r.points {
        let [spent, acc, auroc, tv, pca] = p.scores().map(f);
        println!(
            "{:<14} {:>6} {:>8} {:>10} {:>8} {:>7} {:>6} {:>6.0}",
            p.method,
            p.epsilon.map_or("∞".into(), |e| e.to_string()),
            spent,
            acc,
            auroc,
            tv,
            pca,
            p.seconds
        );
    }
    println!(
        "real data: accuracy {} · AUROC {} · majority class {}{}",
        f(r.real_accuracy),
        f(r.real_auroc),
        f(r.majority_accuracy),
        if r.charged {
            ""
        } else {
            " · nothing was charged (public data)"
        }
    );
}

/// The figure and the table on one page.
fn html(r: &SweepReport) -> String {
    let mut h = String::from(
        "<!doctype html><html lang=en><meta charset=utf-8><title>dpsynth ε sweep</title>\
<style>body{font-family:system-ui,sans-serif;max-width:1100px;margin:2em auto}td,th{border:1px solid #ccc;padding:4px 8px;text-align:right}table{border-collapse:collapse}</style>",
    );
    let _ = write!(
        h,
        "<h1>Utility against ε</h1><p>{} at δ = {}; classifiers predict <code>{}</code>, trained on synthetic rows and tested on real ones. {}</p>{}",
        r.data.replace('<', "&lt;"),
        r.delta,
        r.label.as_deref().unwrap_or("-"),
        if r.charged {
            "Every run was charged to the dataset's ledger."
        } else {
            "The data was declared public: nothing was charged."
        },
        sweep::to_svg(r)
    );
    h.push_str("<table><tr><th>method</th><th>ε</th><th>ε spent</th><th>repeat</th><th>TSTR accuracy</th><th>TSTR AUROC</th><th>1-way TV</th><th>PCA score</th><th>seconds</th></tr>");
    for p in &r.points {
        let _ = write!(
            h,
            "<tr><td>{}</td><td>{}</td>",
            p.method,
            p.epsilon.map_or("∞".into(), |e| e.to_string())
        );
        let cells = p
            .scores()
            .map(|v| v.map_or("-".to_string(), |x| format!("{x:.3}")));
        let _ = write!(
            h,
            "<td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{:.0}</td></tr>",
            cells[0], p.repeat, cells[1], cells[2], cells[3], cells[4], p.seconds
        );
    }
    h.push_str("</table><p>Scores are a non-private diagnostic: they read the real rows. Choosing a run by them is a choice the accountant does not see.</p></html>");
    h
}
