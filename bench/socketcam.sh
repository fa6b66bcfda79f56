#!/bin/sh
# SocketCam against zbarimg and ZXingReader on the same images in the same run; prints ratios.
# usage: bench/socketcam.sh [path/to/capture] [N images]
set -eu
here=$(cd "$(dirname "$0")" && pwd)
bin=${1:-"$here/../.build/release/capture"}
n=${2:-200}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"$here/make-images.sh" "$work/images" "$n" >/dev/null
exec python3 "$here/socketcam.py" "$bin" "$work/images"
