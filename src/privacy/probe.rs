//! The neighbour harness's probe: every noise call can report the exact query it is about
//! to noise, with the sensitivity it declares, and can be made to return another run's
//! output in place of its own.
//!
//! Why replay: to check a mechanism on neighbouring tables D and D′ the harness runs D
//! (recording each call's query and output), then D′ with the same seed, where each call
//! still draws its noise (so the randomness stays aligned) but returns D's output. Under
//! that coupling everything after a noise call — the model the next step sees, the next
//! round's candidates, the loop counts — is the same in both runs unless something reads
//! the rows without noise. The harness then asserts, call by call, that the two queries
//! differ by at most the declared sensitivity, and that the two released models are
//! identical (`tests/neighbours/`).
//!
//! Each call also states the mechanism its noise implements for its declared sensitivity
//! (the σ the sampler really draws, the ε an exponential draw runs at), so the harness
//! can compose the calls and check them against the charge the ledger booked
//! (calibration, not only movement), and the part of a run that made it (a linked pair's
//! parent model, child model or record counts), since only the child model's calls may
//! move by K times their row-level sensitivity.
//!
//! A probe can also be installed with a [`Fault`]: a deliberately broken mechanism, for
//! the harness's own test that it catches what it claims to catch.
//!
//! Without a probe installed a call costs one relaxed atomic load.

use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};

use super::mechanism::Mechanism;

/// How the distance between two queries is measured.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Norm {
    /// Euclidean (Gaussian mechanisms).
    L2,
    /// The largest coordinate (the exponential mechanism's utilities).
    LInf,
}

/// A query's value: a vector by position, or counts by key (a histogram whose keys are
/// values read from the rows: a neighbour may add or drop a key, which counts as 0).
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    Dense(Vec<f64>),
    Keyed(Vec<(String, f64)>),
}

impl Value {
    /// The distance between two values under `norm` (a key missing on one side is 0).
    pub fn distance(&self, other: &Value, norm: Norm) -> Option<f64> {
        let gaps: Vec<f64> = match (self, other) {
            // Equal entries (excluded candidates' −∞ included) are no gap.
            (Value::Dense(a), Value::Dense(b)) if a.len() == b.len() => a
                .iter()
                .zip(b)
                .map(|(x, y)| if x == y { 0.0 } else { x - y })
                .collect(),
            (Value::Keyed(a), Value::Keyed(b)) => {
                let mut all: std::collections::BTreeMap<&str, (f64, f64)> = Default::default();
                for (k, v) in a {
                    all.entry(k).or_default().0 += v;
                }
                for (k, v) in b {
                    all.entry(k).or_default().1 += v;
                }
                all.values()
                    .map(|(x, y)| if x == y { 0.0 } else { x - y })
                    .collect()
            }
            _ => return None,
        };
        Some(match norm {
            Norm::L2 => gaps.iter().map(|g| g * g).sum::<f64>().sqrt(),
            Norm::LInf => gaps.iter().fold(0.0, |m, g| m.max(g.abs())),
        })
    }
}

/// One noise call as the probe saw it.
#[derive(Debug, Clone)]
pub struct Call {
    /// Where it was made (a stable name: `marginal`, `dpsgd-step`, …).
    pub site: &'static str,
    pub norm: Norm,
    pub sensitivity: f64,
    /// The mechanism the call's noise implements at `sensitivity`, from the scale the
    /// sampler really draws with.
    pub mechanism: Mechanism,
    /// The part of the run that made it ([`enter_part`]; `run` for a single table).
    pub part: &'static str,
    /// The exact query, before noise.
    pub query: Value,
    /// What the call released.
    pub output: Value,
}

/// A noise call's output, as the probe keeps and replays it.
pub trait Replayable: Sized {
    fn to_value(&self) -> Value;
    fn from_value(v: &Value) -> Option<Self>;
}

impl Replayable for Vec<f64> {
    fn to_value(&self) -> Value {
        Value::Dense(self.clone())
    }
    fn from_value(v: &Value) -> Option<Self> {
        match v {
            Value::Dense(d) => Some(d.clone()),
            Value::Keyed(_) => None,
        }
    }
}

impl Replayable for usize {
    fn to_value(&self) -> Value {
        Value::Dense(vec![*self as f64])
    }
    fn from_value(v: &Value) -> Option<Self> {
        match v {
            Value::Dense(d) if d.len() == 1 => Some(d[0] as usize),
            _ => None,
        }
    }
}

impl Replayable for Vec<(String, f64)> {
    fn to_value(&self) -> Value {
        Value::Keyed(self.clone())
    }
    fn from_value(v: &Value) -> Option<Self> {
        match v {
            Value::Keyed(k) => Some(k.clone()),
            Value::Dense(_) => None,
        }
    }
}

/// What an installed probe does.
#[derive(Debug, Clone)]
pub enum Mode {
    /// Keep every call.
    Record,
    /// Keep every call and return the given run's outputs, call by call.
    Replay(Vec<Call>),
}

/// A deliberately broken mechanism, simulated by the probe, that the harness must catch.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Fault {
    #[default]
    None,
    /// Every call declares half its true sensitivity (and its noise is calibrated to it).
    HalfSensitivity,
    /// A linked pair's child-model calls are reported as parent-model calls: a parent
    /// statistic computed once per child, allowed only the parent's sensitivity.
    ChildAsParent,
}

struct Probe {
    mode: Mode,
    fault: Fault,
    part: &'static str,
    /// For each row of the run's table, the index of the same record in the table it is
    /// compared with (`None`: the record the neighbour adds); see [`set_rows`].
    rows: Option<std::sync::Arc<Vec<Option<usize>>>>,
    calls: Vec<Call>,
    /// Why a replay could not follow the recorded run (a different call at some index).
    broken: Option<String>,
}

static ACTIVE: AtomicBool = AtomicBool::new(false);
static PROBE: Mutex<Option<Probe>> = Mutex::new(None);

thread_local! {
    /// Inside [`local`]: noise drawn for the data owner's eyes only, not a release.
    static LOCAL: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Runs `f`, whose noise calls are trials for a diagnostic the data's owner alone sees
/// (what an estimate would make of the rows, before anything is spent), never releases:
/// the probe does not count them. Anything they changed in a release would still show as
/// a difference between a table's run and its neighbour's.
pub fn local<T>(f: impl FnOnce() -> T) -> T {
    let before = LOCAL.with(|l| l.replace(true));
    let out = f();
    LOCAL.with(|l| l.set(before));
    out
}

/// Installs a probe for the whole process (one harness at a time: the harness's test
/// binary runs it alone).
pub fn install(mode: Mode) {
    install_faulty(mode, Fault::None);
}

/// [`install`] with a simulated broken mechanism (the harness's test of itself).
pub fn install_faulty(mode: Mode, fault: Fault) {
    if let Ok(mut p) = PROBE.lock() {
        *p = Some(Probe {
            mode,
            fault,
            part: "run",
            rows: None,
            calls: Vec::new(),
            broken: None,
        });
        ACTIVE.store(true, Ordering::SeqCst);
    }
}

/// Whether a probe is installed (for callers that would otherwise skip building a
/// query, such as a tensor's values).
pub fn active() -> bool {
    ACTIVE.load(Ordering::Relaxed)
}

/// Names the part of the run whose calls follow (a linked pair: `counts`, `parent`,
/// `child`); a no-op without a probe.
pub fn enter_part(part: &'static str) {
    if !ACTIVE.load(Ordering::Relaxed) {
        return;
    }
    if let Ok(mut g) = PROBE.lock()
        && let Some(p) = g.as_mut()
    {
        p.part = part;
    }
}

/// Tells the probe which record each row of the run's table is: `map[j]` is the index of
/// row j's record in the table the run is compared with (the identity for that table
/// itself), `None` for a record the neighbour adds. Randomness a mechanism ties to rows
/// (Poisson batch membership, PATE's teacher partition) then follows the record, not its
/// position, so a record added at the front is a coupling the harness can check: the
/// same distribution, drawn coin by coin ([`rows`]).
pub fn set_rows(map: Vec<Option<usize>>) {
    if let Ok(mut g) = PROBE.lock()
        && let Some(p) = g.as_mut()
    {
        p.rows = Some(std::sync::Arc::new(map));
    }
}

/// The row map set by [`set_rows`], while a probe is installed and the map has `n` rows.
pub fn rows(n: usize) -> Option<std::sync::Arc<Vec<Option<usize>>>> {
    if !ACTIVE.load(Ordering::Relaxed) {
        return None;
    }
    let g = PROBE.lock().ok()?;
    let map = g.as_ref()?.rows.clone()?;
    (map.len() == n).then_some(map)
}

/// Draws one value per row of `map` from `draw`, keyed by record: the k-th value of `rng`
/// for the table's record k, values of a stream of their own for added records. Each row
/// still gets an independent draw: the same distribution as drawing in row order.
pub fn draws_by_record<T>(
    map: &[Option<usize>],
    rng: &mut rand::rngs::StdRng,
    mut draw: impl FnMut(&mut rand::rngs::StdRng) -> T,
) -> Vec<T> {
    use rand::SeedableRng as _;
    let mut fresh = rand::rngs::StdRng::from_rng(&mut *rng);
    let need = map.iter().flatten().max().map_or(0, |m| m + 1);
    let mut old: Vec<Option<T>> = (0..need).map(|_| Some(draw(rng))).collect();
    map.iter()
        .map(|m| match m {
            Some(k) => old[*k].take().unwrap_or_else(|| draw(&mut fresh)),
            None => draw(&mut fresh),
        })
        .collect()
}

/// Removes the probe and returns the calls it saw, or why a replay broke.
pub fn take() -> Result<Vec<Call>, String> {
    ACTIVE.store(false, Ordering::SeqCst);
    let p = PROBE.lock().map_err(|e| e.to_string())?.take();
    match p {
        Some(Probe {
            broken: Some(why), ..
        }) => Err(why),
        Some(p) => Ok(p.calls),
        None => Err("no probe was installed".into()),
    }
}

/// One noise call: `noisy` draws and adds the noise; `query` gives the exact value it
/// noises (asked only while a probe is installed); `mechanism` is what the noise
/// implements at the declared sensitivity (built only while a probe is installed).
/// Returns `noisy`'s output, or under a replaying probe the recorded run's output for
/// this call (after drawing anyway).
pub fn noise_call<T: Replayable>(
    site: &'static str,
    (norm, sensitivity): (Norm, f64),
    mechanism: impl FnOnce() -> Mechanism,
    query: impl FnOnce() -> Value,
    noisy: impl FnOnce() -> T,
) -> T {
    if !ACTIVE.load(Ordering::Relaxed) || LOCAL.with(|l| l.get()) {
        return noisy();
    }
    let query = query();
    let mechanism = mechanism();
    let out = noisy();
    let Ok(mut guard) = PROBE.lock() else {
        return out;
    };
    let Some(p) = guard.as_mut() else {
        return out;
    };
    let index = p.calls.len();
    let replayed = match &p.mode {
        Mode::Record => None,
        Mode::Replay(recorded) => match recorded.get(index) {
            Some(r) if r.site == site => match T::from_value(&r.output) {
                Some(v) => Some(v),
                None => {
                    p.broken
                        .get_or_insert(format!("call {index} ({site}): output of another shape"));
                    None
                }
            },
            Some(r) => {
                p.broken.get_or_insert(format!(
                    "call {index}: the neighbour made {site} where the table made {}",
                    r.site
                ));
                None
            }
            None => {
                p.broken.get_or_insert(format!(
                    "call {index} ({site}): the table made no such call"
                ));
                None
            }
        },
    };
    let out = replayed.unwrap_or(out);
    let (sensitivity, part) = match p.fault {
        Fault::HalfSensitivity => (sensitivity / 2.0, p.part),
        Fault::ChildAsParent if p.part == "child" => (sensitivity, "parent"),
        _ => (sensitivity, p.part),
    };
    p.calls.push(Call {
        site,
        norm,
        sensitivity,
        mechanism,
        part,
        query,
        output: out.to_value(),
    });
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn distances_count_a_missing_key_as_zero() {
        let a = Value::Keyed(vec![("x".into(), 3.0), ("y".into(), 1.0)]);
        let b = Value::Keyed(vec![("x".into(), 3.0)]);
        assert_eq!(a.distance(&b, Norm::L2), Some(1.0));
        let d = Value::Dense(vec![1.0, 2.0]);
        let e = Value::Dense(vec![1.5, 4.0]);
        assert_eq!(d.distance(&e, Norm::LInf), Some(2.0));
        assert_eq!(d.distance(&e, Norm::L2), Some((0.25f64 + 4.0).sqrt()));
        assert_eq!(d.distance(&a, Norm::L2), None);
    }
}
