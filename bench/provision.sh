#!/bin/sh
# Idempotent provisioning: `set DEV --from FILE` a second time issues no writes; timed against
# `get DEV --all` (the read-only pass over the same properties) on the project's DataMan simulator.
#   bench/provision.sh [path/to/capture] [RUNS]      default RUNS 10
# Builds the simulator process (bench/dmcc-sim-main.swift + Tests/Simulators/DMCCSimulator.swift) with
# swiftc into bench/out/, then runs bench/provision.py.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
capture=${1:-$here/../.build/release/capture}
swiftc=${SWIFTC:-$(command -v swiftc || echo /opt/swift/usr/bin/swiftc)}
mkdir -p "$here/out"
sim=$here/out/dmcc-simulator
if [ ! -x "$sim" ] || [ "$here/dmcc-sim-main.swift" -nt "$sim" ] || \
   [ "$here/../Tests/Simulators/DMCCSimulator.swift" -nt "$sim" ]; then
  "$swiftc" -O -parse-as-library -swift-version 6 "$here/../Tests/Simulators/DMCCSimulator.swift" \
    "$here/dmcc-sim-main.swift" -o "$sim"
fi
exec /usr/bin/python3 "$here/provision.py" "$capture" "$sim" "${2:-10}"
