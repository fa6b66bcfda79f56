#!/bin/sh
# SocketCam against zbarimg and ZXingReader on the same images in the same run, then the determinism
# check (each image alone, in a batch, from --dir and from stdin).
# usage: bench/socketcam.sh [path/to/capture] [CORPUS]
# CORPUS (default bench/out/socketcam-corpus) is generated with bench/corpus.py --seed ${SEED:-11} when it
# has no manifest.tsv or one from another seed. RUNS (default 3) batch repetitions. Every tool's result
# per image lands in CORPUS/results.json, to compare a build with another.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
bin=${1:-"$here/../.build/release/capture"}
corpus=${2:-"$here/out/socketcam-corpus"}
seed=${SEED:-11}
python=/usr/bin/python3
if ! head -n 1 "$corpus/manifest.tsv" 2>/dev/null | grep -qx "# bench/corpus.py --seed $seed"; then
  "$python" "$here/corpus.py" --seed "$seed" "$corpus"
fi
"$python" "$here/socketcam.py" "$bin" "$corpus" --runs "${RUNS:-3}" --json "$corpus/results.json"
echo
# The determinism check exits 1 on any difference; STRICT=1 passes that on (make bench goes on to the
# other benchmarks either way).
status=0
"$python" "$here/socketcam-determinism.py" "$bin" "$corpus" || status=$?
[ "${STRICT:-0}" = 1 ] && exit "$status"
exit 0
