#!/bin/sh
# Camera latency and CPU against zbarcam --raw on vivid in the VM tier, p50/p99 and ratios.
#   bench/camera-latency.sh [path/to/static/release/capture] [SWITCHES]     default 20 code changes a size
set -eu
here=$(cd "$(dirname "$0")" && pwd)
exec /usr/bin/python3 "$here/camera-latency.py" "${1:-$(cd "$here/.." && swift build -c release --static-swift-stdlib --show-bin-path)/capture}" "${2:-20}"
