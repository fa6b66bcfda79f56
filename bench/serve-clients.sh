#!/bin/sh
# capture serve under many clients: ROUNDS rounds of CLIENTS clients opening and closing concurrently; all
# served, no handle reused while open, RSS before/after; vs a minimal aiohttp server (the floor).
#   bench/serve-clients.sh [path/to/capture] [CLIENTS] [ROUNDS]      default 200 clients, 5 rounds
set -eu
here=$(cd "$(dirname "$0")" && pwd)
exec /usr/bin/python3 "$here/serve-clients.py" "${1:-$here/../.build/release/capture}" "${2:-200}" "${3:-5}"
