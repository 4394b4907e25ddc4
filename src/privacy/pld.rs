//! A privacy-loss-distribution (PLD) accountant for the Poisson-subsampled Gaussian
//! mechanism (and the plain Gaussian, q = 1), under add/remove-one neighbouring.
//!
//! It follows the construction dp-accounting uses, so figures agree with it:
//! - the mechanism's privacy loss is monotone in the output, so its hockey-stick curve
//!   δ(ε) is computed exactly at every ε on a grid of step `h` (1e-4 by default) spanning
//!   the losses of all but e^-50 of the noise mass;
//! - the pessimistic **connect-the-dots** discretisation (Doroshenko, Ghazi, Kamath, Kumar
//!   & Manurangsi 2022, Algorithm 1) turns those dots into a distribution on the grid
//!   whose δ(ε) is never below the true curve, with the curve's tail mass on +∞;
//! - T-fold composition is one FFT raised to the T-th power, truncated to a window that
//!   a Chernoff bound says holds all but 1e-15 of the mass (which is counted as +∞);
//! - ε(δ) is read off the composed distribution; removal and addition are tracked
//!   separately and the larger ε is reported.
//!
//! Every rounding is towards more privacy loss, so the figure is an upper bound up to
//! floating-point error; tests check it against dp-accounting and below the RDP figure.

use rustfft::FftPlanner;
use rustfft::num_complex::Complex;

use super::rdp::log_erfc;

/// Grid step of the loss values (dp-accounting's default).
pub const DEFAULT_INTERVAL: f64 = 1e-4;
/// ln of the noise mass that may be cut from each tail before discretising.
const LOG_MASS_TRUNCATION: f64 = -50.0;
/// Mass that composition may cut from the tails (counted as infinite loss).
const TAIL_MASS_TRUNCATION: f64 = 1e-15;

/// Which neighbouring direction a distribution describes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Adjacency {
    /// Upper = mechanism on D, lower = on D minus one record.
    Remove,
    /// Upper = mechanism on D, lower = on D plus one record.
    Add,
}

/// A privacy loss distribution on the grid `(lower + i)·h`, plus mass at +∞.
#[derive(Debug, Clone)]
pub struct Pmf {
    h: f64,
    lower: i64,
    probs: Vec<f64>,
    infinity: f64,
}

/// log Φ(z) for the standard normal, accurate in both tails.
fn log_ndtr(z: f64) -> f64 {
    if z < 0.0 {
        0.5f64.ln() + log_erfc(-z / std::f64::consts::SQRT_2)
    } else {
        (-0.5 * libm::erfc(z / std::f64::consts::SQRT_2)).ln_1p()
    }
}

/// Φ(z).
fn ndtr(z: f64) -> f64 {
    0.5 * libm::erfc(-z / std::f64::consts::SQRT_2)
}

/// The standard normal quantile for a small probability `p` (Newton on log Φ).
fn ndtri_small(p: f64) -> f64 {
    let lp = p.ln();
    let mut z = -(-2.0 * lp).sqrt();
    for _ in 0..100 {
        let f = log_ndtr(z) - lp;
        let log_pdf = -0.5 * z * z - 0.5 * (2.0 * std::f64::consts::PI).ln();
        let d = (log_pdf - log_ndtr(z)).exp();
        let step = f / d;
        z -= step;
        if step.abs() < 1e-14 * z.abs().max(1.0) {
            break;
        }
    }
    z
}

fn log_add(a: f64, b: f64) -> f64 {
    super::rdp::log_add(a, b)
}

/// ln(a·e^b + c), with the sign cases dp-accounting's helper handles.
fn log_a_exp_b_plus_c(a: f64, b: f64, c: f64) -> f64 {
    if a == 0.0 {
        return c.ln();
    }
    let log_sub = |x: f64, y: f64| x + (-(y - x).exp()).ln_1p();
    if a < 0.0 {
        return log_sub(c.ln(), (-a).ln() + b);
    }
    if b == 0.0 {
        return (a + c).ln();
    }
    let d = b + a.ln();
    if c == 0.0 {
        d
    } else if c < 0.0 {
        log_sub(d, (-c).ln())
    } else {
        log_add(d, c.ln())
    }
}

/// The sampled Gaussian's privacy loss as a function of the output, for one direction.
struct SampledGaussian {
    sigma: f64,
    q: f64,
    adj: Adjacency,
}

impl SampledGaussian {
    fn loss_without_sampling(&self, x: f64) -> f64 {
        let s2 = self.sigma * self.sigma;
        match self.adj {
            Adjacency::Add => (0.5 - x) / s2,
            Adjacency::Remove => (-0.5 - x) / s2,
        }
    }

    fn loss(&self, x: f64) -> f64 {
        let l = self.loss_without_sampling(x);
        if self.q == 1.0 {
            return l;
        }
        match self.adj {
            Adjacency::Add => -log_a_exp_b_plus_c(self.q, -l, 1.0 - self.q),
            Adjacency::Remove => log_a_exp_b_plus_c(self.q, l, 1.0 - self.q),
        }
    }

    /// The largest x whose loss is at least `eps`.
    fn inverse_loss(&self, eps: f64) -> f64 {
        let s2 = self.sigma * self.sigma;
        let inv = |l: f64| match self.adj {
            Adjacency::Add => 0.5 - l * s2,
            Adjacency::Remove => -0.5 - l * s2,
        };
        if self.q == 1.0 {
            return inv(eps);
        }
        let l = match self.adj {
            Adjacency::Add => -log_a_exp_b_plus_c(1.0 / self.q, -eps, 1.0 - 1.0 / self.q),
            Adjacency::Remove => log_a_exp_b_plus_c(1.0 / self.q, eps, 1.0 - 1.0 / self.q),
        };
        inv(l)
    }

    fn upper_cdf(&self, x: f64) -> f64 {
        let s = self.sigma;
        match self.adj {
            Adjacency::Add => ndtr(x / s),
            Adjacency::Remove => {
                if self.q == 1.0 {
                    ndtr((x + 1.0) / s)
                } else {
                    (1.0 - self.q) * ndtr(x / s) + self.q * ndtr((x + 1.0) / s)
                }
            }
        }
    }

    fn lower_log_cdf(&self, x: f64) -> f64 {
        let s = self.sigma;
        match self.adj {
            Adjacency::Add => {
                if self.q == 1.0 {
                    log_ndtr((x - 1.0) / s)
                } else {
                    log_add(
                        (-self.q).ln_1p() + log_ndtr(x / s),
                        self.q.ln() + log_ndtr((x - 1.0) / s),
                    )
                }
            }
            Adjacency::Remove => log_ndtr(x / s),
        }
    }

    /// The hockey-stick divergence δ(ε) of this direction, exactly.
    fn delta(&self, eps: f64) -> f64 {
        let q = self.q;
        let use_inverse = if q == 1.0 {
            true
        } else {
            match self.adj {
                Adjacency::Add => eps < -(-q).ln_1p(),
                Adjacency::Remove => eps > (-q).ln_1p(),
            }
        };
        let d = if use_inverse {
            let x = self.inverse_loss(eps);
            self.upper_cdf(x) - (eps + self.lower_log_cdf(x)).exp()
        } else if self.adj == Adjacency::Remove {
            -eps.exp_m1()
        } else {
            0.0
        };
        d.clamp(0.0, 1.0)
    }

    /// The loss range that covers all but e^-50 of the noise, as (lowest, highest).
    fn loss_bounds(&self) -> (f64, f64) {
        let z = self.sigma * ndtri_small(0.5 * LOG_MASS_TRUNCATION.exp());
        let (mut lo_x, mut hi_x) = (z, -z);
        match self.adj {
            Adjacency::Add => hi_x += 1.0,
            Adjacency::Remove => lo_x -= 1.0,
        }
        (self.loss(hi_x), self.loss(lo_x))
    }

    /// Connect-the-dots pessimistic distribution on the grid of step `h`.
    fn pmf(&self, h: f64) -> Pmf {
        let (eps_lo, eps_hi) = self.loss_bounds();
        let k_lo = (eps_lo / h).floor() as i64;
        let k_hi = (eps_hi / h).ceil() as i64;
        let n = (k_hi - k_lo + 1) as usize;
        let mut deltas: Vec<f64> = (0..n)
            .map(|i| self.delta((k_lo + i as i64) as f64 * h))
            .collect();
        // δ is non-increasing in ε; remove floating-point wiggles.
        for i in 1..n {
            deltas[i] = deltas[i].min(deltas[i - 1]);
        }
        if n == 1 {
            return Pmf {
                h,
                lower: k_lo,
                probs: vec![1.0 - deltas[0]],
                infinity: deltas[0],
            };
        }
        let em1 = h.exp_m1();
        let eh = h.exp();
        let mut probs = vec![0.0; n];
        probs[0] = 1.0 - deltas[0] + (deltas[1] - deltas[0]) / em1;
        for i in 1..n - 1 {
            let d_next = deltas[i + 1] - deltas[i];
            let d_prev = deltas[i] - deltas[i - 1];
            probs[i] = (d_next - d_prev * eh) / em1;
        }
        probs[n - 1] = (deltas[n - 1] - deltas[n - 2]) / (-h).exp_m1();
        for p in probs.iter_mut() {
            *p = p.max(0.0);
        }
        Pmf {
            h,
            lower: k_lo,
            probs,
            infinity: deltas[n - 1],
        }
    }
}

fn fast_len(n: usize) -> usize {
    let mut m = n.max(1);
    loop {
        let mut r = m;
        for p in [2, 3, 5] {
            while r % p == 0 {
                r /= p;
            }
        }
        if r == 1 {
            return m;
        }
        m += 1;
    }
}

impl Pmf {
    /// The T-fold composition with itself.
    pub fn self_compose(&self, t: u64) -> Pmf {
        if t <= 1 {
            return self.clone();
        }
        let m = self.probs.len();
        let tf = t as f64;
        // Chernoff bounds on the window holding all but TAIL_MASS_TRUNCATION of the mass.
        let mut upper = ((m - 1) as f64 * tf).min(i64::MAX as f64) as i64;
        let mut lower = 0i64;
        let orders: Vec<f64> = (-20..0)
            .chain(1..=20)
            .map(|o| f64::from(o) / m as f64)
            .collect();
        for &o in &orders {
            let mut mx = f64::NEG_INFINITY;
            for (i, p) in self.probs.iter().enumerate() {
                if *p > 0.0 {
                    mx = mx.max(i as f64 * o);
                }
            }
            let s: f64 = self
                .probs
                .iter()
                .enumerate()
                .filter(|(_, p)| **p > 0.0)
                .map(|(i, p)| p * (i as f64 * o - mx).exp())
                .sum();
            let log_mgf = mx + s.ln();
            let bound = (tf * log_mgf + (2.0 / TAIL_MASS_TRUNCATION).ln()) / o;
            if !bound.is_finite() {
                continue;
            }
            if o > 0.0 {
                upper = upper.min(bound.ceil() as i64);
            } else {
                lower = lower.max(bound.floor() as i64);
            }
        }
        let out_len = (upper - lower + 1).max(1) as usize;
        let n = fast_len(out_len.max(m));
        let mut buf: Vec<Complex<f64>> = (0..n)
            .map(|i| Complex::new(self.probs.get(i).copied().unwrap_or(0.0), 0.0))
            .collect();
        let mut planner = FftPlanner::<f64>::new();
        planner.plan_fft_forward(n).process(&mut buf);
        for z in buf.iter_mut() {
            *z = z.powf(tf);
        }
        planner.plan_fft_inverse(n).process(&mut buf);
        let scale = 1.0 / n as f64;
        let lo = lower.rem_euclid(n as i64) as usize;
        let probs: Vec<f64> = (0..out_len).map(|i| buf[(lo + i) % n].re * scale).collect();
        let infinity = TAIL_MASS_TRUNCATION - (tf * (-self.infinity).ln_1p()).exp_m1();
        Pmf {
            h: self.h,
            lower: self.lower * t as i64 + lower,
            probs,
            infinity,
        }
    }

    /// Composition with another distribution on the same grid (direct FFT convolution).
    pub fn compose(&self, other: &Pmf) -> Pmf {
        let len = self.probs.len() + other.probs.len() - 1;
        let n = fast_len(len);
        let mut a: Vec<Complex<f64>> = (0..n)
            .map(|i| Complex::new(self.probs.get(i).copied().unwrap_or(0.0), 0.0))
            .collect();
        let mut b: Vec<Complex<f64>> = (0..n)
            .map(|i| Complex::new(other.probs.get(i).copied().unwrap_or(0.0), 0.0))
            .collect();
        let mut planner = FftPlanner::<f64>::new();
        let f = planner.plan_fft_forward(n);
        f.process(&mut a);
        f.process(&mut b);
        for (x, y) in a.iter_mut().zip(&b) {
            *x *= y;
        }
        planner.plan_fft_inverse(n).process(&mut a);
        let scale = 1.0 / n as f64;
        Pmf {
            h: self.h,
            lower: self.lower + other.lower,
            probs: a[..len].iter().map(|z| (z.re * scale).max(0.0)).collect(),
            infinity: self.infinity + other.infinity - self.infinity * other.infinity,
        }
    }

    /// The same distribution with a further `p` of its mass moved to +∞.
    pub fn with_infinity(&self, p: f64) -> Pmf {
        Pmf {
            h: self.h,
            lower: self.lower,
            probs: self.probs.iter().map(|x| x * (1.0 - p)).collect(),
            infinity: self.infinity + p - self.infinity * p,
        }
    }

    /// The smallest ε ≥ 0 with δ(ε) ≤ `delta`; +∞ when the infinite mass exceeds δ.
    pub fn epsilon(&self, delta: f64) -> f64 {
        if self.infinity > delta {
            return f64::INFINITY;
        }
        let (mut up, mut low) = (self.infinity, 0.0f64);
        for (i, p) in self.probs.iter().enumerate().rev() {
            let loss = (self.lower + i as i64) as f64 * self.h;
            if up > delta && low > 0.0 && ((up - delta) / low).ln() >= loss {
                break;
            }
            up += p;
            low += (-loss).exp() * p;
            if up >= delta && low == 0.0 {
                return loss.max(0.0);
            }
        }
        if up <= low + delta {
            return 0.0;
        }
        ((up - delta) / low).ln()
    }

    /// δ(ε) of the distribution.
    pub fn delta(&self, eps: f64) -> f64 {
        let mut d = self.infinity;
        for (i, p) in self.probs.iter().enumerate() {
            let loss = (self.lower + i as i64) as f64 * self.h;
            if loss > eps {
                d += -(eps - loss).exp_m1() * p;
            }
        }
        d
    }
}

/// A two-sided PLD (removal and addition) for add/remove-one neighbouring.
#[derive(Debug, Clone)]
pub struct Pld {
    remove: Pmf,
    add: Option<Pmf>,
}

impl Pld {
    /// One step of the Poisson-subsampled Gaussian with noise multiplier `sigma` and
    /// sampling rate `q` (q = 1: the Gaussian mechanism with sensitivity 1).
    pub fn subsampled_gaussian(q: f64, sigma: f64, h: f64) -> Pld {
        let remove = SampledGaussian {
            sigma,
            q,
            adj: Adjacency::Remove,
        }
        .pmf(h);
        let add = (q < 1.0).then(|| {
            SampledGaussian {
                sigma,
                q,
                adj: Adjacency::Add,
            }
            .pmf(h)
        });
        Pld { remove, add }
    }

    /// One release of integer counts plus exact discrete Gaussian noise at `std` (as
    /// [`super::discrete::DiscreteGaussian`] rounds it), where one record moves one count
    /// by one. The privacy loss of an output z (relative to the count) is (2z + 1)/(2σ²)
    /// with z ~ N_ℤ(0, σ²) — a discrete distribution known exactly — and by the pmf's
    /// symmetry the same in both directions. Each loss is rounded up to the grid (a
    /// pessimistic distribution); `None` for an invalid σ.
    pub fn discrete_gaussian(std: f64, h: f64) -> Option<Pld> {
        let g = super::discrete::DiscreteGaussian::new(std)?;
        let v = g.variance();
        let (xs, ps) = g.pmf();
        let index = |x: i64| ((2.0 * x as f64 + 1.0) / (2.0 * v) / h).ceil() as i64;
        let lo = xs.iter().map(|x| index(*x)).min()?;
        let hi = xs.iter().map(|x| index(*x)).max()?;
        let mut probs = vec![0.0; (hi - lo + 1) as usize];
        for (x, p) in xs.iter().zip(&ps) {
            probs[(index(*x) - lo) as usize] += p;
        }
        Some(Pld {
            remove: Pmf {
                h,
                lower: lo,
                probs,
                infinity: 0.0,
            },
            add: None,
        })
    }

    pub fn self_compose(&self, t: u64) -> Pld {
        Pld {
            remove: self.remove.self_compose(t),
            add: self.add.as_ref().map(|a| a.self_compose(t)),
        }
    }

    pub fn compose(&self, other: &Pld) -> Pld {
        let add = match (&self.add, &other.add) {
            (None, None) => None,
            (a, b) => Some(
                a.as_ref()
                    .unwrap_or(&self.remove)
                    .compose(b.as_ref().unwrap_or(&other.remove)),
            ),
        };
        Pld {
            remove: self.remove.compose(&other.remove),
            add,
        }
    }

    /// Both directions with a further `p` of their mass at +∞ (an event of probability
    /// at most `p` that reveals everything).
    pub fn with_infinity(&self, p: f64) -> Pld {
        Pld {
            remove: self.remove.with_infinity(p),
            add: self.add.as_ref().map(|a| a.with_infinity(p)),
        }
    }

    /// ε at δ: the larger of the two directions.
    pub fn epsilon(&self, delta: f64) -> f64 {
        let r = self.remove.epsilon(delta);
        match &self.add {
            Some(a) => r.max(a.epsilon(delta)),
            None => r,
        }
    }

    pub fn delta(&self, eps: f64) -> f64 {
        let r = self.remove.delta(eps);
        match &self.add {
            Some(a) => r.max(a.delta(eps)),
            None => r,
        }
    }
}

/// ε of `steps` Poisson-subsampled Gaussian steps at δ, by PLD.
pub fn epsilon_subsampled_gaussian(q: f64, sigma: f64, steps: u64, delta: f64) -> f64 {
    if q <= 0.0 || steps == 0 {
        return 0.0;
    }
    Pld::subsampled_gaussian(q.min(1.0), sigma, DEFAULT_INTERVAL)
        .self_compose(steps)
        .epsilon(delta)
}

#[cfg(test)]
mod tests {
    /// The discrete Gaussian's PLD: at a σ where the lattice is fine its ε is close to the
    /// continuous Gaussian's, never above its RDP bound, and it composes.
    #[test]
    fn the_discrete_gaussian_pld_is_close_to_the_continuous_and_below_rdp() {
        for std in [0.8, 3.0, 20.0] {
            let d = Pld::discrete_gaussian(std, DEFAULT_INTERVAL).unwrap();
            let c = Pld::subsampled_gaussian(1.0, std, DEFAULT_INTERVAL);
            let (ed, ec) = (d.epsilon(1e-5), c.epsilon(1e-5));
            let orders = crate::privacy::rdp::product_orders();
            let rdp = crate::privacy::convert::to_epsilon(
                &orders,
                &crate::privacy::rdp::zcdp(1.0 / (2.0 * std * std), &orders),
                1e-5,
            )
            .epsilon;
            assert!(ed <= rdp + 1e-9, "σ = {std}: PLD {ed} above RDP {rdp}");
            if std >= 3.0 {
                assert!(
                    (ed - ec).abs() < 0.02 * ec + 2e-3,
                    "σ = {std}: {ed} vs {ec}"
                );
            }
            let ten = d.self_compose(10).epsilon(1e-5);
            assert!(ten > ed && ten < 10.0 * ed, "{ten} vs {ed}");
        }
        assert!(Pld::discrete_gaussian(0.0, DEFAULT_INTERVAL).is_none());
    }

    use super::*;

    #[test]
    fn quantile_inverts_the_cdf() {
        let p = 0.5 * (-50f64).exp();
        let z = ndtri_small(p);
        assert!(((log_ndtr(z) - p.ln()) / p.ln()).abs() < 1e-12, "{z}");
    }

    #[test]
    fn infinite_mass_adds_to_delta_as_a_mixture() {
        let g = Pld::subsampled_gaussian(1.0, 2.0, 1e-4);
        let t = g.with_infinity(1e-6);
        for eps in [0.0, 0.3, 1.0] {
            let want = 1e-6 + (1.0 - 1e-6) * g.delta(eps);
            assert!((t.delta(eps) - want).abs() < 1e-12 * want.max(1e-9) + 1e-15);
        }
        assert_eq!(t.epsilon(5e-7), f64::INFINITY, "δ below the infinite mass");
    }

    #[test]
    fn one_gaussian_matches_the_analytic_curve() {
        // q = 1, σ = 1: δ(ε) = Φ(1/2 − ε) − e^ε Φ(−1/2 − ε).
        let pld = Pld::subsampled_gaussian(1.0, 1.0, 1e-4);
        for eps in [0.0, 0.5, 1.0, 2.0] {
            let exact = ndtr(0.5 - eps) - eps.exp() * ndtr(-0.5 - eps);
            let d = pld.delta(eps);
            assert!(d >= exact * (1.0 - 1e-9), "pessimistic: {d} < {exact}");
            assert!(d <= exact * 1.01 + 1e-12, "{d} vs {exact}");
        }
    }
}
