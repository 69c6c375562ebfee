#!/usr/bin/env bash
# One GPU call (carry .device-kit), issue 21: the heuristic's 16-bit LayerNorm backward in
# vectors of 4 (docs/wip/issue21/ln16-bwd-vec4.patch, in this tree as d20f8f2 had it) against the
# tree without it, 2 rounds ($OUT/ab.md); then the backward scorecard of this tree
# (docs/PERFORMANCE.md's command; $OUT/bwd-compare.md).
set -uo pipefail
out=${OUT:?}
ROUNDS=2 bash scripts/explore/session45/patch_ab.sh -R docs/wip/issue21/ln16-bwd-vec4.patch \
  --grid 65536x512,32768x512,32768x1024,8192x1024,16384x2048,4096x2048,4096x4096,16384x4096,8192x8192,2048x8192,1024x1024 \
  --ops layernorm_bwd,rmsnorm_bwd --dtypes f16,bf16
OUT=$out/bwd CLNORM_BENCH_SHAPES=4096x4096,8192x8192,16384x4096,32768x1024,65536x512,4096x16384,256x65536,1x4096,8x1024,32x2048,128x4096,512x1024,1024x1024 \
  CLNORM_BENCH_OPS=layernorm_bwd,rmsnorm_bwd timeout 150 bash scripts/bench_gpu.sh >"$out/bwd-log.txt" 2>&1
echo "bwd rc=$?"
cp "$out/bwd/compare.md" "$out/bwd-compare.md" 2>/dev/null
rm -rf "$out/bwd" "$out/bwd-log.txt"
grep -E "_bwd \| (f16|bf16)" "$out/bwd-compare.md" | head -60
