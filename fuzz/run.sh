#!/bin/sh
# Builds each parser fuzzer (libFuzzer + AddressSanitizer) and runs it for SECONDS (default 600).
#
#   fuzz/run.sh [SECONDS] [NAME...]      NAME: d600-scan, d600-config-answer, direct, spp, dmcc,
#                                        spool (default: all, in turn)
#
# Harnesses are compiled together with the parser sources they test, which import nothing:
# Sources/Drivers/BLE/Codecs/*.swift, Sources/Drivers/Serial/SPPFrameParser.swift,
# Sources/Drivers/DataMan/DMCC.swift, Sources/CaptureMQTT/SpoolFrame.swift.
# Seeds: fuzz/corpus/<name>/ (committed, written by make-seeds.py). New inputs go to fuzz/work/<name>/,
# crashes to fuzz/artifacts/, binaries and logs to fuzz/build/ (all ignored by git).
set -eu
cd "$(dirname "$0")/.."

duration=${1:-600}
[ $# -gt 0 ] && shift
names=${*:-d600-scan d600-config-answer direct spp dmcc spool}
swiftc=${SWIFTC:-$(command -v swiftc || echo /opt/swift/usr/bin/swiftc)}

mkdir -p fuzz/build fuzz/artifacts
for name in $names; do
  sources='Sources/Drivers/BLE/Codecs/*.swift'
  case $name in
    d600-scan) harness=D600ScanFuzz; max_len=12288 ;;
    d600-config-answer) harness=D600ConfigAnswerFuzz; max_len=4096 ;;
    direct) harness=DirectFuzz; max_len=4096 ;;
    spp) harness=spp; max_len=12288; sources=Sources/Drivers/Serial/SPPFrameParser.swift ;;
    dmcc) harness=dmcc; max_len=4096; sources=Sources/Drivers/DataMan/DMCC.swift ;;
    spool) harness=spool; max_len=4096; sources=Sources/CaptureMQTT/SpoolFrame.swift ;;
    *) echo "run.sh: unknown fuzzer '$name'" >&2; exit 2 ;;
  esac
  echo "== $name: building"
  # ld.gold warns about every ASan helper symbol; keep the log, show it only on failure.
  if ! "$swiftc" -sanitize=fuzzer,address -parse-as-library -O -swift-version 6 \
    $sources fuzz/Support.swift "fuzz/$harness.swift" \
    -o "fuzz/build/$name" >"fuzz/build/$name.build.log" 2>&1; then
    grep -v 'Cannot export local symbol' "fuzz/build/$name.build.log" >&2
    exit 1
  fi
  mkdir -p "fuzz/work/$name"
  echo "== $name: fuzzing for ${duration}s (log: fuzz/build/$name.log)"
  status=0
  "fuzz/build/$name" -max_total_time="$duration" -max_len="$max_len" -print_final_stats=1 \
    -artifact_prefix="fuzz/artifacts/$name-" "fuzz/work/$name" "fuzz/corpus/$name" \
    >"fuzz/build/$name.log" 2>&1 || status=$?
  grep -E '^#[0-9]+[[:space:]]+(DONE|INITED)|^stat::|SUMMARY|ERROR|invariant' "fuzz/build/$name.log" || true
  if [ "$status" -ne 0 ]; then
    echo "== $name: FAILED (exit $status); inputs in fuzz/artifacts/" >&2
    exit "$status"
  fi
done
