#!/usr/bin/env bash
# Builds the Linux packages: a .deb (cargo-deb) and, where appimagetool is on the PATH or
# APPIMAGE_RUNTIME names a type-2 runtime, an AppImage from the same files. The package's
# layout, desktop entry, icon and file types are configured in Cargo.toml
# ([package.metadata.deb]) and packaging/.
#
#   scripts/package.sh [OUT]        # default OUT: target-packages/
#   APPIMAGE_RUNTIME=runtime-x86_64 scripts/package.sh OUT   # also the AppImage, without appimagetool
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

# The AppImage: the .deb's files as an AppDir (AppRun is the binary, which finds its samples
# in usr/share/dpsynth beside usr/bin), packed by appimagetool where it is installed, or
# else by the two steps appimagetool itself takes for a type-2 AppImage: a squashfs of the
# AppDir appended to a type-2 runtime (APPIMAGE_RUNTIME=path/to/runtime-x86_64, from
# https://github.com/AppImage/type2-runtime/releases) with mksquashfs (squashfs-tools).
appimage="$out/dpsynth-x86_64.AppImage"
app="$(mktemp -d)/dpsynth.AppDir"
mkdir -p "$app"
dpkg-deb -x "$deb" "$app"
cp packaging/dpsynth.desktop "$app/"
cp packaging/dpsynth.png "$app/dpsynth.png"
ln -s dpsynth.png "$app/.DirIcon"
ln -s usr/bin/dpsynth "$app/AppRun"
if command -v appimagetool >/dev/null 2>&1; then
  ARCH=x86_64 appimagetool "$app" "$appimage"
  echo "built $appimage"
elif [ -n "${APPIMAGE_RUNTIME:-}" ]; then
  [ -f "$APPIMAGE_RUNTIME" ] || { echo "APPIMAGE_RUNTIME=$APPIMAGE_RUNTIME is not a file" >&2; exit 2; }
  # A type-2 runtime is an ELF file with the AppImage magic 'AI' 0x02 at byte 8.
  magic="$(head -c 11 "$APPIMAGE_RUNTIME" | od -An -tx1 | tr -d ' \n')"
  [ "${magic:0:8}${magic:16:6}" = "7f454c46414902" ] \
    || { echo "$APPIMAGE_RUNTIME is not an AppImage type-2 runtime (no ELF header with 'AI' 0x02 at byte 8)" >&2; exit 2; }
  command -v mksquashfs >/dev/null 2>&1 \
    || { echo "mksquashfs is not installed (Debian: apt-get install squashfs-tools)" >&2; exit 2; }
  image="$(mktemp)"
  mksquashfs "$app" "$image" -root-owned -noappend -comp zstd -quiet >/dev/null
  cat "$APPIMAGE_RUNTIME" "$image" > "$appimage.part"
  chmod 755 "$appimage.part"
  mv "$appimage.part" "$appimage"
  rm -f "$image"
  echo "built $appimage"
else
  echo "no AppImage: install appimagetool, or set APPIMAGE_RUNTIME to a type-2 runtime (the .deb is complete on its own)"
fi
rm -rf "$(dirname "$app")"
