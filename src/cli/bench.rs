//! `dpsynth bench dpsgd [--json]`

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
}

pub fn run(cmd: BenchCmd) -> anyhow::Result<()> {
    match cmd {
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
