#!/usr/bin/env bash
# `make run`: builds what is missing, boots the production kernel in QEMU
# and runs the main job (guest/run.sh) in it, printing what the guest
# printed. Exits non-zero when the job fails, the kernel reports a problem,
# or the guest never finishes.
set -uo pipefail
. "$(dirname "$0")/lib.sh"

mt_prepare prod

log="$MT_CACHE/logs/run-console.log"
echo "run: booting the production kernel in QEMU (TCG, 2 CPUs); console log: $log"
bash "$MT_DIR/run-qemu.sh" prod run "$log" || exit 1
# What the guest printed, from its start to its end, kernel messages included.
sed -n '/^MT-GUEST: start/,/^MT-GUEST: done/p' "$log" | tr -d '\r' |
	grep -v '^MT-GUEST: \(start\|done\|run exit\)'
verdict=$(python3 "$MT_DIR/judge.py" "$log" --mode run)
rc=$(sed -n 's/^MT-GUEST: run exit \([0-9]*\).*/\1/p' "$log" | tail -n 1)
if [ "${rc:-x}" != 0 ] || ! echo "$verdict" | tail -n 1 | grep -q 'FAIL 0$'; then
	echo "$verdict" | grep FAIL | grep -v '^PASS'
	echo "run: FAILED (guest job exit ${rc:-none}; log: $log)"
	exit 1
fi
echo "run: done"
