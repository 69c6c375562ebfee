#!/usr/bin/env bash
# One GPU call (carry .device-kit), issue 21: every variant of the backward on the shapes the
# scorecard has furthest from copy, with the 512- and 1024-wide ones (`normtune tune --strategy
# exhaustive` into $OUT/space.db, up to SECS seconds a shape; `normtune show` in space.txt):
# RMSNorm float16 32768 x 1024 and 65536 x 512, LayerNorm and RMSNorm float32 4096 x 16384,
# LayerNorm float32 32768 x 1024.
set -uo pipefail
root=$PWD
out=${OUT:?}
secs=${SECS:-45}
# shellcheck disable=SC1091
source .device-kit/setup.sh
# shellcheck source=scripts/gpu_build.sh
source scripts/gpu_build.sh
gpu_build "$root/build-bench" normtune >/dev/null 2>&1 || { echo "build failed"; exit 1; }
nt=$root/build-bench/normtune
export CLNORM_NO_BINARY_CACHE=0
build() { # ops dtypes cols: 8 processes of normtune build
  for i in 1 2 3 4 5 6 7 8; do
    timeout 60 "$nt" build --device NVIDIA --ops "$1" --dtypes "$2" --cols "$3" --part $i/8 \
      --quiet >/dev/null 2>&1 &
  done
  wait
}
build rmsnorm_bwd f16 1024,512
build layernorm_bwd,rmsnorm_bwd f32 16384,1024
for c in rmsnorm_bwd:f16:32768x1024 rmsnorm_bwd:f16:65536x512 layernorm_bwd:f32:4096x16384 \
  rmsnorm_bwd:f32:4096x16384 layernorm_bwd:f32:32768x1024; do
  IFS=: read -r op dt s <<<"$c"
  timeout "$secs" "$nt" tune --device NVIDIA --db "$out/space.db" --ops "$op" --dtypes "$dt" \
    --cols "${s#*x}" --rows "${s%x*}" --strategy exhaustive >>"$out/space-log.txt" 2>&1
  echo "space $c rc=$?"
done
"$nt" show --device NVIDIA --db "$out/space.db" >"$out/space.txt" 2>&1
gzip -f "$out/space.db"
cat "$out/space.txt"
