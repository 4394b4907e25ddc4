#!/usr/bin/env bash
# Builds the Linux packages: a .deb (cargo-deb) and, where appimagetool is on the PATH, an
# AppImage from the same files. The package's layout, desktop entry, icon and file types
# are configured in Cargo.toml ([package.metadata.deb]) and packaging/.
#
#   scripts/package.sh [OUT]        # default OUT: target-packages/
#
# Then: sudo dpkg -i OUT/dpsynth_*.deb   (or sudo apt install ./OUT/dpsynth_*.deb)
#
# macOS and Windows bundles are configured for cargo-packager in Cargo.toml
# ([package.metadata.packager]); they are untested here (no such machine).
set -euo pipefail
cd "$(dirname "$0")/.."
out="${1:-target-packages}"
mkdir -p "$out"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/dpsynth-target}"

command -v cargo-deb >/dev/null 2>&1 || cargo install cargo-deb --locked
# The window build with the default features; the .deb strips it.
cargo deb --output "$out"
deb="$(ls -t "$out"/dpsynth_*.deb | head -1)"
echo "built $deb"

if command -v appimagetool >/dev/null 2>&1; then
  app="$(mktemp -d)/dpsynth.AppDir"
  mkdir -p "$app"
  dpkg-deb -x "$deb" "$app"
  cp packaging/dpsynth.desktop "$app/"
  cp packaging/dpsynth.png "$app/dpsynth.png"
  ln -s usr/bin/dpsynth "$app/AppRun"
  ARCH=x86_64 appimagetool "$app" "$out/dpsynth-x86_64.AppImage"
  echo "built $out/dpsynth-x86_64.AppImage"
else
  echo "appimagetool is not installed: no AppImage (the .deb is complete on its own)"
fi
