#!/bin/sh
# Run by the VM's init with the host's share at /host: the scenario catalogue does the rest; the
# kernel log is kept beside the other logs.
export PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root LANG=C.UTF-8
cd /host || exit 2
python3 /host/scenarios.py --guest /host
rc=$?
dmesg >/host/logs/dmesg.log 2>&1
exit $rc
