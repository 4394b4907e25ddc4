//! The `dpsynth` binary: no arguments opens the window, a subcommand runs headless.

use std::process::ExitCode;

fn main() -> ExitCode {
    die_quietly_on_closed_pipes();
    limit_thread_lookups();
    keep_freed_memory();
    if let Ok(exe) = std::env::current_exe() {
        // A crafted Parquet or IPC file can abort polars' reader: try it in a child first.
        dpsynth::data::columnar::check_in_child_process(exe);
    }
    let args: Vec<std::ffi::OsString> = std::env::args_os().collect();
    if args.len() <= 1 {
        return open_window(None);
    }
    // `dpsynth FILE`: a desktop's "Open with" (a file, not a subcommand or a flag).
    if args.len() == 2
        && std::path::Path::new(&args[1]).exists()
        && !args[1].to_string_lossy().starts_with('-')
    {
        return open_window(Some(std::path::PathBuf::from(&args[1])));
    }
    hand_gpu_work_to_the_cuda_binary(&args);
    dpsynth::cli::main_with_args(args)
}

/// Replaces this process with `dpsynth-cuda` for GPU work where that build can run
/// (see `nn::device::handoff_target` for why there are two binaries). Returns only when
/// there is nothing to hand off or the hand-off failed (with a note): the command then
/// runs here.
fn hand_gpu_work_to_the_cuda_binary(args: &[std::ffi::OsString]) {
    let Some(target) = dpsynth::nn::device::handoff_target(args) else {
        return;
    };
    #[cfg(unix)]
    {
        use std::os::unix::process::CommandExt as _;
        let err = std::process::Command::new(&target)
            .args(&args[1..])
            .env("DPSYNTH_HANDOFF", "0")
            .exec();
        eprintln!(
            "dpsynth: could not start {} ({err}); training on the CPU here",
            target.display()
        );
    }
}

#[cfg(not(feature = "gui"))]
fn open_window(_file: Option<std::path::PathBuf>) -> ExitCode {
    eprintln!(
        "dpsynth: this build has no window (built without the `gui` feature); see `dpsynth --help` for the command line."
    );
    ExitCode::from(2)
}

#[cfg(feature = "gui")]
fn open_window(file: Option<std::path::PathBuf>) -> ExitCode {
    {
        match dpsynth::gui::run_with(file) {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("dpsynth: the window could not open: {e:#}");
                eprintln!("dpsynth: the command line still works; see `dpsynth --help`.");
                ExitCode::from(1)
            }
        }
    }
}

/// candle asks for the thread count on every matrix product and, unless
/// `RAYON_NUM_THREADS` is set, reads it from /sys each time (thousands of file reads a
/// second). Setting the variable once, before any thread exists, makes that lookup cheap.
fn limit_thread_lookups() {
    if std::env::var_os("RAYON_NUM_THREADS").is_none() {
        let n = std::thread::available_parallelism().map_or(1, |n| n.get());
        // SAFETY: called first thing in `main`, while the process is single-threaded.
        unsafe { std::env::set_var("RAYON_NUM_THREADS", n.to_string()) };
    }
}

/// candle allocates a fresh buffer for every tensor op. glibc (mmap for large blocks) and
/// mimalloc's default (purging freed pages after 10 ms) both hand freed buffers back to
/// the kernel, so every training step faulted its working set in again: measured 1.5–4×
/// slower steps. mimalloc with purging disabled keeps them; the process keeps the memory
/// it has used until it exits.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// `mi_option_purge_delay` in mimalloc's `mi_option_e` (the crate exports no constant).
const MI_OPTION_PURGE_DELAY: libmimalloc_sys::mi_option_t = 15;

fn keep_freed_memory() {
    // SAFETY: sets a process-wide allocator option; called before any other thread exists.
    unsafe { libmimalloc_sys::mi_option_set(MI_OPTION_PURGE_DELAY, -1) };
}

/// Rust ignores SIGPIPE, so `dpsynth … | head` made `println!` panic (exit 101, which the
/// CLI contract reserves for bugs) once `head` closed the pipe. Restoring the default
/// makes the process end quietly, as other Unix tools do.
fn die_quietly_on_closed_pipes() {
    #[cfg(unix)]
    // SAFETY: resets one signal's disposition; called first thing in `main`, before any
    // other thread exists.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
}
