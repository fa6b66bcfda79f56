#!/bin/sh
# SPP frame parser throughput vs the I/O floor (cat FILE > /dev/null) on the same capture.
#   bench/spp.sh [MB] [RUNS]        default 50 MB, best of 3
# Writes a capture of SPP frames shaped like the docs/device-protocols.md §5.3 one (varying text, some garbage
# between frames) to bench/out/spp-capture.bin, builds bench/spp-bench.swift with swiftc -O together with
# Sources/Drivers/Serial/SPPFrameParser.swift (import-free), and prints both figures and the ratio.
set -eu
cd "$(dirname "$0")/.."
mb=${1:-50}
runs=${2:-3}
swiftc=${SWIFTC:-$(command -v swiftc || echo /opt/swift/usr/bin/swiftc)}
mkdir -p bench/out
capture=bench/out/spp-capture.bin
python3 - "$capture" "$mb" <<'PY'
import random, sys
path, mb = sys.argv[1], int(sys.argv[2])
random.seed(4)
header = bytes.fromhex("00640100170000000000" "0C00010006")  # docs/device-protocols.md §5.3 capture
size = mb * 1000 * 1000
NOT_STX = [b for b in range(256) if b != 2]
out = bytearray()
while len(out) < size:
    text = bytes(random.choice(b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ") for _ in range(random.randint(8, 40)))
    body = header + text + b"\r]C0DB3`E5"
    total = 1 + 2 + len(body) + 1
    out += b"\x02" + total.to_bytes(2, "big") + body + b"\x03"
    if random.random() < 0.1:  # garbage without STX between some frames
        out += bytes(random.choice(NOT_STX) for _ in range(random.randint(1, 64)))
with open(path, "wb") as f:
    f.write(out[:size])
PY
"$swiftc" -O -wmo -parse-as-library -swift-version 6 Sources/Drivers/Serial/SPPFrameParser.swift \
  bench/spp-bench.swift -o bench/out/spp-bench
bytes=$(wc -c <"$capture")
ours=$(bench/out/spp-bench "$capture" "$runs")
echo "$ours"
parser_mbs=$(echo "$ours" | sed -n 's/.*= \([0-9.e+-]*\) MB\/s$/\1/p')
best=""
i=0
while [ "$i" -lt "$runs" ]; do
  t0=$(date +%s.%N); cat "$capture" >/dev/null; t1=$(date +%s.%N)
  t=$(echo "$t1 - $t0" | bc -l)
  if [ -z "$best" ] || [ "$(echo "$t < $best" | bc -l)" = 1 ]; then best=$t; fi
  i=$((i + 1))
done
cat_mbs=$(echo "$bytes / 1000000 / $best" | bc -l)
printf 'cat > /dev/null (I/O floor, file in page cache): best of %s: %.4f s = %.0f MB/s\n' "$runs" "$best" "$cat_mbs"
printf 'parser / cat: %.3f\n' "$(echo "$parser_mbs / $cat_mbs" | bc -l)"
