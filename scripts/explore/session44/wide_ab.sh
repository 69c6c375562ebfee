#!/usr/bin/env bash
# One GPU call (carry .device-kit, ab-base = the commit before the heuristic took 512 and 1024
# work-items, unpacked): the A/B of that heuristic through the dispatcher (tables off), forward
# and backward, the shapes it changes and controls it leaves alone. $OUT/fwd/ab.md, $OUT/bwd/ab.md.
set -uo pipefail
out=${OUT:?}
r=${ROUNDS:-2}
OUT=$out/fwd BASE=ab-base ROUNDS=$r bash scripts/ab_builds.sh \
  --grid 8x65536,128x65536,2048x65536,2048x32768,8192x32768,2048x20000,4096x12288 \
  --ops layernorm,rmsnorm --dtypes f32,f16,bf16 >"$out/fwd.log" 2>&1
echo "fwd rc=$?"
OUT=$out/bwd BASE=ab-base ROUNDS=$r bash scripts/ab_builds.sh \
  --grid 256x16384,2048x12288,4096x16384,8192x16384,2048x32768,4096x8192 \
  --ops layernorm_bwd,rmsnorm_bwd --dtypes f32,f16,bf16 >"$out/bwd.log" 2>&1
echo "bwd rc=$?"
for d in fwd bwd; do
  sed -n '/^| op | dtype | rows x cols/,$p' "$out/$d/ab.md"
  rm -f "$out/$d"/*.log "$out/$d"/*.json
done
