//! The evaluation metrics against `tests/fixtures/metrics_reference.json` (a copy of the shared reference) (scikit-learn,
//! SciPy and POT on fixed inputs), within the tolerances of its README.

use crate::common;

use dpsynth::eval::{pca::Pca, scores, stats, transport};
use serde_json::Value;

fn fixture() -> Value {
    let text = std::fs::read_to_string(common::repo("tests/fixtures/metrics_reference.json"))
        .expect("metrics fixture present");
    serde_json::from_str(&text).expect("fixture parses")
}

fn num(v: &Value) -> f64 {
    match v {
        Value::Number(n) => n.as_f64().expect("f64"),
        Value::String(s) if s == "nan" => f64::NAN,
        Value::String(s) if s == "inf" => f64::INFINITY,
        Value::String(s) if s == "-inf" => f64::NEG_INFINITY,
        other => panic!("not a number: {other}"),
    }
}
fn vec1(v: &Value) -> Vec<f64> {
    v.as_array().expect("array").iter().map(num).collect()
}
fn mat(v: &Value) -> Vec<Vec<f64>> {
    v.as_array().expect("rows").iter().map(vec1).collect()
}
fn close(ours: f64, want: f64, tol: f64, what: &str) {
    let ok = (ours.is_nan() && want.is_nan()) || (ours - want).abs() <= tol;
    assert!(
        ok,
        "{what}: ours {ours} vs reference {want} (tolerance {tol})"
    );
}
fn cases<'a>(f: &'a Value, section: &str, key: &str) -> &'a Vec<Value> {
    f[section][key].as_array().expect("cases")
}

#[test]
fn binary_scores() {
    let f = fixture();
    for c in cases(&f, "binary_scores", "cases") {
        let name = c["name"].as_str().unwrap_or("?");
        let y: Vec<bool> = vec1(&c["inputs"]["y_true"])
            .iter()
            .map(|&v| v == 1.0)
            .collect();
        let s = vec1(&c["inputs"]["y_score"]);
        let e = &c["expected"];
        let auc = scores::roc_auc(&y, &s).unwrap_or(f64::NAN);
        close(auc, num(&e["roc_auc"]), 1e-12, &format!("{name} roc_auc"));
        close(
            scores::average_precision(&y, &s),
            num(&e["average_precision"]),
            1e-12,
            &format!("{name} AP"),
        );
        close(
            scores::pr_auc_trapezoid(&y, &s),
            num(&e["pr_auc_trapezoid"]),
            1e-12,
            &format!("{name} PR trapezoid"),
        );
    }
}

#[test]
fn hard_labels() {
    let f = fixture();
    for c in cases(&f, "hard_labels", "binary_cases") {
        let name = c["name"].as_str().unwrap_or("?");
        let t: Vec<bool> = vec1(&c["inputs"]["y_true"])
            .iter()
            .map(|&v| v == 1.0)
            .collect();
        let p: Vec<bool> = vec1(&c["inputs"]["y_pred"])
            .iter()
            .map(|&v| v == 1.0)
            .collect();
        let e = &c["expected"];
        close(scores::accuracy(&t, &p), num(&e["accuracy"]), 1e-12, name);
        close(
            scores::f1_binary(&t, &p, scores::ZeroDivision::Zero),
            num(&e["f1_binary_zero_division_0"]),
            1e-12,
            name,
        );
        close(
            scores::f1_binary(&t, &p, scores::ZeroDivision::One),
            num(&e["f1_binary_zero_division_1"]),
            1e-12,
            name,
        );
        let ti: Vec<usize> = t.iter().map(|&b| usize::from(b)).collect();
        let pi: Vec<usize> = p.iter().map(|&b| usize::from(b)).collect();
        // scikit-learn averages over the labels present in either vector.
        let mut labels: Vec<usize> = ti.iter().chain(&pi).copied().collect();
        labels.sort_unstable();
        labels.dedup();
        let all = scores::f1_scores(&ti, &pi, &labels, scores::ZeroDivision::Zero);
        close(
            all.micro,
            num(&e["f1_micro"]),
            1e-12,
            &format!("{name} micro"),
        );
        close(
            all.macro_,
            num(&e["f1_macro"]),
            1e-12,
            &format!("{name} macro"),
        );
        close(
            all.weighted,
            num(&e["f1_weighted"]),
            1e-12,
            &format!("{name} weighted"),
        );
    }
    for c in cases(&f, "hard_labels", "multiclass_cases") {
        let name = c["name"].as_str().unwrap_or("?");
        let t: Vec<usize> = vec1(&c["inputs"]["y_true"])
            .iter()
            .map(|&v| v as usize)
            .collect();
        let p: Vec<usize> = vec1(&c["inputs"]["y_pred"])
            .iter()
            .map(|&v| v as usize)
            .collect();
        let e = &c["expected"];
        let labels: Vec<usize> = vec1(&e["labels_used"])
            .iter()
            .map(|&v| v as usize)
            .collect();
        close(scores::accuracy(&t, &p), num(&e["accuracy"]), 1e-12, name);
        for (key, zd) in [
            ("f1_zero_division_0", scores::ZeroDivision::Zero),
            ("f1_zero_division_1", scores::ZeroDivision::One),
            ("f1_zero_division_nan", scores::ZeroDivision::Nan),
        ] {
            let ours = scores::f1_scores(&t, &p, &labels, zd);
            let want = &e[key];
            close(
                ours.micro,
                num(&want["micro"]),
                1e-12,
                &format!("{name} {key} micro"),
            );
            close(
                ours.macro_,
                num(&want["macro"]),
                1e-12,
                &format!("{name} {key} macro"),
            );
            close(
                ours.weighted,
                num(&want["weighted"]),
                1e-12,
                &format!("{name} {key} weighted"),
            );
            for (a, b) in ours.per_class.iter().zip(vec1(&want["per_class"])) {
                close(*a, b, 1e-12, &format!("{name} {key} per class"));
            }
        }
    }
    for c in cases(&f, "hard_labels", "r2_cases") {
        let name = c["name"].as_str().unwrap_or("?");
        let r2 = scores::r2(&vec1(&c["inputs"]["y_true"]), &vec1(&c["inputs"]["y_pred"]));
        close(r2, num(&c["expected"]["r2_force_finite_true"]), 1e-12, name);
    }
}

#[test]
fn wasserstein() {
    let f = fixture();
    for c in cases(&f, "wasserstein", "cases_2d") {
        let name = c["name"].as_str().unwrap_or("?");
        let (x, y) = (mat(&c["inputs"]["x"]), mat(&c["inputs"]["y"]));
        let e = &c["expected"];
        let w1 = transport::wasserstein_exact(&x, &y, 1).expect("small enough");
        close(w1, num(&e["w1"]), 1e-9, &format!("{name} w1"));
        let w2 = transport::wasserstein_exact(&x, &y, 2).expect("small enough");
        close(w2, num(&e["w2"]), 1e-9, &format!("{name} w2"));
    }
    for c in cases(&f, "wasserstein", "cases_1d") {
        let name = c["name"].as_str().unwrap_or("?");
        let i = &c["inputs"];
        let (uw, vw) = (
            (!i["u_weights"].is_null()).then(|| vec1(&i["u_weights"])),
            (!i["v_weights"].is_null()).then(|| vec1(&i["v_weights"])),
        );
        let w = transport::w1_1d(
            &vec1(&i["u_values"]),
            &vec1(&i["v_values"]),
            uw.as_deref(),
            vw.as_deref(),
        );
        close(w, num(&c["expected"]["w1"]), 1e-12, name);
    }
}

#[test]
fn pca() {
    let f = fixture();
    for c in cases(&f, "pca", "cases") {
        let x = mat(&c["inputs"]["x"]);
        let (n, d) = (x.len(), x[0].len());
        let flat: Vec<f64> = x.iter().flatten().copied().collect();
        let p = Pca::fit(&flat, n, d, 2).expect("fits");
        let e = &c["expected"];
        for (a, b) in p.mean.iter().zip(vec1(&e["mean"])) {
            close(*a, b, 1e-12, "mean");
        }
        for (a, b) in p
            .explained_variance
            .iter()
            .zip(vec1(&e["explained_variance"]))
        {
            close(*a, b, 1e-10 * b.abs(), "explained variance");
        }
        for (a, b) in p
            .explained_variance_ratio
            .iter()
            .zip(vec1(&e["explained_variance_ratio"]))
        {
            close(*a, b, 1e-9, "explained variance ratio");
        }
        for (ra, rb) in p
            .components
            .iter()
            .zip(mat(&e["components_sign_normalised"]))
        {
            for (a, b) in ra.iter().zip(rb) {
                close(*a, b, 1e-9, "component");
            }
        }
        for (pt, want) in mat(&c["inputs"]["extra_points"])
            .iter()
            .zip(mat(&e["extra_points_projection"]))
        {
            for (a, b) in p.project(pt).iter().zip(want) {
                close(*a, b, 1e-9, "projection");
            }
        }
    }
}

#[test]
fn mmd() {
    let f = fixture();
    for c in cases(&f, "mmd", "cases") {
        let name = c["name"].as_str().unwrap_or("?");
        let (x, y) = (mat(&c["inputs"]["x"]), mat(&c["inputs"]["y"]));
        let e = &c["expected"];
        close(
            stats::median_heuristic(&x, &y),
            num(&e["median_heuristic_s"]),
            1e-12,
            &format!("{name} median"),
        );
        for r in e["results"].as_array().expect("results") {
            let s = num(&r["s"]);
            let m = stats::mmd2(&x, &y, s);
            close(
                m.biased,
                num(&r["mmd2_biased"]),
                1e-12,
                &format!("{name} biased s={s}"),
            );
            close(
                m.unbiased,
                num(&r["mmd2_unbiased"]),
                1e-12,
                &format!("{name} unbiased s={s}"),
            );
        }
    }
}

#[test]
fn tvd_and_three_way_marginals() {
    let f = fixture();
    for c in cases(&f, "tvd_marginals", "tvd_cases") {
        let name = c["name"].as_str().unwrap_or("?");
        let as_text = |v: &Value| -> Vec<String> {
            v.as_array()
                .expect("array")
                .iter()
                .map(|x| x.to_string())
                .collect()
        };
        let t = stats::tvd(&as_text(&c["inputs"]["a"]), &as_text(&c["inputs"]["b"]));
        close(t, num(&c["expected"]["tvd"]), 1e-12, name);
    }
    for c in cases(&f, "tvd_marginals", "nist_3way_cases") {
        let name = c["name"].as_str().unwrap_or("?");
        let (real, syn) = (mat(&c["inputs"]["real"]), mat(&c["inputs"]["synthetic"]));
        let d = real[0].len();
        let col = |t: &[Vec<f64>], j: usize| -> Vec<f64> { t.iter().map(|r| r[j]).collect() };
        let (mut rb, mut sb) = (vec![], vec![]);
        for j in 0..d {
            let rc = col(&real, j);
            let lo = rc.iter().copied().fold(f64::INFINITY, f64::min);
            let hi = rc.iter().copied().fold(f64::NEG_INFINITY, f64::max);
            rb.push(
                rc.iter()
                    .map(|&x| stats::nist_bin(x, lo, hi))
                    .collect::<Vec<u8>>(),
            );
            sb.push(
                col(&syn, j)
                    .iter()
                    .map(|&x| stats::nist_bin(x, lo, hi))
                    .collect::<Vec<u8>>(),
            );
        }
        let e = &c["expected"];
        if d == 3 {
            let l1 = stats::three_way_l1([&rb[0], &rb[1], &rb[2]], [&sb[0], &sb[1], &sb[2]]);
            close(l1, num(&e["l1"]), 1e-12, name);
        } else {
            let mut ls = vec![];
            for a in 0..d {
                for b in a + 1..d {
                    for cc in b + 1..d {
                        ls.push(stats::three_way_l1(
                            [&rb[a], &rb[b], &rb[cc]],
                            [&sb[a], &sb[b], &sb[cc]],
                        ));
                    }
                }
            }
            let mean = ls.iter().sum::<f64>() / ls.len() as f64;
            close(mean, num(&e["mean_l1"]), 1e-12, name);
        }
    }
}

#[test]
fn pmse() {
    let f = fixture();
    for c in cases(&f, "pmse", "cases") {
        let name = c["name"].as_str().unwrap_or("?");
        let p = stats::pmse(&mat(&c["inputs"]["real"]), &mat(&c["inputs"]["synthetic"]));
        let e = &c["expected"];
        assert!(p.converged, "{name}: Newton converged");
        close(
            p.pmse,
            num(&e["pmse"]),
            1e-8 * num(&e["pmse"]).abs(),
            &format!("{name} pmse"),
        );
        close(
            p.intercept,
            num(&e["intercept"]),
            1e-6,
            &format!("{name} intercept"),
        );
        for (a, b) in p.coef.iter().zip(vec1(&e["coef"])) {
            close(*a, b, 1e-6, &format!("{name} coef"));
        }
    }
}

#[test]
fn agreed_ranking() {
    let f = fixture();
    for c in cases(&f, "agreed_ranking", "cases") {
        let name = c["name"].as_str().unwrap_or("?");
        let p = stats::agreed_ranking(&vec1(&c["inputs"]["a"]), &vec1(&c["inputs"]["c"]))
            .expect("L ≥ 2");
        close(p, num(&c["expected"]["p"]), 1e-12, name);
    }
}

#[test]
fn distance_to_closest_record() {
    let f = fixture();
    for c in cases(&f, "dcr", "cases") {
        let name = c["name"].as_str().unwrap_or("?");
        let i = &c["inputs"];
        let (train, test, syn) = (
            mat(&i["real_train"]),
            mat(&i["real_test"]),
            mat(&i["synthetic"]),
        );
        for (key, q, r) in [
            ("synthetic_to_train", &syn, &train),
            ("synthetic_to_test", &syn, &test),
            ("test_to_train", &test, &train),
        ] {
            let e = &c["expected"][key];
            let got = stats::closest(q, r);
            for ((d, _), want) in got.iter().zip(vec1(&e["min_distance"])) {
                close(*d, want, 1e-12, &format!("{name} {key}"));
            }
            let mut ds: Vec<f64> = got.iter().map(|g| g.0).collect();
            close(
                stats::median(&mut ds),
                num(&e["median"]),
                1e-12,
                &format!("{name} {key} median"),
            );
        }
    }
}
