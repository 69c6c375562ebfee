#!/usr/bin/env bash
# One `normtune bench` per value of an environment variable, on the GPU machine (or any device):
# how a setting that the library reads from the environment (CLNORM_BWD_GROUPS_PER_CU,
# CLNORM_RAW16, ...) moves every shape's time, all from one command.
#
#   VAR=CLNORM_BWD_GROUPS_PER_CU VALUES="default 1 2 4 8" bash scripts/env_sweep.sh BENCH_ARGS...
#   e.g. ... env_sweep.sh --grid 4096x4096,65536x512 --ops layernorm_bwd --dtypes f32,bf16
#
# "default" runs with the variable unset. Files in $OUT (or ./env-sweep): bench-VALUE.json and
# .log per value, and sweep.md: one row per op, dtype and shape, the time (us) and GB/s of each
# value and its check. Environment: NORMTUNE=PATH (default build-bench/normtune, built here),
# DEVICE (default NVIDIA; empty: normtune's default device).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
# the heuristic's figures: the shipped table off, unless the caller set CLNORM_NO_BUILTIN
export CLNORM_NO_BUILTIN=${CLNORM_NO_BUILTIN-1}
out=${OUT:-$root/env-sweep}
var=${VAR:?set VAR to the environment variable to sweep}
values=${VALUES:?set VALUES to its values (default: unset)}
mkdir -p "$out"
normtune=${NORMTUNE:-$root/build-bench/normtune}
if [ ! -x "$normtune" ]; then
  # shellcheck source=scripts/gpu_build.sh
  source "$root/scripts/gpu_build.sh"
  gpu_build "$root/build-bench" normtune
fi
rc=0
for value in $values; do
  echo "== $var=$value" >&2
  (
    if [ "$value" = default ]; then unset "$var"; else export "$var=$value"; fi
    device=${DEVICE-NVIDIA}
    "$normtune" bench ${device:+--device "$device"} --db "$out/none-$value.db" --json "$@" \
      >"$out/bench-$value.json" 2>"$out/bench-$value.log"
  ) || rc=1
  rm -f "$out/none-$value.db"
done
python3 "$(dirname "$0")/bench_json.py" sweep "$out" "$var" $values >"$out/sweep.md"
cat "$out/sweep.md"
exit $rc
