#!/usr/bin/env bash
# One GPU call (carry .device-kit), issue 21: the heuristic's 16-bit LayerNorm backward in
# vectors of 4 (docs/wip/issue21/ln16-bwd-vec4.patch, in this tree) against the tree without it
# (a copy made here with the patch reversed): scripts/ab_builds.sh, 2 rounds ($OUT/ab.md); then
# the backward scorecard of this tree (docs/PERFORMANCE.md's command; $OUT/bwd-compare.md).
set -uo pipefail
root=$PWD
out=${OUT:?}
base=$(mktemp -d)/ab-base
mkdir -p "$base"
tar -c --exclude=./build-tune --exclude=./.device-kit --exclude='./build-*' --exclude=./.git . |
  tar -x -C "$base"
patch -R -p1 -d "$base" <docs/wip/issue21/ln16-bwd-vec4.patch >/dev/null || exit 1
BASE=$base ROUNDS=2 timeout 330 bash scripts/ab_builds.sh \
  --grid 65536x512,32768x512,32768x1024,8192x1024,16384x2048,4096x2048,4096x4096,16384x4096,8192x8192,2048x8192,1024x1024 \
  --ops layernorm_bwd,rmsnorm_bwd --dtypes f16,bf16 >"$out/ab-log.txt" 2>&1
echo "ab rc=$?"
cd "$root" || exit 1
OUT=$out/bwd CLNORM_BENCH_SHAPES=4096x4096,8192x8192,16384x4096,32768x1024,65536x512,4096x16384,256x65536,1x4096,8x1024,32x2048,128x4096,512x1024,1024x1024 \
  CLNORM_BENCH_OPS=layernorm_bwd,rmsnorm_bwd timeout 150 bash scripts/bench_gpu.sh >"$out/bwd-log.txt" 2>&1
echo "bwd rc=$?"
cp "$out/bwd/compare.md" "$out/bwd-compare.md" 2>/dev/null
cd "$out" && tar -czf all.tar.gz ./*.json ab-log.txt bwd bwd-log.txt 2>/dev/null
rm -rf ./*.json ab-log.txt bwd bwd-log.txt
cat ab.md
grep -E "_bwd \| (f16|bf16)" bwd-compare.md | head -60
