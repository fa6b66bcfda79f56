#!/bin/sh
# DMCC get round trip vs printf | nc on the same simulator; usage: bench/dmcc.sh [path/to/capture] [runs]
set -eu
here=$(cd "$(dirname "$0")" && pwd)
command -v nc >/dev/null || { echo "bench/dmcc.sh needs nc (apt-get install netcat-openbsd)" >&2; exit 1; }
exec /usr/bin/python3 "$here/dmcc.py" "${1:-$here/../.build/release/capture}" "${2:-20}"
