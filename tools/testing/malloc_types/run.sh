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
	grep -v -e '^MT-GUEST: \(start\|done\|run exit\)' -e '^MT-FILE: '
# The files the guest sent as base64 lines (MT-FILE: NAME LINE).
out="$MT_CACHE/run"
mkdir -p "$out"
files_ok=1
for f in binder-work.svg binder-work.pprof; do
	if ! sed -n "s/^MT-FILE: $f //p" "$log" | tr -d '\r' | base64 -d >"$out/$f" 2>/dev/null || [ ! -s "$out/$f" ]; then
		echo "run: the guest sent no $f"
		files_ok=0
	fi
done
[ $files_ok = 1 ] && echo "run: the flame graph of binder work: $out/binder-work.svg (open it in a browser);" \
	"its pprof profile: $out/binder-work.pprof (go tool pprof -top FILE, or -http=:8080 FILE)"
verdict=$(python3 "$MT_DIR/judge.py" "$log" --mode run)
rc=$(sed -n 's/^MT-GUEST: run exit \([0-9]*\).*/\1/p' "$log" | tail -n 1)
if [ "${rc:-x}" != 0 ] || [ $files_ok = 0 ] || ! echo "$verdict" | tail -n 1 | grep -q 'FAIL 0$'; then
	echo "$verdict" | grep FAIL | grep -v '^PASS'
	echo "run: FAILED (guest job exit ${rc:-none}; log: $log)"
	exit 1
fi
echo "run: done"
