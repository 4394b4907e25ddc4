//! `dpsynth bench dpsgd [--json]`, `dpsynth bench embed [--json]`, `dpsynth bench evaluate [--json]`,
//! `dpsynth bench modes --synthetic S.csv … [--png-dir D] [--json]`

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
    /// The characteristic-function embedding of PEARL / DP-MERF (per-class sums of k
    /// frequencies over n rows): the CPU path (candle) against the WGSL kernel.
    Embed {
        #[arg(long)]
        json: bool,
        /// Row counts to time (comma-separated).
        #[arg(long, value_delimiter = ',', default_values_t = vec![32_561, 60_000])]
        rows: Vec<usize>,
        /// Frequency counts k to time (comma-separated).
        #[arg(long, value_delimiter = ',', default_values_t = vec![1_000, 10_000])]
        features: Vec<usize>,
        /// Encoded width d (108: UCI Adult under its public schema; 794: MNIST with its label).
        #[arg(long, default_value_t = 108)]
        width: usize,
        /// Classes of the label (2: Adult's income).
        #[arg(long, default_value_t = 2)]
        classes: usize,
        /// Time the CPU path only (a software Vulkan adapter such as lavapipe is
        /// correct but many times slower than the CPU path, so timing it says little).
        #[arg(long)]
        cpu_only: bool,
        /// Also time the candle path on this training device (e.g. `cuda`): the path
        /// DP-MERF and PEARL take when they train there.
        #[arg(long)]
        device: Option<String>,
    },
    /// Time and peak memory of the full evaluation report (defaults: ADULT train, test and
    /// train-as-synthetic, 32k/16k/32k rows, label income, with the HTML report).
    Evaluate {
        #[arg(long, default_value = "assets/adult/adult_train.csv")]
        real_train: std::path::PathBuf,
        #[arg(long, default_value = "assets/adult/adult_test.csv")]
        real_test: std::path::PathBuf,
        #[arg(long, default_value = "assets/adult/adult_train.csv")]
        synthetic: std::path::PathBuf,
        #[arg(long, default_value = "income")]
        label: String,
        #[arg(long)]
        json: bool,
    },
    /// The post-GAN boosting paper's 25-Gaussians scores of synthetic samples (share of
    /// high-quality samples, capped per mode; modes covered), with a scatter PNG of each.
    Modes {
        /// Synthetic CSVs with the two coordinates (repeatable).
        #[arg(long, required = true)]
        synthetic: Vec<std::path::PathBuf>,
        /// The coordinate columns.
        #[arg(long, default_value = "Var1")]
        x: String,
        #[arg(long, default_value = "Var2")]
        y: String,
        /// Write `<file stem>.png` scatters into this folder.
        #[arg(long)]
        png_dir: Option<std::path::PathBuf>,
        #[arg(long)]
        json: bool,
    },
}

/// The 25-Gaussians scores of each file (see [`crate::eval::modes`]).
fn modes(
    files: &[std::path::PathBuf],
    (x, y): (&str, &str),
    png_dir: Option<&std::path::Path>,
    json: bool,
) -> anyhow::Result<()> {
    let mut out = Vec::new();
    for f in files {
        let t = match crate::data::open(f, &crate::data::csv::LoadOptions::default())? {
            crate::data::Dataset::Table(t) => t,
            crate::data::Dataset::Images(_) => {
                anyhow::bail!("{}: images, not a table", f.display())
            }
        };
        let col = |name: &str| -> anyhow::Result<Vec<Option<f64>>> {
            match t.column(name).map(|c| &c.values) {
                Some(crate::data::table::Values::Number(v)) => Ok(v.clone()),
                Some(_) => anyhow::bail!("{}: column '{name}' is not numeric", f.display()),
                None => anyhow::bail!("{}: no column '{name}'", f.display()),
            }
        };
        let pts: Vec<(f64, f64)> = col(x)?
            .into_iter()
            .zip(col(y)?)
            .filter_map(|(a, b)| Some((a?, b?)))
            .collect();
        let s = crate::eval::modes::score(&pts);
        if let Some(dir) = png_dir {
            let stem = f
                .file_stem()
                .map_or("sample".into(), |s| s.to_string_lossy().into_owned());
            crate::eval::modes::scatter_png(&pts, &dir.join(format!("{stem}.png")))
                .map_err(|e| anyhow::anyhow!(e))?;
        }
        out.push((f.display().to_string(), s));
    }
    if json {
        let v: Vec<_> = out
            .iter()
            .map(|(f, s)| json!({"file": f, "scores": s}))
            .collect();
        return super::print_json(&json!({ "files": v }));
    }
    println!(
        "{:<48} {:>8} {:>9} {:>6}",
        "file", "quality", "uncapped", "modes"
    );
    for (f, s) in &out {
        println!(
            "{:<48} {:>8.4} {:>9.4} {:>6}",
            f, s.quality, s.uncapped, s.modes_covered
        );
    }
    Ok(())
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
        BenchCmd::Modes {
            synthetic,
            x,
            y,
            png_dir,
            json,
        } => modes(&synthetic, (&x, &y), png_dir.as_deref(), json),
        BenchCmd::Evaluate {
            real_train,
            real_test,
            synthetic,
            label,
            json,
        } => evaluate(&real_train, &real_test, &synthetic, label, json),
        BenchCmd::Embed {
            json,
            rows,
            features,
            width,
            classes,
            cpu_only,
            device,
        } => {
            let on = match device {
                Some(d) => Some(crate::nn::device::DeviceChoice::parse(&d)?.open()?),
                None => None,
            };
            embed(
                json,
                &rows,
                &features,
                width,
                classes,
                cpu_only,
                on.as_ref(),
            )
        }
        BenchCmd::Dpsgd {
            json,
            steps,
            device,
        } => dpsgd(json, steps, &device),
    }
}

/// `bench evaluate`: the whole evaluation report on three files, its time per section,
/// peak memory and the HTML's size.
fn evaluate(
    real_train: &std::path::Path,
    real_test: &std::path::Path,
    synthetic: &std::path::Path,
    label: String,
    json: bool,
) -> anyhow::Result<()> {
    let load = |p: &std::path::Path| -> anyhow::Result<crate::data::Table> {
        match crate::data::open(p, &crate::data::csv::LoadOptions::default())? {
            crate::data::Dataset::Table(t) => Ok(t),
            crate::data::Dataset::Images(_) => {
                anyhow::bail!("{}: images, not a table", p.display())
            }
        }
    };
    let start = std::time::Instant::now();
    let (a, b, c) = (load(real_train)?, load(real_test)?, load(synthetic)?);
    let opts = crate::eval::report::Options {
        label: Some(label),
        ..Default::default()
    };
    let rep = crate::eval::report::evaluate(None, &a, &b, &c, &opts, &mut |l| eprintln!("{l}"))
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

/// `bench dpsgd`: a private step against a non-private one per network, and the fast
/// per-sample path against the per-example reference.
fn dpsgd(json: bool, steps: usize, device: &str) -> anyhow::Result<()> {
    let dev = crate::nn::device::DeviceChoice::parse(device)?.open()?;
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

/// `n` rows of `width` uniform values whose first `classes` columns one-hot a class (round robin).
fn labelled_rows(n: usize, width: usize, classes: usize, rng: &mut impl rand::Rng) -> Vec<f32> {
    (0..n)
        .flat_map(|i| {
            let mut row: Vec<f32> = (0..width).map(|_| rng.random::<f32>()).collect();
            row[..classes].iter_mut().for_each(|x| *x = 0.0);
            row[i % classes] = 1.0;
            row
        })
        .collect()
}

/// Seconds for candle's class sums on device `d`, the copies in and out included (a run
/// pays them once per release), and the largest gap to the CPU's `cpu` sums.
fn candle_on_device(
    x: &candle_core::Tensor,
    matrix: &candle_core::Tensor,
    label: crate::methods::embedding::LabelSpan,
    cpu: &candle_core::Tensor,
    d: &candle_core::Device,
) -> anyhow::Result<(f64, f32)> {
    use crate::methods::embedding;
    let t0 = std::time::Instant::now();
    let xd = x.to_device(d)?;
    let od = embedding::Frequencies::whole_row(matrix.to_device(d)?)?;
    let s = embedding::class_sums(&xd, &od, Some(label))?.to_device(&candle_core::Device::Cpu)?;
    let secs = t0.elapsed().as_secs_f64();
    let gap = (cpu.clone() - s)?.abs()?.max_all()?.to_scalar::<f64>()? as f32;
    Ok((secs, gap))
}

/// Times the embedding on the CPU and through the WGSL kernel, on uniform rows whose first
/// `classes` columns are a one-hot label; reports the largest gap between the two.
fn embed(
    json: bool,
    rows: &[usize],
    features: &[usize],
    width: usize,
    classes: usize,
    cpu_only: bool,
    on: Option<&candle_core::Device>,
) -> anyhow::Result<()> {
    use crate::methods::embedding::{self, LabelSpan};
    use rand::SeedableRng as _;
    let dev = candle_core::Device::Cpu;
    let mut rng = rand::rngs::StdRng::seed_from_u64(1);
    let gpu = if cpu_only {
        Err("not timed (--cpu-only)".to_string())
    } else {
        crate::gpu::context().map(|g| g.name.clone())
    };
    let label = LabelSpan {
        start: 0,
        classes: classes.max(1),
        binary: false,
    };
    if width <= label.classes {
        anyhow::bail!("--width must exceed --classes");
    }
    if let Some(d) = on.filter(|d| !d.is_cpu()) {
        // The first kernels on a GPU load their modules: keep that out of the timings.
        let x = candle_core::Tensor::ones((16, width), candle_core::DType::F32, d)?;
        let omega =
            embedding::Frequencies::whole_row(embedding::frequencies(width, 8, 1.0, &mut rng, d)?)?;
        embedding::class_sums(&x, &omega, Some(label))?.to_device(&dev)?;
    }
    let mut out = Vec::new();
    for &n in rows {
        let v = labelled_rows(n, width, label.classes, &mut rng);
        let x = candle_core::Tensor::from_vec(v, (n, width), &dev)?;
        for &k in features {
            out.push(embed_case(&x, k, label, gpu.is_ok(), on, &mut rng)?);
        }
    }
    if json {
        return super::print_json(&json!({
            "embedding": out,
            "threads": rayon::current_num_threads(),
            "gpu_error": gpu.err(),
        }));
    }
    Ok(())
}

/// One timing of the embedding's class sums of `x` at `k` frequencies: on the CPU, with
/// wgpu where `gpu`, and with candle on `on` where it is a GPU; a JSON row.
fn embed_case(
    x: &candle_core::Tensor,
    k: usize,
    label: crate::methods::embedding::LabelSpan,
    gpu: bool,
    on: Option<&candle_core::Device>,
    rng: &mut rand::rngs::StdRng,
) -> anyhow::Result<serde_json::Value> {
    use crate::methods::embedding::{self, EmbedDevice};
    let dev = candle_core::Device::Cpu;
    let (n, width) = x.dims2()?;
    let matrix = embedding::frequencies(width, k, (width as f64).sqrt(), rng, &dev)?;
    let omega = embedding::Frequencies::whole_row(matrix.clone())?;
    let time = |on| -> anyhow::Result<(f64, candle_core::Tensor, String)> {
        let t0 = std::time::Instant::now();
        let (s, name) = embedding::class_sums_on(x, &omega, Some(label), on)?;
        Ok((t0.elapsed().as_secs_f64(), s, name))
    };
    let (cpu_s, cpu, _) = time(EmbedDevice::Cpu)?;
    let gpu_row = if gpu {
        let (s, g, name) = time(EmbedDevice::Gpu)?;
        let gap = (cpu.clone() - g)?.abs()?.max_all()?.to_scalar::<f64>()? as f32;
        Some((s, name, gap))
    } else {
        None
    };
    let device_row = match on {
        Some(d) if !d.is_cpu() => {
            let (secs, gap) = candle_on_device(x, &matrix, label, &cpu, d)?;
            let name = crate::nn::device::describe(d);
            eprintln!(
                "rows {n:>6}  k {k:>6}  candle on {name} {secs:>7.2} s (largest gap {gap:.2e})"
            );
            Some((secs, name, gap))
        }
        _ => None,
    };
    eprintln!(
        "rows {n:>6}  k {k:>6}  cpu {cpu_s:>7.2} s  {}",
        gpu_row
            .as_ref()
            .map_or("no GPU".to_string(), |(s, name, gap)| format!(
                "wgpu {s:>7.2} s on {name} (largest gap {gap:.2e})"
            ))
    );
    Ok(json!({
        "rows": n,
        "features": k,
        "width": width,
        "classes": label.classes,
        "cpu_seconds": cpu_s,
        "gpu_seconds": gpu_row.as_ref().map(|r| r.0),
        "gpu": gpu_row.as_ref().map(|r| r.1.clone()),
        "largest_gap": gpu_row.as_ref().map(|r| r.2),
        "device_seconds": device_row.as_ref().map(|r| r.0),
        "device": device_row.as_ref().map(|r| r.1.clone()),
        "device_largest_gap": device_row.as_ref().map(|r| r.2),
    }))
}
