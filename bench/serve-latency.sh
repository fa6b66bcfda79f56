#!/bin/sh
# capture serve latency: a pty scanner's code timed to a WebSocket client vs to listen --json stdout,
# p50/p99 and ratio.   bench/serve-latency.sh [path/to/capture] [COUNT]      default 1000 codes each
set -eu
here=$(cd "$(dirname "$0")" && pwd)
exec /usr/bin/python3 "$here/serve-latency.py" "${1:-$here/../.build/release/capture}" "${2:-1000}"
