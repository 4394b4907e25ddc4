//! `dpsynth audit …`: empirical lower bounds on ε beside the claimed ε — for a whole
//! method (one training run with canaries) or, with `--mechanisms`, for every noise
//! primitive.

use std::io::Write as _;
use std::path::PathBuf;

use crate::job::audit::{self, AuditConfig, AuditEvent, AuditReport, mechanisms};
use crate::job::{self, Event, JobError, RunConfig};

#[derive(Debug, clap::Args)]
pub struct AuditArgs {
    /// The data to audit the method on (a CSV table). The audit trains on a copy with
    /// canary rows added.
    #[arg(long, required_unless_present = "mechanisms")]
    pub data: Option<PathBuf>,
    #[arg(long)]
    pub schema: Option<PathBuf>,
    /// The method to audit (`dpsynth methods`).
    #[arg(long, required_unless_present = "mechanisms")]
    pub method: Option<String>,
    /// The ε the audited run is trained at; `inf` audits the non-private reference.
    #[arg(long, value_parser = super::train::parse_epsilon, required_unless_present = "mechanisms")]
    pub epsilon: Option<f64>,
    #[arg(long, required_unless_present = "mechanisms")]
    pub delta: Option<f64>,
    #[arg(long, default_value = crate::job::DEFAULT_PRESET)]
    pub preset: String,
    /// Override a preset setting (as for `train`).
    #[arg(long = "set", value_name = "NAME=VALUE")]
    pub set: Vec<String>,
    /// Audit on N rows drawn at random from the data (0: all). Fewer rows make each canary
    /// weigh more: a stronger test of the same guarantee (on Adult's 32,561 rows no attack
    /// here shows anything even at ε = ∞; on 1,000 it does).
    #[arg(long, value_name = "N", default_value_t = 1_000)]
    pub rows: usize,
    /// Canary rows, each added with probability ½.
    #[arg(long, default_value_t = 512)]
    pub canaries: usize,
    /// The data is public (e.g. the bundled samples): the audit runs against a scratch
    /// ledger and charges nothing. Without it the audit is a run charged to the data's
    /// ledger entry.
    #[arg(long)]
    pub public: bool,
    /// Estimate domains read off the rows privately (as `train --estimate-domains`).
    #[arg(long)]
    pub estimate_domains: bool,
    #[arg(long)]
    pub seed: Option<u64>,
    #[arg(long)]
    pub ledger: Option<PathBuf>,
    /// Audit every noise primitive instead (distinguishing tests; no data needed).
    #[arg(long)]
    pub mechanisms: bool,
    /// Draws per input for --mechanisms (more: tighter bounds, slower).
    #[arg(long, default_value_t = 200_000)]
    pub draws: usize,
    /// Print one JSON object on stdout at the end.
    #[arg(long)]
    pub json: bool,
}

pub fn run(a: AuditArgs) -> anyhow::Result<()> {
    if a.mechanisms {
        return run_mechanisms(&a);
    }
    let usage = |what: &str| JobError::Usage(format!("audit: {what} is required"));
    let data = a.data.clone().ok_or_else(|| usage("--data"))?;
    let epsilon = a.epsilon.ok_or_else(|| usage("--epsilon"))?;
    let cfg = AuditConfig {
        run: RunConfig {
            schema: a.schema.clone(),
            preset: a.preset.clone(),
            seed: a.seed,
            ledger: a.ledger.clone(),
            overrides: super::train::parse_overrides(&a.set)?,
            domains: if a.estimate_domains {
                job::DomainPolicy::Estimate {
                    share: crate::data::estimate::DEFAULT_SHARE,
                }
            } else if a.public {
                // Public data: its domains are public facts too.
                job::DomainPolicy::AllowData
            } else {
                job::DomainPolicy::Refuse
            },
            ..RunConfig::new(
                data,
                &a.method.clone().ok_or_else(|| usage("--method"))?,
                epsilon,
                a.delta.ok_or_else(|| usage("--delta"))?,
            )
        },
        canaries: a.canaries,
        public: a.public,
        rows: (a.rows > 0).then_some(a.rows),
    };
    let ledger = a
        .ledger
        .clone()
        .unwrap_or_else(super::budget::default_ledger_path);
    if a.public {
        eprintln!("dpsynth: the data is declared public: this audit charges nothing");
    } else {
        eprintln!(
            "dpsynth: this audit is a training run on private data: it is charged to the dataset's ledger"
        );
    }
    let handle = audit::spawn_audit(cfg, ledger, None);
    let mut err = std::io::stderr();
    let mut result = None;
    for ev in handle.events.iter() {
        match ev {
            AuditEvent::Run(Event::Started { summary, rows, .. }) => {
                let _ = writeln!(err, "dpsynth: audited run: {rows} rows; plan: {summary}");
            }
            AuditEvent::Run(Event::Progress(p)) => {
                let _ = write!(err, "\r{} step {}/{}   ", p.phase, p.step, p.total);
                let _ = err.flush();
            }
            AuditEvent::Run(Event::Notice(m)) => {
                let _ = writeln!(err, "dpsynth: note: {m}");
            }
            AuditEvent::Run(_) => {}
            AuditEvent::Done(r) => result = Some(r),
        }
    }
    let _ = writeln!(err);
    let report =
        result.ok_or_else(|| JobError::Training("the audit stopped without a result".into()))??;
    if a.json {
        return super::print_json(&serde_json::to_value(&report)?);
    }
    print_report(&report);
    Ok(())
}

fn print_report(r: &AuditReport) {
    let claimed = r
        .claimed_epsilon
        .map_or("∞ (not private)".to_string(), |e| format!("{e:.3}"));
    println!(
        "audit of {} ({}) with {} canaries ({} added to {} rows), {:.0} % confidence, {:.0} s",
        r.method,
        r.preset,
        r.canaries,
        r.included,
        r.rows,
        100.0 * r.confidence,
        r.seconds
    );
    println!("  claimed      ε ≤ {claimed} at δ = {}", r.delta);
    if let Some(w) = &r.white_box {
        println!(
            "  white-box    ε ≥ {:.3}   (critic score: {} of {} guesses right)",
            w.lower_bound, w.correct, w.guesses
        );
    }
    let b = &r.black_box;
    println!(
        "  black-box    ε ≥ {:.3}   (nearest synthetic row: {} of {} guesses right)",
        b.lower_bound, b.correct, b.guesses
    );
    println!("  {}", r.verdict);
    println!(
        "  {}",
        if r.charged {
            "charged to the dataset's ledger like any run"
        } else {
            "charged nothing (the data was declared public)"
        }
    );
}

fn run_mechanisms(a: &AuditArgs) -> anyhow::Result<()> {
    let seed = a.seed.unwrap_or(1);
    let mut reports = Vec::new();
    for name in mechanisms::PRIMITIVES {
        let t0 = std::time::Instant::now();
        let r = mechanisms::audit(name, a.draws, seed).map_err(JobError::Training)?;
        if !a.json {
            println!(
                "{:<22} claimed ε {:>6.3} at δ {:<7} | proved ε ≥ {:>6.3} | broken ({}) ε ≥ {:>6.3} {} | {:.1} s",
                r.name,
                r.claimed_epsilon,
                r.delta,
                r.audit.lower_bound,
                r.broken,
                r.broken_audit.lower_bound,
                if r.catches_broken() {
                    "caught"
                } else {
                    "NOT caught"
                },
                t0.elapsed().as_secs_f64()
            );
        }
        reports.push(r);
    }
    if a.json {
        super::print_json(&serde_json::json!({ "mechanisms": reports }))?;
    }
    let unsound: Vec<&str> = reports
        .iter()
        .filter(|r| !r.sound())
        .map(|r| r.name)
        .collect();
    anyhow::ensure!(
        unsound.is_empty(),
        "the audit proved more than the claim for {}: the code does not keep its guarantee",
        unsound.join(", ")
    );
    Ok(())
}
