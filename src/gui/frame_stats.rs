//! How long the window's frames take: when `DPSYNTH_FRAME_LOG=FILE` is set, shown in the
//! status bar and written to FILE every few seconds (the measurement behind "frame time
//! under 16 ms while training").
//!
//! The time is eframe's `cpu_usage`: the CPU time of building, tessellating and
//! submitting a frame, without waiting for vsync.

use std::time::{Duration, Instant};

/// Frames kept for the status bar (about two seconds at 60 fps).
const WINDOW: usize = 120;

#[derive(Default)]
pub struct FrameStats {
    recent: std::collections::VecDeque<f32>,
    /// Every frame since start, in ms, split by whether a run was training.
    training: Vec<f32>,
    idle: Vec<f32>,
    last_write: Option<Instant>,
    /// The frames over 16 ms and where the window was (for the log: what to speed up).
    slow: Vec<(f32, String)>,
}

/// Slow frames kept for the log.
const SLOW_KEPT: usize = 40;

/// Percentile of an unsorted sample (nearest rank).
fn percentile(v: &[f32], p: f64) -> f32 {
    if v.is_empty() {
        return 0.0;
    }
    let mut s = v.to_vec();
    s.sort_by(f32::total_cmp);
    let k = ((p / 100.0) * s.len() as f64).ceil() as usize;
    s[k.clamp(1, s.len()) - 1]
}

impl FrameStats {
    /// Records one frame's time; `place` says what the window showed (the tab).
    pub fn record(&mut self, seconds: Option<f32>, training: bool, place: &str) {
        let Some(s) = seconds.filter(|s| s.is_finite()) else {
            return;
        };
        let ms = s * 1000.0;
        if ms > 16.0 && self.slow.len() < SLOW_KEPT {
            self.slow.push((ms, place.to_string()));
        }
        self.recent.push_back(ms);
        if self.recent.len() > WINDOW {
            self.recent.pop_front();
        }
        if training {
            self.training.push(ms);
        } else {
            self.idle.push(ms);
        }
        if let Ok(path) = std::env::var("DPSYNTH_FRAME_LOG") {
            let due = self
                .last_write
                .is_none_or(|t| t.elapsed() > Duration::from_secs(3));
            if due {
                self.last_write = Some(Instant::now());
                let _ = crate::util::atomic::write_atomic(
                    std::path::Path::new(&path),
                    self.summary().as_bytes(),
                );
            }
        }
    }

    /// "frame 2.1 ms (max 5.0 ms)" over the last couple of seconds.
    pub fn status(&self) -> String {
        if self.recent.is_empty() {
            return String::new();
        }
        let mean = self.recent.iter().sum::<f32>() / self.recent.len() as f32;
        let max = self.recent.iter().copied().fold(0.0, f32::max);
        format!("frame {mean:.1} ms (max {max:.1} ms)")
    }

    /// Count, median, 95th and 99th percentile and maximum, while training and idle.
    pub fn summary(&self) -> String {
        let line = |name: &str, v: &[f32]| {
            format!(
                "{name}: frames {} · median {:.2} ms · p95 {:.2} ms · p99 {:.2} ms · max {:.2} ms · over 16 ms {}\n",
                v.len(),
                percentile(v, 50.0),
                percentile(v, 95.0),
                percentile(v, 99.0),
                v.iter().copied().fold(0.0, f32::max),
                v.iter().filter(|&&x| x > 16.0).count()
            )
        };
        let slow: Vec<String> = self
            .slow
            .iter()
            .map(|(ms, at)| format!("{ms:.1} ms ({at})"))
            .collect();
        line("training", &self.training)
            + &line("idle", &self.idle)
            + &format!("slow frames: {}\n", slow.join(", "))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_by_nearest_rank() {
        let v: Vec<f32> = (1..=100).map(|x| x as f32).collect();
        assert_eq!(percentile(&v, 50.0), 50.0);
        assert_eq!(percentile(&v, 99.0), 99.0);
        assert_eq!(percentile(&v, 100.0), 100.0);
        assert_eq!(percentile(&[], 50.0), 0.0);
    }

    #[test]
    fn frames_are_split_by_training() {
        let mut f = FrameStats::default();
        f.record(Some(0.002), true, "Train");
        f.record(Some(0.020), true, "Train");
        f.record(Some(0.001), false, "Data");
        f.record(None, false, "Data");
        let s = f.summary();
        assert!(s.contains("training: frames 2"), "{s}");
        assert!(s.contains("over 16 ms 1"), "{s}");
        assert!(s.contains("idle: frames 1"), "{s}");
        assert!(s.contains("20.0 ms (Train)"), "{s}");
    }
}
