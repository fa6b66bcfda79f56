#!/bin/sh
# Reconnect time after simulated link loss on the BlueZ rig, vs a python-dbus Device1.Connect floor.
#   bench/reconnect.sh [path/to/capture] [ROUNDS] [OUTAGE_SECONDS]      default 10 rounds, 3 s
set -eu
here=$(cd "$(dirname "$0")" && pwd)
exec /usr/bin/python3 "$here/reconnect.py" "${1:-$here/../.build/release/capture}" "${2:-10}" "${3:-3}"
