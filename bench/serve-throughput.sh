#!/bin/sh
# capture serve throughput: TOTAL codes from a pty to CLIENTS WebSocket clients, every code to every client
# once and in order; events/s, CPU per event, RSS; vs listen --json on the same feed.
#   bench/serve-throughput.sh [path/to/capture] [TOTAL] [CLIENTS] [PACE]   default 100000 codes, 10 clients, flood (PACE 0)
set -eu
here=$(cd "$(dirname "$0")" && pwd)
exec /usr/bin/python3 "$here/serve-throughput.py" "${1:-$here/../.build/release/capture}" "${2:-100000}" "${3:-10}" "${4:-0}"
