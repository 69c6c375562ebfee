#!/usr/bin/env bash
# GPU-machine calls for the NVIDIA fault of the fused adds in 16 bits on rows of every magnitude
# (docs/DEVICES.md, "A call to a `noinline` function that faults"). From the repository root:
#   bash scripts/explore/nvidia_fault/call.sh          # the check of the fix, one call
# Each case is a process of its own (a fault ends the process): test_numerics extreme of the fused
# adds in every layout (first and last variant of each family), then every variant of one, two and
# four work-items a row at 64 x 768 of a vector width (the ones that faulted), with the last program's PTX.
set -uo pipefail
source .device-kit/setup.sh
mkdir -p "${OUT:-/tmp/out}"
cases=(add_layernorm:f16 add_layernorm:bf16 add_rmsnorm:f16 add_rmsnorm:bf16)
cases+=("add_layernorm:f16:64x768::tpr=1 vec=16" "add_layernorm:bf16:64x768::tpr=1 vec=16"
       "add_rmsnorm:f16:64x768::tpr=1 vec=8" "add_rmsnorm:bf16:64x768::tpr=1 vec=8"
       "add_layernorm:f16:64x768::tpr=2 vec=8" "add_rmsnorm:bf16:64x768::tpr=4 vec=8")
OUT=/tmp/gm PTX=1 PTX_LAST=1 BUILD=/tmp/b-main LIMIT=290 bash scripts/gpu_extreme.sh "${cases[@]}" \
  >/tmp/s-main.txt 2>&1
grep -v '^ptxas\|bytes stack\|^==\|^    \|Compile time\|bytes gmem' /tmp/s-main.txt
echo "### failures"
grep -h 'FAIL' /tmp/gm/*.log | sed 's/ x={.*tail=/ tail=/' | head -20
echo "### the last program of each process (rare_row: a function of its own where listed)"
for f in /tmp/gm/ptx-*.txt; do
  echo "# $f"
  grep -E '^==|Used|Function properties' "$f"
done
exit 0
