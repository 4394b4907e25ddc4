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
//! identical (`tests/engine/neighbours.rs`).
//!
//! Without a probe installed a call costs one relaxed atomic load.

use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};

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

struct Probe {
    mode: Mode,
    calls: Vec<Call>,
    /// Why a replay could not follow the recorded run (a different call at some index).
    broken: Option<String>,
}

static ACTIVE: AtomicBool = AtomicBool::new(false);
static PROBE: Mutex<Option<Probe>> = Mutex::new(None);

/// Installs a probe for the whole process (one harness at a time: the harness's test
/// binary runs it alone).
pub fn install(mode: Mode) {
    if let Ok(mut p) = PROBE.lock() {
        *p = Some(Probe {
            mode,
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
/// noises (asked only while a probe is installed). Returns `noisy`'s output, or under a
/// replaying probe the recorded run's output for this call (after drawing anyway).
pub fn noise_call<T: Replayable>(
    site: &'static str,
    (norm, sensitivity): (Norm, f64),
    query: impl FnOnce() -> Value,
    noisy: impl FnOnce() -> T,
) -> T {
    if !ACTIVE.load(Ordering::Relaxed) {
        return noisy();
    }
    let query = query();
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
    p.calls.push(Call {
        site,
        norm,
        sensitivity,
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
