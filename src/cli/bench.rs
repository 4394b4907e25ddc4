//! `dpsynth bench dpsgd [--json]`, `dpsynth bench evaluate [--json]`

use serde_json::json;

#[derive(Debug, clap::Subcommand)]
pub enum BenchCmd {
    /// Private vs non-private DP-SGD step time on the papers' networks.
    Dpsgd {
        #[arg(long)]
        json: bool,
        /// Timed steps per network (after a warm-up).
        #[arg(long, default_value_t = 300)]
        steps: usize,
        /// Training device: cpu, cuda, cuda:N or metal.
        #[arg(long, default_value = "cpu")]
        device: String,
    },
    /// Time and peak memory of the full evaluation report (defaults: ADULT train, test and
    /// train-as-synthetic, 32k/16k/32k rows, label income, with the HTML report).
    Evaluate {
        #[arg(long, default_value = "../shared/data/adult_train.csv")]
        real_train: std::path::PathBuf,
        #[arg(long, default_value = "../shared/data/adult_test.csv")]
        real_test: std::path::PathBuf,
        #[arg(long, default_value = "../shared/data/adult_train.csv")]
        synthetic: std::path::PathBuf,
        #[arg(long, default_value = "income")]
        label: String,
        #[arg(long)]
        json: bool,
    },
}

/// Peak resident memory of this process (Linux `VmHWM`), in bytes.
fn peak_rss() -> Option<u64> {
    let s = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = s.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb * 1024)
}

pub fn run(cmd: BenchCmd) -> anyhow::Result<()> {
    match cmd {
        BenchCmd::Evaluate {
            real_train,
            real_test,
            synthetic,
            label,
            json,
        } => {
            let load = |p: &std::path::Path| -> anyhow::Result<crate::data::Table> {
                match crate::data::open(p, &crate::data::csv::LoadOptions::default())? {
                    crate::data::Dataset::Table(t) => Ok(t),
                    crate::data::Dataset::Images(_) => {
                        anyhow::bail!("{}: images, not a table", p.display())
                    }
                }
            };
            let start = std::time::Instant::now();
            let (a, b, c) = (load(&real_train)?, load(&real_test)?, load(&synthetic)?);
            let opts = crate::eval::report::Options {
                label: Some(label),
                ..Default::default()
            };
            let rep =
                crate::eval::report::evaluate(None, &a, &b, &c, &opts, &mut |l| eprintln!("{l}"))
                    .map_err(|e| anyhow::anyhow!(e))?;
            let names = crate::eval::html::Inputs {
                real_train: real_train.display().to_string(),
                real_test: real_test.display().to_string(),
                synthetic: synthetic.display().to_string(),
            };
            let html = crate::eval::html::render(&rep, &names);
            let total = start.elapsed().as_secs_f64();
            let peak = peak_rss();
            if json {
                return super::print_json(&json!({
                    "rows": [rep.sizes.real_train, rep.sizes.real_test, rep.sizes.synthetic],
                    "seconds": total,
                    "peak_rss_bytes": peak,
                    "html_bytes": html.len(),
                    "sections": rep.timings,
                    "threads": rayon::current_num_threads(),
                }));
            }
            println!(
                "full report on {}/{}/{} rows: {total:.1} s, peak memory {} MiB, HTML {} KiB ({} threads)",
                rep.sizes.real_train,
                rep.sizes.real_test,
                rep.sizes.synthetic,
                peak.map_or("?".into(), |b| (b / (1 << 20)).to_string()),
                html.len() / 1024,
                rayon::current_num_threads()
            );
            for (k, v) in &rep.timings {
                println!("  {k:<28} {v:>6.1} s");
            }
            Ok(())
        }
        BenchCmd::Dpsgd {
            json,
            steps,
            device,
        } => {
            let dev = crate::nn::device::DeviceChoice::parse(&device)?.open()?;
            eprintln!(
                "dpsynth: timing {steps} steps per network on {device} ({} threads)…",
                rayon::current_num_threads()
            );
            let rows = crate::nn::bench::run(steps.max(5), &dev)?;
            if json {
                return super::print_json(&json!({
                    "networks": rows,
                    "device": device,
                    "threads": rayon::current_num_threads(),
                }));
            }
            for r in &rows {
                println!(
                    "{:<42} batch {:>3}  private {:>8.3} ms  non-private {:>8.3} ms  ratio {:.2}×",
                    r.name,
                    r.batch,
                    r.private_step_s * 1e3,
                    r.nonprivate_step_s * 1e3,
                    r.ratio
                );
                if let (Some(rs), Some(sp)) = (r.reference_step_s, r.speedup_vs_reference) {
                    println!(
                        "{:<42}            per-example reference {:>8.3} ms  (fast path {sp:.1}× faster)",
                        "",
                        rs * 1e3
                    );
                }
            }
            Ok(())
        }
    }
}
