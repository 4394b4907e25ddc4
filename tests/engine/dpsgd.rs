//! The fast DP-SGD path against the slow per-example reference, the noise and sampling
//! statistics, and the accountant hook.

use candle_core::{DType, Device, Tensor};
use dpsynth::nn::dpsgd::{
    DpSgdConfig, NoiseSource, clip_factors, clipped_sums, dp_step, per_example_sq_norms,
    private_grads,
};
use dpsynth::nn::layers::{Act, Block, HeadKind, HeadSpan, LayerNorm, Linear, Net, bce_rows, mlp};
use dpsynth::nn::optim::Adam;
use dpsynth::nn::reference;
use dpsynth::privacy::{Accountant, Budget};
use rand::{Rng, SeedableRng};

fn rand_data(rng: &mut impl Rng, n: usize, d: usize) -> Tensor {
    let v: Vec<f32> = (0..n * d).map(|_| rng.random::<f32>()).collect();
    Tensor::from_vec(v, (n, d), &Device::Cpu).unwrap()
}

/// A network exercising every DP-compatible block: linear (with and without bias),
/// activations, a residual block with layer norm, and a mixed output head.
fn rich_net(rng: &mut impl Rng, d: usize) -> Net {
    let dev = Device::Cpu;
    let blocks = vec![
        Block::Linear(Linear::new(d, 12, true, &dev, rng).unwrap()),
        Block::Act(Act::LeakyRelu(0.2)),
        Block::Residual(vec![
            Block::Linear(Linear::new(12, 12, false, &dev, rng).unwrap()),
            Block::LayerNorm(LayerNorm::new(12, &dev).unwrap()),
            Block::Act(Act::Tanh),
        ]),
        Block::Linear(Linear::new(12, d, true, &dev, rng).unwrap()),
        Block::Head(vec![
            HeadSpan {
                start: 0,
                len: 2,
                kind: HeadKind::Sigmoid,
            },
            HeadSpan {
                start: 2,
                len: 3,
                kind: HeadKind::Softmax,
            },
            HeadSpan {
                start: 5,
                len: d - 5,
                kind: HeadKind::Sigmoid,
            },
        ]),
    ];
    Net::new(blocks, &dev)
}

fn rel_diff(a: &Tensor, b: &Tensor) -> f64 {
    let a: Vec<f32> = a.flatten_all().unwrap().to_vec1().unwrap();
    let b: Vec<f32> = b.flatten_all().unwrap().to_vec1().unwrap();
    let num: f64 = a
        .iter()
        .zip(&b)
        .map(|(x, y)| f64::from(x - y).powi(2))
        .sum::<f64>()
        .sqrt();
    let den: f64 = b.iter().map(|y| f64::from(*y).powi(2)).sum::<f64>().sqrt();
    num / den.max(1e-12)
}

fn fast_clipped(
    net: &Net,
    x: &Tensor,
    clip: f64,
    loss: &dyn Fn(&Tensor, &Tensor, Option<&Tensor>) -> candle_core::Result<Tensor>,
) -> (Vec<f64>, Vec<Tensor>) {
    let (y, caches) = net.forward_train(x, None).unwrap();
    let (_, dy) = dpsynth::nn::layers::loss_grad(&y, |y| loss(y, x, None)).unwrap();
    let (_, signals) = net.backward(&caches, &dy).unwrap();
    let sq = per_example_sq_norms(&signals).unwrap();
    let norms: Vec<f64> = sq
        .to_vec1::<f32>()
        .unwrap()
        .iter()
        .map(|v| f64::from(*v).sqrt())
        .collect();
    let c = clip_factors(&sq, clip).unwrap();
    (norms, clipped_sums(&signals, &c).unwrap())
}

#[test]
fn fast_clipped_sum_equals_the_per_example_reference() {
    let mut rng = rand::rngs::StdRng::seed_from_u64(11);
    let d = 9;
    let ae_loss = |y: &Tensor, x: &Tensor, _t: Option<&Tensor>| bce_rows(y, x);
    for trial in 0..12 {
        let net = if trial % 2 == 0 {
            rich_net(&mut rng, d)
        } else {
            let act = [Act::Relu, Act::Tanh, Act::Sigmoid, Act::LeakyRelu(0.2)][trial % 4];
            let mut blocks = mlp(&[d, 7, 5, d], act, &Device::Cpu, &mut rng).unwrap();
            blocks.push(Block::Head(vec![HeadSpan {
                start: 0,
                len: d,
                kind: HeadKind::Sigmoid,
            }]));
            Net::new(blocks, &Device::Cpu)
        };
        let batch = [1usize, 2, 5, 16, 33, 64][trial % 6];
        let x = rand_data(&mut rng, batch, d);
        // Clip at the median norm so both clipped and unclipped examples occur.
        let (ref_norms, _) = reference::clipped_sum(&net, &x, 1e9, ae_loss).unwrap();
        let mut sorted = ref_norms.clone();
        sorted.sort_by(f64::total_cmp);
        let clip = sorted[sorted.len() / 2];
        let (ref_norms, ref_sum) = reference::clipped_sum(&net, &x, clip, ae_loss).unwrap();
        let (norms, sum) = fast_clipped(&net, &x, clip, &ae_loss);
        for (a, b) in norms.iter().zip(&ref_norms) {
            assert!(
                (a - b).abs() <= 1e-5 * b.max(1e-6),
                "trial {trial}: norm {a} vs {b}"
            );
        }
        assert_eq!(sum.len(), ref_sum.len());
        for (k, (a, b)) in sum.iter().zip(&ref_sum).enumerate() {
            let r = rel_diff(a, b);
            assert!(
                r <= 1e-5,
                "trial {trial}, parameter {k}: relative difference {r:e}"
            );
        }
    }
}

#[test]
fn a_critic_loss_matches_too() {
    // WGAN critic on real records: per-example loss −D(x).
    let mut rng = rand::rngs::StdRng::seed_from_u64(5);
    let net = Net::new(
        mlp(&[20, 14, 7, 1], Act::LeakyRelu(0.2), &Device::Cpu, &mut rng).unwrap(),
        &Device::Cpu,
    );
    let loss = |y: &Tensor, _x: &Tensor, _t: Option<&Tensor>| y.neg()?.sum(1);
    let x = rand_data(&mut rng, 40, 20);
    let (_, r) = reference::clipped_sum(&net, &x, 0.05, loss).unwrap();
    let (_, f) = fast_clipped(&net, &x, 0.05, &loss);
    for (a, b) in f.iter().zip(&r) {
        assert!(rel_diff(a, b) <= 1e-5);
    }
}

#[test]
fn empty_and_single_batches_release_noise_of_the_right_scale() {
    let mut rng = rand::rngs::StdRng::seed_from_u64(3);
    let net = Net::new(
        mlp(&[6, 4, 1], Act::Relu, &Device::Cpu, &mut rng).unwrap(),
        &Device::Cpu,
    );
    let cfg = DpSgdConfig {
        clip: 0.5,
        noise_multiplier: 2.0,
        sample_rate: 0.01,
        n_records: 1000,
    };
    let mut noise = NoiseSource::from_seed(9);
    let mut vals = Vec::new();
    for _ in 0..400 {
        let (g, _) = private_grads(&net, &[], &cfg, &mut noise).unwrap();
        for t in g {
            vals.extend(
                t.flatten_all()
                    .unwrap()
                    .to_vec1::<f32>()
                    .unwrap()
                    .into_iter()
                    .map(f64::from),
            );
        }
    }
    let n = vals.len() as f64;
    let mean = vals.iter().sum::<f64>() / n;
    let std = (vals.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / n).sqrt();
    let want = 2.0 * 0.5 / (0.01 * 1000.0);
    assert!(mean.abs() < 4.0 * want / n.sqrt(), "mean {mean}");
    assert!(
        (std / want - 1.0).abs() < 0.02,
        "std {std} vs σC/(qN) = {want}"
    );
    // A batch of one: still clipped to C and noised.
    let x = Tensor::ones((1, 6), DType::F32, &Device::Cpu).unwrap();
    let (f_norms, _) = fast_clipped(
        &net,
        &x,
        0.5,
        &|y: &Tensor, _x: &Tensor, _t: Option<&Tensor>| y.sum(1),
    );
    assert_eq!(f_norms.len(), 1);
}

#[test]
fn poisson_batches_have_binomial_sizes() {
    let mut noise = NoiseSource::from_seed(1);
    let (n, q) = (2000usize, 0.03);
    let sizes: Vec<f64> = (0..2000)
        .map(|_| noise.poisson_batch(n, q).len() as f64)
        .collect();
    let mean = sizes.iter().sum::<f64>() / sizes.len() as f64;
    let var = sizes.iter().map(|s| (s - mean).powi(2)).sum::<f64>() / sizes.len() as f64;
    let (m0, v0) = (n as f64 * q, n as f64 * q * (1.0 - q));
    assert!(
        (mean - m0).abs() < 4.0 * (v0 / sizes.len() as f64).sqrt(),
        "mean {mean} vs {m0}"
    );
    assert!((var / v0 - 1.0).abs() < 0.15, "variance {var} vs {v0}");
    // Indices are distinct and sorted: no record appears twice in a batch.
    let b = noise.poisson_batch(n, 0.5);
    assert!(b.windows(2).all(|w| w[0] < w[1]));
}

#[test]
fn each_step_is_charged_first_and_training_stops_at_the_budget() {
    let mut rng = rand::rngs::StdRng::seed_from_u64(2);
    let net = Net::new(
        mlp(&[5, 8, 1], Act::Tanh, &Device::Cpu, &mut rng).unwrap(),
        &Device::Cpu,
    );
    let data = rand_data(&mut rng, 500, 5);
    let cfg = DpSgdConfig {
        clip: 1.0,
        noise_multiplier: 1.0,
        sample_rate: 0.05,
        n_records: 500,
    };
    let mut acc = Accountant::new(Budget {
        epsilon: 2.0,
        delta: 1e-5,
    });
    let mut opt = Adam::new(0.01);
    let mut noise = NoiseSource::from_seed(4);
    let mut steps = 0u64;
    while let Some(r) = dp_step(
        &net,
        &mut opt,
        &data,
        None,
        &cfg,
        &mut noise,
        &mut acc,
        |y: &Tensor, _: &Tensor, _: Option<&Tensor>| y.sum(1),
    )
    .unwrap()
    {
        assert!(r.batch <= 500);
        steps += 1;
        assert!(steps < 100_000);
    }
    assert!(steps > 0);
    assert!(acc.spent().epsilon <= 2.0);
    assert_eq!(acc.history()[0].count, steps);
    let expected =
        dpsynth::privacy::calibrate::max_steps(0.05, 1.0, 2.0, 1e-5, acc.orders(), 1_000_000);
    assert_eq!(steps, expected, "stopped at the last step that fits");
}

#[test]
fn batch_norm_is_refused_for_dp() {
    let dev = Device::Cpu;
    let net = Net::new(
        vec![
            Block::Linear(Linear::new(3, 3, true, &dev, &mut rand::rng()).unwrap()),
            Block::BatchNorm(dpsynth::nn::layers::BatchNorm::new(3, &dev).unwrap()),
        ],
        &dev,
    );
    let e = net.check_dp_compatible().unwrap_err().to_string();
    assert!(e.contains("batch normalisation"), "{e}");
}

#[test]
fn dp_training_learns_on_real_data() {
    // Logistic regression of Adult's income on the other encoded columns, by DP-SGD.
    let t = dpsynth::data::csv::load_csv(
        &std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("assets/adult/adult_train.csv"),
        &Default::default(),
    )
    .unwrap();
    let schema = dpsynth::data::infer::infer_schema(&t).unwrap().schema;
    let enc = dpsynth::data::encode::Encoding::new(&schema).unwrap();
    let e = enc.encode(&t).unwrap();
    let (n, w) = (e.n_rows, e.width);
    let all = Tensor::from_vec(e.values.clone(), (n, w), &Device::Cpu).unwrap();
    // income is the last schema column and binary: the last encoded column.
    let x = all.narrow(1, 0, w - 1).unwrap().contiguous().unwrap();
    let y = all.narrow(1, w - 1, 1).unwrap().contiguous().unwrap();
    let mut rng = rand::rngs::StdRng::seed_from_u64(8);
    let net = Net::new(
        mlp(&[w - 1, 1], Act::Relu, &Device::Cpu, &mut rng).unwrap(),
        &Device::Cpu,
    );
    // Stable logistic loss: max(z,0) − z·t + log(1 + e^{−|z|}).
    let loss = |z: &Tensor, _x: &Tensor, t: Option<&Tensor>| -> candle_core::Result<Tensor> {
        let t = t.expect("targets");
        ((z.relu()? - (z * t)?)? + (z.abs()?.neg()?.exp()? + 1.0)?.log()?)?.sum(1)
    };
    let eval = |net: &Net| -> f64 {
        let z = net.forward(&x, None).unwrap();
        let l = loss(&z, &x, Some(&y)).unwrap().mean_all().unwrap();
        f64::from(l.to_scalar::<f32>().unwrap())
    };
    let before = eval(&net);
    let cfg = DpSgdConfig {
        clip: 1.0,
        noise_multiplier: 1.0,
        sample_rate: 256.0 / n as f64,
        n_records: n,
    };
    let mut acc = Accountant::new(Budget {
        epsilon: 2.0,
        delta: 1e-5,
    });
    let mut opt = Adam::new(0.02);
    let mut noise = NoiseSource::from_seed(6);
    for _ in 0..300 {
        if dp_step(
            &net,
            &mut opt,
            &x,
            Some(&y),
            &cfg,
            &mut noise,
            &mut acc,
            loss,
        )
        .unwrap()
        .is_none()
        {
            break;
        }
    }
    let after = eval(&net);
    assert!(
        after < before - 0.05,
        "DP-SGD did not learn: loss {before} → {after}"
    );
    assert!(acc.spent().epsilon <= 2.0);
}

#[test]
fn bench_cli_prints_the_contract_shape() {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_dpsynth"))
        .args(["bench", "dpsgd", "--json", "--steps", "5"])
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let nets = v["networks"].as_array().unwrap();
    assert_eq!(nets.len(), 4);
    for n in nets {
        assert!(n["name"].is_string());
        for k in ["private_step_s", "nonprivate_step_s", "ratio"] {
            assert!(n[k].as_f64().is_some_and(|x| x > 0.0), "{k} in {n}");
        }
    }
    assert!(nets[0]["reference_step_s"].as_f64().is_some());
}

#[test]
fn tanh_heads_and_dropout_blocks_match_the_reference() {
    let mut rng = rand::rngs::StdRng::seed_from_u64(21);
    let dev = Device::Cpu;
    let mut blocks = mlp(&[6, 10], Act::Relu, &dev, &mut rng).unwrap();
    blocks.push(Block::Act(Act::Relu));
    blocks.push(Block::Dropout(0.0));
    blocks.extend(mlp(&[10, 6], Act::Relu, &dev, &mut rng).unwrap());
    blocks.push(Block::Head(vec![
        HeadSpan {
            start: 0,
            len: 3,
            kind: HeadKind::Tanh,
        },
        HeadSpan {
            start: 3,
            len: 3,
            kind: HeadKind::Softmax,
        },
    ]));
    let net = Net::new(blocks, &dev);
    let loss = |y: &Tensor, x: &Tensor, _t: Option<&Tensor>| (y - x)?.sqr()?.sum(1);
    let x = rand_data(&mut rng, 24, 6);
    let (_, r) = reference::clipped_sum(&net, &x, 0.3, loss).unwrap();
    let (_, f) = fast_clipped(&net, &x, 0.3, &loss);
    for (a, b) in f.iter().zip(&r) {
        assert!(rel_diff(a, b) <= 1e-5);
    }
}

#[test]
fn dropout_masks_in_training_and_passes_through_at_inference() {
    let dev = Device::Cpu;
    let net = Net::new(vec![Block::Dropout(0.5)], &dev);
    let x = Tensor::ones((50, 40), DType::F32, &dev).unwrap();
    let mut rng = rand::rngs::StdRng::seed_from_u64(2);
    let (y, caches) = net.forward_train(&x, Some(&mut rng)).unwrap();
    let v: Vec<f32> = y.flatten_all().unwrap().to_vec1().unwrap();
    let zeros = v.iter().filter(|a| **a == 0.0).count() as f64 / v.len() as f64;
    assert!((zeros - 0.5).abs() < 0.05, "{zeros}");
    assert!(v.iter().all(|a| *a == 0.0 || (*a - 2.0).abs() < 1e-6));
    // The gradient flows through exactly the kept units.
    let (dx, _) = net
        .backward(&caches, &Tensor::ones((50, 40), DType::F32, &dev).unwrap())
        .unwrap();
    assert_eq!(dx.flatten_all().unwrap().to_vec1::<f32>().unwrap(), v);
    let e = net.forward(&x, None).unwrap();
    assert_eq!(
        e.flatten_all().unwrap().to_vec1::<f32>().unwrap(),
        vec![1.0; 2000]
    );
}

#[test]
fn clip_factors_are_exact_in_f64_and_drop_non_finite_norms() {
    let sq = Tensor::new(&[0.25f32, 4.0, 1e30, f32::NAN, f32::INFINITY], &Device::Cpu).unwrap();
    let c: Vec<f32> = clip_factors(&sq, 1.0).unwrap().to_vec1().unwrap();
    assert_eq!(c[0], 1.0, "inside the ball: untouched");
    assert!(c[1] <= 0.5 && c[1] > 0.4999, "{}", c[1]);
    for (i, n) in [(1usize, 2.0f64), (2, 1e15)] {
        assert!(f64::from(c[i]) * n <= 1.0, "clipped norm must not exceed C");
    }
    assert_eq!(
        (c[3], c[4]),
        (0.0, 0.0),
        "a non-finite norm contributes nothing"
    );
}

/// Convolutions, strided and transposed, against the per-example reference (candle's
/// own conv2d / conv_transpose2d with autograd, one example at a time). The shapes are
/// chosen so that both per-example norm paths run: the first convolution (many
/// positions, few channels) takes the direct path, the second the ghost path; and both
/// paths agree on every layer.
#[test]
fn convolutions_match_the_per_example_reference_on_both_norm_paths() {
    use dpsynth::nn::conv::{Conv2d, ConvShape};
    use dpsynth::nn::layers::Signal;
    let mut rng = rand::rngs::StdRng::seed_from_u64(31);
    let dev = Device::Cpu;
    let shape = |cin, h, cout, k, stride, pad, transposed| ConvShape {
        cin,
        h,
        w: h,
        cout,
        k,
        stride,
        pad,
        transposed,
    };
    // A linear layer, then label maps (3 label values inside the row, 64 pixels: 4
    // channels), so their adjoint is on the path of the first layer's gradient.
    let s1 = shape(4, 8, 4, 3, 2, 1, false); // 8×8 → 4×4: direct
    let s2 = shape(4, 4, 8, 3, 2, 1, false); // 4×4 → 2×2: ghost
    let s3 = shape(8, 2, 2, 4, 2, 1, true); // 2×2 → 4×4, upsampling
    assert!(!s1.ghost_is_cheaper() && s2.ghost_is_cheaper());
    let net = Net::new(
        vec![
            Block::Linear(Linear::new(67, 67, true, &dev, &mut rng).unwrap()),
            Block::LabelMaps {
                start: 5,
                classes: 3,
                pixels: 64,
            },
            Block::Conv(Conv2d::new(s1, true, &dev, &mut rng).unwrap()),
            Block::Act(Act::LeakyRelu(0.2)),
            Block::Conv(Conv2d::new(s2, false, &dev, &mut rng).unwrap()),
            Block::Act(Act::Tanh),
            Block::Conv(Conv2d::new(s3, true, &dev, &mut rng).unwrap()),
            Block::Act(Act::Relu),
            Block::Linear(Linear::new(32, 3, true, &dev, &mut rng).unwrap()),
        ],
        &dev,
    );
    let loss = |y: &Tensor, _x: &Tensor, _t: Option<&Tensor>| (y.sqr()? + y)?.sum(1);
    for batch in [1usize, 7, 20] {
        let x = rand_data(&mut rng, batch, 67);
        let (ref_norms, _) = reference::clipped_sum(&net, &x, 1e9, loss).unwrap();
        let mut sorted = ref_norms.clone();
        sorted.sort_by(f64::total_cmp);
        let clip = sorted[sorted.len() / 2];
        let (ref_norms, r) = reference::clipped_sum(&net, &x, clip, loss).unwrap();
        let (norms, f) = fast_clipped(&net, &x, clip, &loss);
        for (a, b) in norms.iter().zip(&ref_norms) {
            assert!(
                (a - b).abs() <= 1e-4 * b.max(1e-6),
                "batch {batch}: {a} vs {b}"
            );
        }
        assert_eq!(f.len(), r.len());
        for (k, (a, b)) in f.iter().zip(&r).enumerate() {
            let d = rel_diff(a, b);
            assert!(d <= 1e-4, "batch {batch}, parameter {k}: {d:e}");
        }
        // Ghost and direct norms agree layer by layer.
        let (y, caches) = net.forward_train(&x, None).unwrap();
        let (_, dy) = dpsynth::nn::layers::loss_grad(&y, |y| loss(y, &x, None)).unwrap();
        let (_, signals) = net.backward(&caches, &dy).unwrap();
        for s in &signals {
            if let Signal::Conv(c) = s {
                let g = c.sq_norms_by(true).unwrap();
                let d = c.sq_norms_by(false).unwrap();
                assert!(rel_diff(&g, &d) <= 1e-5);
            }
        }
    }
}

/// `dpsynth train` hands GPU work to `dpsynth-cuda` installed beside it when the NVIDIA
/// driver library loads, and keeps CPU work (and everything when no driver loads) itself.
/// The driver is faked by any loadable library named `libcuda.so.1` on the loader's path;
/// the CUDA binary by a script that says it ran.
#[cfg(target_os = "linux")]
#[test]
fn gpu_work_goes_to_the_cuda_binary_only_where_the_driver_loads() {
    use std::os::unix::fs::PermissionsExt as _;
    let dir = tempfile::tempdir().unwrap();
    let bin = dir.path().join("dpsynth");
    std::fs::copy(env!("CARGO_BIN_EXE_dpsynth"), &bin).unwrap();
    let cuda = dir.path().join("dpsynth-cuda");
    std::fs::write(&cuda, "#!/bin/sh\necho \"cuda binary: $*\"\n").unwrap();
    std::fs::set_permissions(&cuda, std::fs::Permissions::from_mode(0o755)).unwrap();
    let driver = dir.path().join("driver");
    std::fs::create_dir(&driver).unwrap();
    let any_library = [
        "/lib/x86_64-linux-gnu/libm.so.6",
        "/usr/lib/x86_64-linux-gnu/libm.so.6",
        "/lib64/libm.so.6",
    ]
    .into_iter()
    .find(|p| std::path::Path::new(p).exists());
    let Some(lib) = any_library else {
        eprintln!("no libm to stand in for the driver; skipped");
        return;
    };
    std::fs::copy(lib, driver.join("libcuda.so.1")).unwrap();
    let run = |args: &[&str], with_driver: bool| {
        let mut c = std::process::Command::new(&bin);
        c.args(args).env_remove("DPSYNTH_HANDOFF");
        if with_driver {
            c.env("LD_LIBRARY_PATH", &driver);
        }
        let out = c.output().unwrap();
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let train = [
        "train",
        "--data",
        "missing.csv",
        "--method",
        "aim",
        "--epsilon",
        "1",
        "--delta",
        "1e-5",
    ];
    assert!(run(&train, true).starts_with("cuda binary: train --data missing.csv"));
    // No driver: the command runs here (and fails here, on the missing file).
    assert!(!run(&train, false).contains("cuda binary"));
    // CPU work stays, driver or not.
    let mut cpu = train.to_vec();
    cpu.extend(["--device", "cpu"]);
    assert!(!run(&cpu, true).contains("cuda binary"));
    assert!(!run(&["methods"], true).contains("cuda binary"));
}
