//! `dpsynth budget show|set`: the per-dataset ledger from the command line.

use std::path::{Path, PathBuf};

use serde_json::json;

use crate::privacy::Budget;
use crate::privacy::ledger::Ledger;

#[derive(Debug, clap::Subcommand)]
pub enum BudgetCmd {
    /// A dataset's total budget, what was spent (settled and reserved), and what is left.
    Show {
        #[arg(long)]
        data: PathBuf,
        /// A child table linked to `--data`: shows the pair's book and both tables' (a
        /// linked run is charged to all three).
        #[arg(long)]
        child: Option<PathBuf>,
        #[arg(long)]
        json: bool,
        /// Ledger file (default: $DPSYNTH_LEDGER, else the user data folder).
        #[arg(long)]
        ledger: Option<PathBuf>,
    },
    /// Sets a dataset's total budget.
    Set {
        #[arg(long)]
        data: PathBuf,
        /// A child table linked to `--data`: sets the pair's total instead (each table
        /// keeps its own, and a linked run must fit all three).
        #[arg(long)]
        child: Option<PathBuf>,
        #[arg(long)]
        epsilon: f64,
        #[arg(long)]
        delta: f64,
        #[arg(long)]
        ledger: Option<PathBuf>,
    },
    /// Settles reservations left by runs that were killed: one that never read the data
    /// is released, any other stays spent in full (it may have read the data).
    Settle {
        #[arg(long)]
        data: PathBuf,
        #[arg(long)]
        json: bool,
        #[arg(long)]
        ledger: Option<PathBuf>,
    },
    /// (testing) Reserve and settle in a loop, printing each committed step; used by the
    /// crash-safety tests, which kill this process at random points.
    #[command(hide = true)]
    Torture {
        #[arg(long)]
        ledger: PathBuf,
        #[arg(long)]
        dataset: String,
        #[arg(long, default_value_t = 1000)]
        iterations: u64,
        /// Keep every reservation open (to test that concurrent runs cannot overspend).
        #[arg(long)]
        no_settle: bool,
        /// DP-SGD steps (q = 0.01, σ = 2) each reservation plans.
        #[arg(long, default_value_t = 10)]
        steps: u64,
    },
}

pub use crate::job::paths::default_ledger_path;

fn key(data: &Path, ledger: &Path) -> anyhow::Result<String> {
    Ok(crate::job::cost::dataset_key(data, ledger)?)
}

pub fn run(cmd: BudgetCmd) -> anyhow::Result<()> {
    match cmd {
        BudgetCmd::Show {
            data,
            child: None,
            json,
            ledger,
        } => show(&data, json, ledger),
        BudgetCmd::Show {
            data,
            child: Some(child),
            json,
            ledger,
        } => show_pair(&data, &child, json, ledger),
        BudgetCmd::Set {
            data,
            child,
            epsilon,
            delta,
            ledger,
        } => set(&data, child.as_deref(), Budget { epsilon, delta }, ledger),
        BudgetCmd::Settle { data, json, ledger } => settle(&data, json, ledger),
        BudgetCmd::Torture {
            ledger,
            dataset,
            iterations,
            no_settle,
            steps,
        } => torture(&ledger, &dataset, iterations, no_settle, steps),
    }
}

/// `budget show`: the dataset's total, what was spent and by which runs.
fn show(data: &Path, json: bool, ledger: Option<PathBuf>) -> anyhow::Result<()> {
    let ledger = ledger.unwrap_or_else(default_ledger_path);
    let k = key(&data, &ledger)?;
    let l = Ledger::open(&ledger)?;
    let shown = show_book(&l, &k, &data.display().to_string(), json)?;
    if json {
        return super::print_json(&shown);
    }
    Ok(())
}

/// `budget show --child`: the pair's book, then the parent table's and the child table's.
fn show_pair(data: &Path, child: &Path, json: bool, ledger: Option<PathBuf>) -> anyhow::Result<()> {
    let ledger = ledger.unwrap_or_else(default_ledger_path);
    let (pk, ck) = (key(data, &ledger)?, key(child, &ledger)?);
    let pair = crate::job::linked::content_key(&pk, &ck);
    let l = Ledger::open(&ledger)?;
    let title = format!("the pair {} + {}", data.display(), child.display());
    let books = [
        ("pair", pair.as_str(), title),
        ("parent", pk.as_str(), data.display().to_string()),
        ("child", ck.as_str(), child.display().to_string()),
    ];
    let mut out = serde_json::Map::new();
    for (i, (which, k, title)) in books.iter().enumerate() {
        if i > 0 && !json {
            println!();
        }
        out.insert((*which).into(), show_book(&l, k, title, json)?);
    }
    if json {
        return super::print_json(&serde_json::Value::Object(out));
    }
    println!("\na linked run is charged to all three books, and must fit each");
    Ok(())
}

/// One book: printed as text unless `json`; its JSON either way.
fn show_book(l: &Ledger, k: &str, data: &str, json: bool) -> anyhow::Result<serde_json::Value> {
    let st = l.standing(k)?;
    let exposures = l.exposures(k)?;
    let shown = json!({
            "data": data,
            "dataset": st.dataset,
            "epsilon_total": st.budget.epsilon,
            "delta": st.budget.delta,
            "budget_is_default": st.budget_is_default,
            "epsilon_spent": st.spent,
            "accountant": st.accountant,
            "epsilon_remaining": st.remaining,
            "reserved_entries": st.reserved_entries,
            "entries": st.entries,
            "non_private_runs": exposures,
    });
    if json {
        return Ok(shown);
    }
    println!(
        "{} (dataset {})",
        data,
        &st.dataset[..12.min(st.dataset.len())]
    );
    let default = if st.budget_is_default {
        " (default; set it with `dpsynth budget set`)"
    } else {
        ""
    };
    println!(
        "total:     ε = {} at δ = {}{default}",
        st.budget.epsilon, st.budget.delta
    );
    println!(
        "spent:     ε = {:.4} (settled and reserved runs, composed by {})",
        st.spent,
        st.accountant.to_uppercase()
    );
    println!("remaining: ε = {:.4}", st.remaining);
    for e in &st.entries {
        let state = if e.interrupted { "stale" } else { &e.state };
        println!(
            "  #{:<4} {:<9} ε = {:.4}  {}",
            e.id, state, e.epsilon, e.description
        );
    }
    let stale = st.entries.iter().filter(|e| e.interrupted).count();
    if stale > 0 {
        println!(
            "{stale} reservation(s) belong to runs that were killed (stale); `dpsynth budget settle --data {}` settles them: released if the run never read the data, else counted in full",
            data
        );
    }
    for e in &exposures {
        println!("  exposed   ε = ∞       {e}");
    }
    let sum: f64 = st.entries.iter().map(|e| e.epsilon).sum();
    if st.entries.len() > 1 && sum > st.spent + 1e-3 {
        println!(
            "(the runs' ε add up to {sum:.4}, more than spent: privacy losses compose, they do not add)"
        );
    }
    Ok(shown)
}

/// `budget settle`: settles the dataset's stale reservations honestly.
fn settle(data: &Path, json: bool, ledger: Option<PathBuf>) -> anyhow::Result<()> {
    let ledger = ledger.unwrap_or_else(default_ledger_path);
    let k = key(data, &ledger)?;
    let mut l = Ledger::open(&ledger)?;
    let done = l.settle_stale(&k)?;
    let st = l.standing(&k)?;
    if json {
        let settled: Vec<_> = done
            .iter()
            .map(|(id, released)| json!({"id": id, "released": released}))
            .collect();
        return super::print_json(&json!({
            "data": data.display().to_string(),
            "settled": settled,
            "epsilon_spent": st.spent,
            "epsilon_remaining": st.remaining,
        }));
    }
    if done.is_empty() {
        println!("{}: no stale reservations", data.display());
    }
    for (id, released) in &done {
        if *released {
            println!("  #{id} released: its run ended before it read the data");
        } else {
            println!("  #{id} counted in full: its run may have read the data");
        }
    }
    println!(
        "spent ε = {:.4}, remaining ε = {:.4}",
        st.spent, st.remaining
    );
    Ok(())
}

/// `budget set`: the dataset's total (refused when it would raise δ after spending).
fn set(
    data: &Path,
    child: Option<&Path>,
    b: Budget,
    ledger: Option<PathBuf>,
) -> anyhow::Result<()> {
    let (epsilon, delta) = (b.epsilon, b.delta);
    b.validate().map_err(anyhow::Error::msg)?;
    let ledger = ledger.unwrap_or_else(default_ledger_path);
    let k = key(&data, &ledger)?;
    let (k, named) = match child {
        Some(c) => (
            crate::job::linked::content_key(&k, &key(c, &ledger)?),
            format!("the pair {} + {}", data.display(), c.display()),
        ),
        None => (k, data.display().to_string()),
    };
    let mut l = Ledger::open(&ledger)?;
    l.set_budget(&k, b)?;
    let st = l.standing(&k)?;
    println!(
        "{}: total ε = {epsilon} at δ = {delta}; spent ε = {:.4}, remaining ε = {:.4}",
        named, st.spent, st.remaining
    );
    Ok(())
}

/// `budget torture`: reserve (and settle) in a loop, for the crash-safety tests.
fn torture(
    ledger: &Path,
    dataset: &str,
    iterations: u64,
    no_settle: bool,
    steps: u64,
) -> anyhow::Result<()> {
    use std::io::Write as _;
    let mut l = Ledger::open(&ledger)?;
    let m = crate::privacy::Mechanism::SubsampledGaussian {
        q: 0.01,
        sigma: 2.0,
    };
    let charge = |count| crate::privacy::Charge {
        mechanism: m,
        count,
    };
    let plan = [charge(steps)];
    let half = [charge(steps / 2)];
    let mut out = std::io::stdout().lock();
    for _ in 0..iterations {
        let id = match l.reserve(&dataset, &plan, "torture") {
            Ok(id) => id,
            Err(crate::privacy::ledger::LedgerError::Insufficient { .. }) => {
                writeln!(out, "full")?;
                out.flush()?;
                return Ok(());
            }
            Err(e) => return Err(e.into()),
        };
        // As a real run does before its rows feed a mechanism: a killed one stays spent.
        l.mark_touched(id)?;
        writeln!(out, "reserved {id}")?;
        out.flush()?;
        if no_settle {
            continue;
        }
        l.settle(id, &half)?;
        writeln!(out, "settled {id}")?;
        out.flush()?;
    }
    Ok(())
}
