#!/usr/bin/env bash
# One GPU call (carry .device-kit), issue 21 and 20:
#   1. the backward's L2 prefetch of the rows a group takes next (CLNORM_BWD_PREFETCH=1) against
#      none, in the same build: scripts/env_sweep.sh twice ($OUT/pf-1, pf-2: sweep.md);
#   2. scripts/ptx_audit.sh of the backward programs with and without it (registers, spills);
#   3. the forward scorecard (docs/PERFORMANCE.md's command; $OUT/fwd).
# Everything is packed into $OUT/all.tar.gz; summary.md holds the tables.
set -uo pipefail
root=$PWD
out=${OUT:?}
# shellcheck disable=SC1091
source .device-kit/setup.sh
# shellcheck source=scripts/gpu_build.sh
source scripts/gpu_build.sh
gpu_build "$root/build-bench" normtune >/dev/null 2>&1 || { echo "build failed"; exit 1; }
grid=${GRID:-4096x4096,8192x8192,16384x4096,32768x1024,65536x512,4096x16384,256x65536,2048x32768,1024x1024}
for r in 1 2; do
  OUT=$out/pf-$r VAR=CLNORM_BWD_PREFETCH VALUES="0 1" timeout 170 bash scripts/env_sweep.sh \
    --grid "$grid" --ops layernorm_bwd,rmsnorm_bwd --dtypes f32,f16,bf16 >/dev/null 2>&1
  echo "sweep $r rc=$?"
done
cases="layernorm_bwd:f16:4096x4096 layernorm_bwd:f16:8192x8192 layernorm_bwd:f16:2048x32768
  rmsnorm_bwd:f16:4096x4096 layernorm_bwd:f32:4096x4096 rmsnorm_bwd:bf16:32768x1024"
for pf in 0 1; do
  # shellcheck disable=SC2086
  CLNORM_BWD_PREFETCH=$pf OUT=$out/ptx-$pf timeout 60 bash scripts/ptx_audit.sh $cases \
    >/dev/null 2>&1
  echo "ptx $pf rc=$?"
done
OUT=$out/fwd CLNORM_BENCH_SHAPES=4096x4096,8192x8192,16384x4096,32768x1024,65536x512,4096x16384,256x65536,16x4194304 \
  CLNORM_BENCH_OPS=layernorm,rmsnorm,add_layernorm,add_rmsnorm timeout 230 bash scripts/bench_gpu.sh \
  >"$out/fwd-log.txt" 2>&1
echo "fwd rc=$?"
{
  for r in 1 2; do echo "## prefetch sweep $r"; cat "$out/pf-$r/sweep.md" 2>/dev/null; done
  for pf in 0 1; do echo "## ptx audit, CLNORM_BWD_PREFETCH=$pf"; cat "$out/ptx-$pf/audit.md" 2>/dev/null; done
  echo "## forward scorecard"; cat "$out/fwd/compare.md" 2>/dev/null
} >"$out/summary.md"
cd "$out" && tar -czf all.tar.gz pf-1 pf-2 ptx-0 ptx-1 fwd fwd-log.txt 2>/dev/null
rm -rf pf-1 pf-2 ptx-0 ptx-1 fwd fwd-log.txt
grep -A200 "## prefetch sweep" summary.md | head -130
