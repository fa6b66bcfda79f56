#!/usr/bin/env bash
# SocketCam benchmark: capture's software scanner (ZBar + zxing-cpp) against zbarimg and ZXingReader on the
# same generated image set, each tool invoked once over all images.
#
#   bench/socketcam.sh [IMAGEDIR] [N]
#
# IMAGEDIR defaults to bench/out/images (git-ignored); it is (re)generated with bench/make-images.sh when
# its manifest is missing or lists a different number of images than N (default 200).
# capture is included when CAPTURE_DECODE holds the command line that decodes image files given as extra
# arguments and prints one line per symbol, FILE<TAB>FORMAT<TAB>TEXT (see bench/decode-images.sh);
# otherwise only the two reference tools run. RUNS (default 3) repeats every tool to show timing spread.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
dir=${1:-$here/out/images}
count=${2:-200}
runs=${RUNS:-3}

listed=0
if [[ -r $dir/manifest.tsv ]]; then listed=$(grep -vc '^#' "$dir/manifest.tsv" || true); fi
if [[ $listed != "$count" ]]; then
  rm -rf "$dir"
  "$here/make-images.sh" "$dir" "$count"
fi

tools=(zbarimg zxingreader)
if [[ -n ${CAPTURE_DECODE:-} ]]; then
  tools+=(capture)
else
  echo "CAPTURE_DECODE not set: reference decoders only" >&2
fi

echo "# $(date -u +%Y-%m-%dT%H:%M:%SZ) $(nproc) CPUs, $count images in $dir"
for ((run = 1; run <= runs; run++)); do
  echo "## run $run/$runs"
  "$here/decode-images.sh" "$dir" "${tools[@]}"
done
