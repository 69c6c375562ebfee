#!/usr/bin/env bash
# `test_numerics extreme` (rows of every magnitude, issue 25) on the GPU machine's NVIDIA device,
# one process per OP:DTYPE, all at once: NVIDIA's compiler builds each op and dtype's 60-170
# programs at 2-5 s each on the CPU's cores, so one op and dtype takes minutes.
#
#   source .device-kit/setup.sh && bash scripts/gpu_extreme.sh layernorm:f32 add_layernorm:f16:8x1001 ...
#
# OP:DTYPE runs every layout of the op and dtype; OP:DTYPE:ROWSxCOLS one of them (64x768, 8x1001,
# 4x16384), so that an op and dtype's programs spread over several processes.
# Prints, per argument, the test's summary line or, where it failed or ran out of time, its
# failing lines; files in $OUT (or ./gpu-extreme). Environment: LIMIT (seconds per process,
# default 400), DEVICE (CLNORM_TEST_DEVICE, default NVIDIA), BUILD (default /tmp/build-extreme).
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
out=${OUT:-$root/gpu-extreme}
build=${BUILD:-/tmp/build-extreme}
mkdir -p "$out"
if [ $# -eq 0 ]; then
  echo "usage: gpu_extreme.sh OP:DTYPE[:ROWSxCOLS] ..." >&2
  exit 2
fi
# shellcheck source=scripts/gpu_build.sh
source "$root/scripts/gpu_build.sh"
TESTS=ON gpu_build "$build" test_numerics || exit 1
for c in "$@"; do
  IFS=: read -r op dt layout <<<"$c"
  (CLNORM_TEST_DEVICE=${DEVICE:-NVIDIA} timeout "${LIMIT:-400}" \
     "$build/tests/test_numerics" extreme "$op" "$dt" ${layout:+"$layout"} >"$out/${c//:/-}.log" 2>&1
   echo "exit status $?" >>"$out/${c//:/-}.log") &
done
wait
rc=0
for c in "$@"; do
  log=$out/${c//:/-}.log
  if grep -q "PASS (0 failures)" "$log"; then
    echo "$c: $(grep 'PASS' "$log" | tail -n 1)"
  else
    rc=1
    echo "$c: NOT PASSED ($(tail -n 1 "$log"; echo); 124: out of time). Lines with failures:"
    grep -v ' 0 failed' "$log" | grep -v '^exit status' | tail -n 8
    echo "  ($(grep -c ' 0 failed' "$log") layouts passed before it stopped)"
  fi
done
exit $rc
