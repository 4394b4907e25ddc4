//! Background work yields the CPU to the window.
//!
//! On a laptop with two cores, training or scoring holds every core; at the same scheduling
//! priority the window's thread then waits its turn behind them and frames stretch past
//! 16 ms. A worker the window starts lowers its own priority first, so the scheduler runs
//! the window's thread whenever it is ready and gives the workers every other cycle: the
//! run is barely slower (the window is idle most of the time), the window stays smooth.

/// The niceness of a background thread: below normal (0), above batch jobs (19).
const BACKGROUND_NICE: i32 = 10;

/// Lowers the calling thread's scheduling priority (never raises it: a process already
/// started below normal stays where its user put it). Threads it starts afterwards (a
/// rayon pool, polars' pool) inherit it. Linux only: there the nice value belongs to the
/// thread (`setpriority` on the thread id); elsewhere the call would renice the whole
/// process, window included, so it does nothing.
pub fn yield_to_window() {
    if niceness() >= BACKGROUND_NICE {
        return;
    }
    #[cfg(target_os = "linux")]
    // SAFETY: plain system calls on the calling thread's own id; a failure (a sandbox that
    // forbids it) leaves the priority as it was, which is only slower, never wrong.
    unsafe {
        let tid = libc::gettid();
        libc::setpriority(libc::PRIO_PROCESS, tid as libc::id_t, BACKGROUND_NICE);
    }
}

/// The calling thread's niceness (Linux; 0 elsewhere), for tests.
pub fn niceness() -> i32 {
    #[cfg(target_os = "linux")]
    // SAFETY: as above; getpriority may return −1 legitimately, which errno tells apart,
    // and a test reading it only compares against `BACKGROUND_NICE`.
    unsafe {
        let tid = libc::gettid();
        return libc::getpriority(libc::PRIO_PROCESS, tid as libc::id_t);
    }
    #[allow(unreachable_code)]
    0
}

#[cfg(test)]
mod tests {
    /// A lowered thread's children inherit its priority (the rayon pool a worker builds
    /// after lowering itself), and the thread that started it keeps its own.
    #[test]
    fn a_lowered_thread_and_its_children_run_below_the_window() {
        let before = super::niceness();
        let (own, child) = std::thread::spawn(|| {
            super::yield_to_window();
            let child = std::thread::spawn(super::niceness).join().unwrap();
            (super::niceness(), child)
        })
        .join()
        .unwrap();
        assert_eq!(super::niceness(), before);
        if cfg!(target_os = "linux") {
            let expected = super::BACKGROUND_NICE.max(before);
            assert_eq!((own, child), (expected, expected));
        }
    }
}
