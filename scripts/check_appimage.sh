#!/usr/bin/env bash
# Runs a built AppImage as a user would: its version through the AppImage runtime, then a
# tiny train → sample on the Adult sample it carries (read-only inside the image), writing
# only into a scratch folder; then checks the image's desktop entry.
#
#   scripts/check_appimage.sh target-packages/dpsynth-x86_64.AppImage
#
# Needs FUSE for the runtime to mount the image (or set APPIMAGE_EXTRACT_AND_RUN=1), and
# desktop-file-validate (desktop-file-utils) for the last step.
set -euo pipefail
image="$(readlink -f "${1:?usage: scripts/check_appimage.sh PATH.AppImage}")"
[ -x "$image" ] || { echo "$image is not an executable file" >&2; exit 2; }
scratch="$(mktemp -d)"
trap 'chmod -R u+w "$scratch"; rm -rf "$scratch"' EXIT
"$image" --version
# The samples inside the image, read from an extracted copy (the runtime's own extractor).
(cd "$scratch" && "$image" --appimage-extract >/dev/null)
root="$scratch/squashfs-root"
samples="$root/usr/share/dpsynth/assets/adult"
chmod -R a-w "$root"
(cd "$scratch" && HOME="$scratch" "$image" train --data "$samples/adult_test.csv" \
   --schema "$samples/adult.schema.json" --method aim --preset quick --epsilon 0.3 --delta 1e-6 \
   --out "$scratch/m.dpsynth" >/dev/null 2>&1 \
 && HOME="$scratch" "$image" sample --model "$scratch/m.dpsynth" --rows 10 --out "$scratch/s.csv")
[ "$(wc -l < "$scratch/s.csv")" -eq 11 ] || { echo "the AppImage did not sample 10 rows" >&2; exit 1; }
desktop-file-validate "$root/dpsynth.desktop"
[ -e "$root/.DirIcon" ] && [ -x "$root/AppRun" ] || { echo "the AppDir lacks .DirIcon or AppRun" >&2; exit 1; }
chmod -R u+w "$root"
echo "AppImage: $image runs, trains and samples; its desktop entry is valid"
