//! Empirical lower bounds on ε: what an attack can *prove* about a mechanism, to set beside
//! what the accountant *claims*. A guarantee proved on paper is only as good as the code
//! under it; these are the checks that the code keeps it.
//!
//! Two kinds of audit, both sound at a stated confidence (the bound is below the true ε of
//! the code with probability at least 1 − α, whatever the mechanism does):
//!
//! - **Distinguishing tests** ([`audit_scores`], [`audit_outcomes`]): run a mechanism many
//!   times on each of two neighbouring inputs D₀, D₁, pick a rejection region R ("say D₁
//!   when the output is in R") on one half of the draws, and count its false positives
//!   (D₀ draws in R) and false negatives (D₁ draws outside R) on the other half. An
//!   (ε, δ)-DP mechanism has FPR + e^ε·FNR ≥ 1 − δ and FNR + e^ε·FPR ≥ 1 − δ for every R
//!   (Kairouz, Oh & Viswanath 2015), so with Clopper–Pearson upper bounds on both rates
//!   ε ≥ ln((1 − δ − FNR⁺)/FPR⁺) ([`epsilon_lower_bound`]). Choosing R on draws that are
//!   not counted keeps the intervals honest.
//! - **One-run audit** ([`one_run_audit`]; Steinke, Nasr & Jagielski, "Privacy Auditing
//!   with One (1) Training Run", NeurIPS 2023): m canaries, each included independently
//!   with probability ½, one training run, a score per canary; the auditor guesses "in" for
//!   the k₊ highest scores and "out" for the k₋ lowest. Under (ε, δ)-DP the number of
//!   correct guesses v out of r is at most Binomial(r, e^ε/(1 + e^ε)) plus a δ term
//!   ([`one_run_p_value`], the paper's Theorem 5.2 and its Algorithm), so the largest ε at
//!   which v is still unlikely at level β is a lower bound with confidence 1 − β.
//!
//! Both give *evidence*, never proof: a low bound says only that this attack could not
//! show more. A bound above the claimed ε (at its confidence) is proof of a bug.

use std::collections::HashMap;
use std::hash::Hash;

/// ln Γ via libm (accurate to about 1e-15 relative over the range used here).
fn ln_gamma(x: f64) -> f64 {
    libm::lgamma(x)
}

/// The regularized incomplete beta function I_x(a, b), by the continued fraction of
/// Numerical Recipes §6.4 (modified Lentz), with the symmetry I_x(a,b) = 1 − I_{1−x}(b,a)
/// where the fraction converges slowly.
pub fn reg_inc_beta(a: f64, b: f64, x: f64) -> f64 {
    if x <= 0.0 {
        return 0.0;
    }
    if x >= 1.0 {
        return 1.0;
    }
    let ln_front = ln_gamma(a + b) - ln_gamma(a) - ln_gamma(b) + a * x.ln() + b * (1.0 - x).ln();
    if x < (a + 1.0) / (a + b + 2.0) {
        (ln_front.exp() * beta_cf(a, b, x) / a).clamp(0.0, 1.0)
    } else {
        (1.0 - ln_front.exp() * beta_cf(b, a, 1.0 - x) / b).clamp(0.0, 1.0)
    }
}

fn beta_cf(a: f64, b: f64, x: f64) -> f64 {
    const TINY: f64 = 1e-300;
    let guard = |v: f64| if v.abs() < TINY { TINY } else { v };
    let (qab, qap, qam) = (a + b, a + 1.0, a - 1.0);
    let mut c = 1.0;
    let mut d = 1.0 / guard(1.0 - qab * x / qap);
    let mut h = d;
    // One Lentz step for the fraction's next coefficient; returns the factor h moves by.
    let mut step = |aa: f64| {
        d = 1.0 / guard(1.0 + aa * d);
        c = guard(1.0 + aa / c);
        d * c
    };
    for m in 1..10_000 {
        let m = m as f64;
        let m2 = 2.0 * m;
        h *= step(m * (b - m) * x / ((qam + m2) * (a + m2)));
        let del = step(-(a + m) * (qab + m) * x / ((a + m2) * (qap + m2)));
        h *= del;
        if (del - 1.0).abs() < 1e-15 {
            break;
        }
    }
    h
}

/// P[Binomial(n, p) ≥ k].
pub fn binom_sf(k: u64, n: u64, p: f64) -> f64 {
    if k == 0 {
        return 1.0;
    }
    if k > n {
        return 0.0;
    }
    reg_inc_beta(k as f64, (n - k + 1) as f64, p)
}

/// P[Binomial(n, p) = k].
pub fn binom_pmf(k: u64, n: u64, p: f64) -> f64 {
    if k > n {
        return 0.0;
    }
    let (k, n) = (k as f64, n as f64);
    if p <= 0.0 {
        return if k == 0.0 { 1.0 } else { 0.0 };
    }
    if p >= 1.0 {
        return if k == n { 1.0 } else { 0.0 };
    }
    (ln_gamma(n + 1.0) - ln_gamma(k + 1.0) - ln_gamma(n - k + 1.0)
        + k * p.ln()
        + (n - k) * (1.0 - p).ln())
    .exp()
}

/// The one-sided Clopper–Pearson upper bound on a rate from `k` events in `n` trials: the
/// p at which P[Binomial(n, p) ≤ k] = α (1 when n = 0: nothing is known).
pub fn cp_upper(k: u64, n: u64, alpha: f64) -> f64 {
    if n == 0 || k >= n {
        return 1.0;
    }
    bisect(|p| 1.0 - binom_sf(k + 1, n, p) > alpha)
}

/// The one-sided Clopper–Pearson lower bound: the p at which P[Binomial(n, p) ≥ k] = α.
pub fn cp_lower(k: u64, n: u64, alpha: f64) -> f64 {
    if n == 0 || k == 0 {
        return 0.0;
    }
    bisect(|p| binom_sf(k, n, p) < alpha)
}

/// The boundary in [0, 1] of a predicate true below it and false above.
fn bisect(below: impl Fn(f64) -> bool) -> f64 {
    let (mut lo, mut hi) = (0.0f64, 1.0f64);
    for _ in 0..80 {
        let mid = 0.5 * (lo + hi);
        if below(mid) {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    hi
}

/// Counts of one rejection region on held-out draws.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct Rates {
    /// D₀ draws inside the region (said "D₁" wrongly).
    pub false_positives: u64,
    pub negatives: u64,
    /// D₁ draws outside the region.
    pub false_negatives: u64,
    pub positives: u64,
}

/// The lower bound on ε that `r` proves for an (ε, `delta`)-DP claim, at confidence
/// 1 − `alpha` (both rates' upper bounds hold together with probability ≥ 1 − α).
pub fn epsilon_lower_bound(r: Rates, delta: f64, alpha: f64) -> f64 {
    let fpr = cp_upper(r.false_positives, r.negatives, alpha / 2.0);
    let fnr = cp_upper(r.false_negatives, r.positives, alpha / 2.0);
    let one = |a: f64, b: f64| {
        let num = 1.0 - delta - a;
        if num <= 0.0 || b <= 0.0 {
            return 0.0;
        }
        (num / b).ln()
    };
    one(fnr, fpr).max(one(fpr, fnr)).max(0.0)
}

/// A distinguishing test's result.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct MechanismAudit {
    /// ε proved at the confidence, ≥ 0.
    pub lower_bound: f64,
    pub confidence: f64,
    /// Draws per input, both halves.
    pub draws: usize,
    /// The region's rates on the held-out half.
    pub rates: Rates,
    /// The region, in words.
    pub region: String,
}

/// Audits a mechanism with a real-valued output statistic: `d0`, `d1` are its values on
/// draws from the two neighbouring inputs. The region "statistic ≥ t" (or "≤ t") is chosen
/// on the first half of each list and evaluated on the second.
pub fn audit_scores(d0: &[f64], d1: &[f64], delta: f64, alpha: f64) -> MechanismAudit {
    let (s0, h0) = d0.split_at(d0.len() / 2);
    let (s1, h1) = d1.split_at(d1.len() / 2);
    let mut pooled: Vec<f64> = s0
        .iter()
        .chain(s1)
        .copied()
        .filter(|x| x.is_finite())
        .collect();
    pooled.sort_by(f64::total_cmp);
    let mut best = (f64::NEG_INFINITY, 0.0, true);
    let candidates = 400usize;
    for i in 0..candidates {
        let Some(&t) = pooled.get(i * pooled.len() / candidates) else {
            continue;
        };
        for above in [true, false] {
            let b = epsilon_lower_bound(region_rates(s0, s1, t, above), delta, alpha);
            if b > best.0 {
                best = (b, t, above);
            }
        }
    }
    let (_, t, above) = best;
    let rates = region_rates(h0, h1, t, above);
    MechanismAudit {
        lower_bound: epsilon_lower_bound(rates, delta, alpha),
        confidence: 1.0 - alpha,
        draws: d0.len().min(d1.len()),
        rates,
        region: format!("statistic {} {t:.4}", if above { "≥" } else { "≤" }),
    }
}

fn region_rates(d0: &[f64], d1: &[f64], t: f64, above: bool) -> Rates {
    let inside = |x: &f64| if above { *x >= t } else { *x <= t };
    Rates {
        false_positives: d0.iter().filter(|x| inside(x)).count() as u64,
        negatives: d0.len() as u64,
        false_negatives: d1.iter().filter(|x| !inside(x)).count() as u64,
        positives: d1.len() as u64,
    }
}

/// Audits a mechanism with discrete outputs (a chosen index, a set of released levels,
/// rounded bounds): the region is the set of outputs most over-represented under one input
/// on the first half of the draws (outputs ranked by their count ratio, the best prefix),
/// counted on the second half.
pub fn audit_outcomes<K: Hash + Eq + Clone + std::fmt::Debug>(
    d0: &[K],
    d1: &[K],
    delta: f64,
    alpha: f64,
) -> MechanismAudit {
    let (s0, h0) = d0.split_at(d0.len() / 2);
    let (s1, h1) = d1.split_at(d1.len() / 2);
    let count = |xs: &[K]| {
        let mut m: HashMap<K, u64> = HashMap::new();
        for x in xs {
            *m.entry(x.clone()).or_default() += 1;
        }
        m
    };
    let (c0, c1) = (count(s0), count(s1));
    let mut best: (f64, Vec<K>, bool) = (f64::NEG_INFINITY, Vec::new(), true);
    for favour_d1 in [true, false] {
        let (num, den) = if favour_d1 { (&c1, &c0) } else { (&c0, &c1) };
        let mut keys: Vec<(f64, K)> = num
            .keys()
            .chain(den.keys())
            .map(|k| {
                let a = num.get(k).copied().unwrap_or(0) as f64;
                let b = den.get(k).copied().unwrap_or(0) as f64;
                ((a + 0.5) / (b + 0.5), k.clone())
            })
            .collect();
        keys.sort_by(|a, b| b.0.total_cmp(&a.0));
        keys.dedup_by(|a, b| a.1 == b.1);
        let mut region: Vec<K> = Vec::new();
        for (_, k) in keys.into_iter().take(64) {
            region.push(k);
            let r = set_rates(s0, s1, &region, favour_d1);
            let b = epsilon_lower_bound(r, delta, alpha);
            if b > best.0 {
                best = (b, region.clone(), favour_d1);
            }
        }
    }
    let (_, region, favour_d1) = best;
    let rates = set_rates(h0, h1, &region, favour_d1);
    MechanismAudit {
        lower_bound: epsilon_lower_bound(rates, delta, alpha),
        confidence: 1.0 - alpha,
        draws: d0.len().min(d1.len()),
        rates,
        region: format!(
            "output {} {:?}",
            if favour_d1 { "in" } else { "not in" },
            region
        ),
    }
}

/// Rates of "say D₁ when the output is in `set`" (or not in it, `favour_d1` false).
fn set_rates<K: Eq>(d0: &[K], d1: &[K], set: &[K], favour_d1: bool) -> Rates {
    let inside = |x: &K| set.contains(x) == favour_d1;
    Rates {
        false_positives: d0.iter().filter(|x| inside(x)).count() as u64,
        negatives: d0.len() as u64,
        false_negatives: d1.iter().filter(|x| !inside(x)).count() as u64,
        positives: d1.len() as u64,
    }
}

/// The probability of at least `v` correct guesses out of `r` (of `m` canaries) under an
/// (ε, δ)-DP null hypothesis (Steinke, Nasr & Jagielski 2023, Theorem 5.2): with
/// q = e^ε/(1 + e^ε), P[Binomial(r, q) ≥ v] + 2mδ·max_{i ≤ v} P[v − i ≤ Binomial(r, q) < v]/i.
pub fn one_run_p_value(m: u64, r: u64, v: u64, epsilon: f64, delta: f64) -> f64 {
    let q = 1.0 / (1.0 + (-epsilon).exp());
    let beta = binom_sf(v, r, q);
    let mut alpha: f64 = 0.0;
    let mut sum = 0.0;
    for i in 1..=v {
        sum += binom_pmf(v - i, r, q);
        alpha = alpha.max(sum / i as f64);
    }
    (beta + alpha * delta * 2.0 * m as f64).min(1.0)
}

/// The largest ε at which `v` correct guesses of `r` stay below level `beta`: a lower bound
/// on the true ε with confidence 1 − β (0 when even ε = 0 explains them).
pub fn one_run_epsilon(m: u64, r: u64, v: u64, delta: f64, beta: f64) -> f64 {
    if one_run_p_value(m, r, v, 0.0, delta) >= beta {
        return 0.0;
    }
    let mut hi = 1.0;
    while one_run_p_value(m, r, v, hi, delta) < beta && hi < 100.0 {
        hi *= 2.0;
    }
    let mut lo = 0.0;
    for _ in 0..60 {
        let mid = 0.5 * (lo + hi);
        if one_run_p_value(m, r, v, mid, delta) < beta {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    lo
}

/// A one-run audit's result.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct OneRunAudit {
    pub canaries: u64,
    /// Guesses made (k₊ "in" + k₋ "out") and how many were right.
    pub guesses: u64,
    pub correct: u64,
    pub k_plus: u64,
    pub k_minus: u64,
    /// Of the k₊ "in" guesses, how many were right (for the attack's measured TPR/FPR).
    pub right_in: u64,
    pub lower_bound: f64,
    pub confidence: f64,
}

/// Steinke et al.'s one-run audit over canary `scores` (higher: more likely included) and
/// whether each canary was in fact `included`. Several guess counts (k₊, k₋) are tried and
/// the best bound is kept, each at level β divided by the number tried (a union bound, so
/// the choice does not inflate the confidence).
pub fn one_run_audit(scores: &[f64], included: &[bool], delta: f64, beta: f64) -> OneRunAudit {
    let m = scores.len().min(included.len());
    let mut order: Vec<usize> = (0..m).collect();
    // Non-finite scores sort as the least confident.
    let key = |i: usize| {
        if scores[i].is_finite() {
            scores[i]
        } else {
            0.0
        }
    };
    order.sort_by(|a, b| key(*b).total_cmp(&key(*a)));
    let mut choices = Vec::new();
    for frac in [0.02, 0.05, 0.1, 0.2, 0.3, 0.5] {
        let k = ((m as f64 * frac).round() as usize).max(1).min(m / 2);
        choices.push((k, 0));
        choices.push((k, k));
    }
    choices.sort();
    choices.dedup();
    let level = beta / choices.len().max(1) as f64;
    let mut best = OneRunAudit {
        canaries: m as u64,
        guesses: 0,
        correct: 0,
        k_plus: 0,
        k_minus: 0,
        right_in: 0,
        lower_bound: 0.0,
        confidence: 1.0 - beta,
    };
    for (kp, km) in choices {
        if kp + km > m {
            continue;
        }
        let right_in = order[..kp].iter().filter(|i| included[**i]).count();
        let right_out = order[m - km..].iter().filter(|i| !included[**i]).count();
        let (r, v) = ((kp + km) as u64, (right_in + right_out) as u64);
        let eps = one_run_epsilon(m as u64, r, v, delta, level);
        // Ties (at 0, typically) report the widest guess, where the accuracy means most.
        if eps > best.lower_bound || (eps == best.lower_bound && r > best.guesses) {
            best = OneRunAudit {
                guesses: r,
                correct: v,
                k_plus: kp as u64,
                k_minus: km as u64,
                right_in: right_in as u64,
                lower_bound: eps,
                ..best
            };
        }
    }
    best
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The binomial tail against a direct sum of probabilities (slow, obviously right).
    #[test]
    fn binomial_tail_matches_the_direct_sum() {
        for (n, p) in [(10u64, 0.3), (200, 0.05), (1000, 0.73), (57, 0.999)] {
            for k in [0u64, 1, 3, n / 4, n / 2, n - 1, n] {
                let direct: f64 = (k..=n).map(|j| binom_pmf(j, n, p)).sum();
                let fast = binom_sf(k, n, p);
                assert!(
                    (direct - fast).abs() < 1e-9 * direct.max(1e-12) + 1e-13,
                    "n {n} p {p} k {k}: {direct} vs {fast}"
                );
            }
        }
    }

    /// Clopper–Pearson bounds reproduce known values (R's binom.test, one-sided 95 %).
    #[test]
    fn clopper_pearson_matches_known_intervals() {
        // 0 of 100: upper = 1 − 0.05^(1/100).
        let u = cp_upper(0, 100, 0.05);
        assert!((u - (1.0 - 0.05f64.powf(0.01))).abs() < 1e-9, "{u}");
        // 100 of 100: lower = 0.05^(1/100).
        let l = cp_lower(100, 100, 0.05);
        assert!((l - 0.05f64.powf(0.01)).abs() < 1e-9, "{l}");
        // 10 of 50: P[X ≤ 10 | upper] = 0.05 and P[X ≥ 10 | lower] = 0.05.
        let (lo, hi) = (cp_lower(10, 50, 0.05), cp_upper(10, 50, 0.05));
        assert!((1.0 - binom_sf(11, 50, hi) - 0.05).abs() < 1e-9);
        assert!((binom_sf(10, 50, lo) - 0.05).abs() < 1e-9);
        assert!(lo < 0.2 && 0.2 < hi);
    }

    /// Rates from a perfectly separating region prove a large ε; rates of a coin prove 0.
    #[test]
    fn the_bound_follows_the_rates() {
        let sep = Rates {
            false_positives: 0,
            negatives: 100_000,
            false_negatives: 0,
            positives: 100_000,
        };
        assert!(epsilon_lower_bound(sep, 1e-5, 0.05) > 9.0);
        let coin = Rates {
            false_positives: 50_000,
            negatives: 100_000,
            false_negatives: 50_000,
            positives: 100_000,
        };
        assert_eq!(epsilon_lower_bound(coin, 1e-5, 0.05), 0.0);
    }

    /// The one-run bound: all of 100 guesses right proves more than 60 of 100; ε = 0 is a
    /// fair coin; more δ means less proved.
    #[test]
    fn one_run_bounds_order_as_they_should() {
        let all = one_run_epsilon(1000, 100, 100, 0.0, 0.05);
        let most = one_run_epsilon(1000, 100, 80, 0.0, 0.05);
        let half = one_run_epsilon(1000, 100, 55, 0.0, 0.05);
        assert!(all > most && most > half, "{all} {most} {half}");
        assert_eq!(half, 0.0);
        // All right at β = 0.05: q^100 = 0.05 ⇒ ε = ln(q/(1 − q)).
        let q = 0.05f64.powf(0.01);
        assert!((all - (q / (1.0 - q)).ln()).abs() < 1e-6, "{all}");
        assert!(one_run_epsilon(1000, 100, 100, 1e-4, 0.05) < all);
        // The p-value at the bound is the level.
        let p = one_run_p_value(1000, 100, 80, most, 0.0);
        assert!((p - 0.05).abs() < 1e-6, "{p}");
    }

    /// Scores that separate included canaries prove a positive ε; random scores do not.
    #[test]
    fn one_run_audit_finds_separation_and_nothing_in_noise() {
        use rand::{Rng, SeedableRng};
        let mut rng = rand::rngs::StdRng::seed_from_u64(3);
        let m = 1000;
        let included: Vec<bool> = (0..m).map(|_| rng.random::<bool>()).collect();
        let noise: Vec<f64> = (0..m).map(|_| rng.random::<f64>()).collect();
        let a = one_run_audit(&noise, &included, 1e-5, 0.05);
        assert!(a.lower_bound < 0.3, "{a:?}");
        let signal: Vec<f64> = included
            .iter()
            .zip(&noise)
            .map(|(i, n)| n + if *i { 1.0 } else { 0.0 })
            .collect();
        let b = one_run_audit(&signal, &included, 1e-5, 0.05);
        assert!(b.lower_bound > 2.0, "{b:?}");
    }
}
