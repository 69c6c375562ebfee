#!/usr/bin/env bash
# GPU-machine call (2026-11-29, stop 39): the backward's tiny-row programs (BWD_TINY, never run on a
# GPU before) under test_numerics extreme, then the persistent grid (CLNORM_FIXED_GRID) on NVIDIA's
# forward. From the repository root, carrying .device-kit:  bash scripts/explore/session39/call1.sh
set -uo pipefail
source .device-kit/setup.sh
out=${OUT:-/tmp/out}
mkdir -p "$out"
start=$SECONDS
OUT=$out/extreme LIMIT=200 bash scripts/gpu_extreme.sh "layernorm_bwd:f32:8x1001::tpr=1 " \
  "rmsnorm_bwd:bf16:8x1001::tpr=1 " "layernorm_bwd:bf16:4x16384::wg=1 " \
  "rmsnorm_bwd:f32:4x16384::wg=1 " >"$out/extreme.txt" 2>&1
echo "== extreme: $((SECONDS - start)) s"
grep -v '^--\|^\[' "$out/extreme.txt" | tail -12
start=$SECONDS
OUT=$out/sweep VAR=CLNORM_FIXED_GRID VALUES="0 1" bash scripts/env_sweep.sh \
  --grid 4096x4096,8192x8192,16384x4096,32768x1024,65536x512 \
  --ops layernorm,rmsnorm,add_layernorm,add_rmsnorm --dtypes f32,f16,bf16 >"$out/sweep.txt" 2>&1
echo "== sweep: $((SECONDS - start)) s"
cat "$out/sweep/sweep.md" 2>/dev/null || tail -20 "$out/sweep.txt"
exit 0
