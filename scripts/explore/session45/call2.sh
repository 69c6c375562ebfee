#!/usr/bin/env bash
# One GPU call (carry .device-kit), issue 21:
#   1. the backward's L2 prefetch, both placements (CLNORM_BWD_PREFETCH=1: after the current rows'
#      loads, 2: before them) against none, in one build: scripts/env_sweep.sh twice
#      ($OUT/pf-1, pf-2: sweep.md);
#   2. scripts/ptx_audit.sh of the backward programs with 2 (registers, spills);
#   3. every variant of LayerNorm's float16 backward on 8192 x 8192, 32768 x 1024 and 65536 x 512
#      (`normtune tune --strategy exhaustive` into $OUT/space.db; `normtune show` in space.txt).
# Everything is packed into $OUT/all.tar.gz; summary.md holds the tables.
set -uo pipefail
root=$PWD
out=${OUT:?}
# shellcheck disable=SC1091
source .device-kit/setup.sh
# shellcheck source=scripts/gpu_build.sh
source scripts/gpu_build.sh
gpu_build "$root/build-bench" normtune >/dev/null 2>&1 || { echo "build failed"; exit 1; }
nt=$root/build-bench/normtune
grid=${GRID:-4096x4096,8192x8192,16384x4096,32768x1024,65536x512,4096x16384,2048x32768,1024x1024}
for r in 1 2; do
  OUT=$out/pf-$r VAR=CLNORM_BWD_PREFETCH VALUES="0 1 2" timeout 150 bash scripts/env_sweep.sh \
    --grid "$grid" --ops layernorm_bwd,rmsnorm_bwd --dtypes f32,f16,bf16 >/dev/null 2>&1
  echo "sweep $r rc=$?"
done
cases="layernorm_bwd:f16:4096x4096 layernorm_bwd:f16:8192x8192 layernorm_bwd:f16:2048x32768
  rmsnorm_bwd:f16:8192x8192 layernorm_bwd:f32:4096x4096 layernorm_bwd:f32:16384x4096
  rmsnorm_bwd:f32:4096x16384 rmsnorm_bwd:bf16:32768x1024"
# shellcheck disable=SC2086
CLNORM_BWD_PREFETCH=2 OUT=$out/ptx-2 timeout 60 bash scripts/ptx_audit.sh $cases >/dev/null 2>&1
echo "ptx rc=$?"
export CLNORM_NO_BINARY_CACHE=0
for i in 1 2 3 4 5 6 7 8; do
  timeout 90 "$nt" build --device NVIDIA --ops layernorm_bwd --dtypes f16 --cols 8192,1024,512 \
    --part $i/8 --quiet >/dev/null 2>&1 &
done
wait
for s in 8192x8192 32768x1024 65536x512; do
  timeout 70 "$nt" tune --device NVIDIA --db "$out/space.db" --ops layernorm_bwd --dtypes f16 \
    --cols "${s#*x}" --rows "${s%x*}" --strategy exhaustive >>"$out/space-log.txt" 2>&1
  echo "space $s rc=$?"
done
"$nt" show --device NVIDIA --db "$out/space.db" >"$out/space.txt" 2>&1
{
  for r in 1 2; do echo "## prefetch sweep $r"; cat "$out/pf-$r/sweep.md" 2>/dev/null; done
  echo "## ptx audit, CLNORM_BWD_PREFETCH=2"; cat "$out/ptx-2/audit.md" 2>/dev/null
  echo "## space"; cat "$out/space.txt"
} >"$out/summary.md"
gzip -f "$out/space.db"
cd "$out" && tar -czf all.tar.gz pf-1 pf-2 ptx-2 space-log.txt 2>/dev/null
rm -rf pf-1 pf-2 ptx-2 space-log.txt
grep -A100 "## prefetch sweep 2" summary.md
