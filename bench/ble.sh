#!/bin/sh
# BLE figures against the BlueZ rig; usage: bench/ble.sh [path/to/capture]
set -eu
here=$(cd "$(dirname "$0")" && pwd)
exec /usr/bin/python3 "$here/ble.py" "${1:-$here/../.build/release/capture}"
