//! Where the bundled sample files are, in a checkout and in an installed package.

use std::path::PathBuf;

/// Bundled samples: `assets/` in a checkout (the README's run command starts there), else
/// an installed package's `share/dpsynth/assets` beside the binary's `bin/` (read-only:
/// nothing is ever written beside them), else the source tree the binary was built from.
pub fn sample_path(rel: &str) -> PathBuf {
    let local = PathBuf::from("assets").join(rel);
    if local.exists() {
        return local;
    }
    if let Some(installed) = std::env::current_exe()
        .ok()
        .and_then(|exe| Some(exe.parent()?.parent()?.join("share/dpsynth/assets")))
        .filter(|p| p.is_dir())
    {
        return installed.join(rel);
    }
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("assets")
        .join(rel)
}
