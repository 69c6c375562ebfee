#!/usr/bin/env bash
# One call of issue 22's tuning run on the GPU machine (stop 39): scripts/tune_gpu.sh with its
# output in $OUT and a short summary on stdout (the call's returned text is only its last 12k
# characters). From the repository root, carrying .device-kit and build-tune:
#   STOP_AFTER=480 bash scripts/explore/session39/tune_call.sh [normtune tune options]
set -uo pipefail
source .device-kit/setup.sh
out=${OUT:-/tmp/out}
mkdir -p "$out"
start=$SECONDS
OUT=$out bash scripts/tune_gpu.sh "$@" >"$out/call.txt" 2>&1
echo "== tune_gpu.sh: exit $? after $((SECONDS - start)) s"
echo "evaluation lines: $(grep -c 'wg=' "$out/call.txt")"
grep -v 'wg=' "$out/call.txt" | grep -v '^$' | cut -c1-300 | tail -25
grep 'wg=' "$out/call.txt" | tail -3 | cut -c1-200
card=$(ls "$out"/show-*.txt 2>/dev/null | head -1)
[ -n "$card" ] && { echo "== $card"; head -5 "$card"; tail -3 "$card"; }
gzip -f "$out"/tune-*.log "$out/call.txt"
ls -la "$out"
exit 0
