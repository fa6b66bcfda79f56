#!/bin/sh
# evdev key-to-text throughput: N million scripted input_event records (24 bytes each, scanner bursts
# ending in Enter) through KeyTranslator built with -O, against `cat` of the same file to /dev/null
# (the I/O floor). usage: bench/evdev.sh [MILLIONS] [RUNS]
set -eu
here=$(cd "$(dirname "$0")" && pwd)
millions=${1:-10}
runs=${2:-3}
swiftc=${SWIFTC:-$(command -v swiftc || echo /opt/swift/usr/bin/swiftc)}
work=$(mktemp -d /tmp/evdev-bench.XXXXXX)
trap 'rm -rf "$work"' EXIT

# KeyTranslator.swift imports nothing, so the measured code is exactly the driver's, built alone.
"$swiftc" -O -wmo -parse-as-library -o "$work/evdev-bench" "$here/evdev-main.swift" "$here/../Sources/Drivers/HID/KeyTranslator.swift"
"$work/evdev-bench" generate "$work/events.bin" "$millions"
bytes=$(wc -c <"$work/events.bin")
events=$((bytes / 24))
cat "$work/events.bin" >/dev/null  # warm the page cache for both

now() { date +%s.%N; }
best_ours=0
best_cat=0
i=0
while [ "$i" -lt "$runs" ]; do
  start=$(now)
  summary=$("$work/evdev-bench" translate "$work/events.bin" us)
  end=$(now)
  ours=$(awk -v e="$events" -v a="$start" -v b="$end" 'BEGIN { printf "%.0f", e / (b - a) }')
  start=$(now)
  cat "$work/events.bin" >/dev/null
  end=$(now)
  floor=$(awk -v e="$events" -v a="$start" -v b="$end" 'BEGIN { printf "%.0f", e / (b - a) }')
  [ "$ours" -gt "$best_ours" ] && best_ours=$ours
  [ "$floor" -gt "$best_cat" ] && best_cat=$floor
  echo "run $((i + 1)): KeyTranslator $ours events/s (process, incl. read; $summary), cat $floor events/s"
  i=$((i + 1))
done
echo "events: $events ($bytes bytes)"
echo "best KeyTranslator: $best_ours events/s; best cat: $best_cat events/s"
awk -v o="$best_ours" -v c="$best_cat" 'BEGIN { printf "ratio KeyTranslator / cat: %.3f (a scanner types ~100-1000 events/s)\n", o / c }'
