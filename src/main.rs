//! The `dpsynth` binary: no arguments opens the window, a subcommand runs headless.

use std::process::ExitCode;

fn main() -> ExitCode {
    let args: Vec<std::ffi::OsString> = std::env::args_os().collect();
    if args.len() <= 1 {
        return match dpsynth::gui::run() {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("dpsynth: the window could not open: {e:#}");
                eprintln!("dpsynth: the command line still works; see `dpsynth --help`.");
                ExitCode::from(1)
            }
        };
    }
    dpsynth::cli::main_with_args(args)
}
