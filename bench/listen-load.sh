#!/bin/sh
# listen under load: RSS and CPU over 1,000,000 events from 4 line-mode serial ptys, every code checked
# (exactly once, right device), vs cat on the same feed (the I/O floor).
#   bench/listen-load.sh [path/to/capture] [TOTAL] [DEVICES] [PACE]
#   default 1000000 events, 4 ptys; a flood run, then one paced at PACE codes/s (default 10000, 0 = none)
set -eu
here=$(cd "$(dirname "$0")" && pwd)
exec /usr/bin/python3 "$here/listen-load.py" "${1:-$here/../.build/release/capture}" "${2:-1000000}" "${3:-4}" "${4:-10000}"
