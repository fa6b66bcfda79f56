#!/bin/sh
# capture fleet apply: HOSTS `capture listen socketcam --mqtt ... --mqtt-commands` hosts on one local
# mosquitto, a 10-property profile applied ROUNDS times: time until every host reported applied,
# PUBLISHes per host (a tap on the broker), the controller's CPU; a bare paho-mqtt client doing the same
# round trips is the peer (bench/fleet-apply.py).
#   bench/fleet-apply.sh [path/to/capture] [HOSTS] [ROUNDS]     default 200 hosts, 3 rounds each
set -eu
here=$(cd "$(dirname "$0")" && pwd)
exec /usr/bin/python3 "$here/fleet-apply.py" "${1:-$here/../.build/release/capture}" "${2:-200}" "${3:-3}"
