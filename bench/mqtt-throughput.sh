#!/bin/sh
# capture listen --mqtt: TOTAL codes from SCANNERS pty scanners through capture to a local mosquitto and a
# paho subscriber (events/s, CPU per event, fsyncs/s, latency p50/p99, RSS while the spool grows), with
# mosquitto_pub -q 1 -l and listen --json stdout as the peers (bench/mqtt-throughput.py).
#   bench/mqtt-throughput.sh [path/to/capture] [TOTAL] [SCANNERS] [OUTAGE] [LATENCY]
#   default 100000 codes, 4 scanners, 50000 codes spooled with the broker down, 2000 timed codes
set -eu
here=$(cd "$(dirname "$0")" && pwd)
exec /usr/bin/python3 "$here/mqtt-throughput.py" "${1:-$here/../.build/release/capture}" "${2:-100000}" "${3:-4}" \
  "${4:-50000}" "${5:-2000}"
