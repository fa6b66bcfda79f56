#!/bin/sh
# SocketCam against zbarimg and ZXingReader on the same images in the same run; prints ratios.
# usage: bench/socketcam.sh [path/to/capture] [N images]
# DEGRADED=1 adds three harder copies of every image (rotated 5 degrees, blurred, scaled to half size;
# ImageMagick's convert), so a change in which decoder reads which format shows up as a decode rate:
# on the clean set every decoder reads everything.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
bin=${1:-"$here/../.build/release/capture"}
n=${2:-200}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"$here/make-images.sh" "$work/images" "$n" >/dev/null
if [ "${DEGRADED:-0}" = 1 ]; then
  # /usr/bin/convert: ImageMagick itself, not a stand-in earlier on PATH.
  convert=${CONVERT:-/usr/bin/convert}
  [ -x "$convert" ] || { echo "$0: DEGRADED=1 needs ImageMagick's convert (apt-get install imagemagick)" >&2; exit 69; }
  manifest="$work/images/manifest.tsv"
  grep -v '^#' "$manifest" >"$work/clean.tsv"
  while IFS="$(printf '\t')" read -r file format expected; do
    stem=${file%.png}
    "$convert" "$work/images/$file" -background white -rotate 5 "$work/images/$stem-rot.png"
    "$convert" "$work/images/$file" -blur 0x1.2 "$work/images/$stem-blur.png"
    "$convert" "$work/images/$file" -resize 50% "$work/images/$stem-half.png"
    for variant in rot blur half; do
      printf '%s\t%s\t%s\n' "$stem-$variant.png" "$format" "$expected" >>"$manifest"
    done
  done <"$work/clean.tsv"
fi
exec python3 "$here/socketcam.py" "$bin" "$work/images"
