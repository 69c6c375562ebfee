#!/usr/bin/env bash
# One GPU call (carry .device-kit and bis-t0): NVIDIA's PTX and `ptxas -v` of the backward's
# programs for four wide-row calls, in the tree before the strips' chunks (bis-t0: f00f525 unpacked)
# and in this one (scripts/ptx_audit.sh on each build). Files: $OUT/ptx.tar.gz (t0/, t3/: audit.md
# and ptx/*.ptxas.txt).
set -uo pipefail
# shellcheck disable=SC1091 # the kit is carried beside the repository
source .device-kit/setup.sh
root=$PWD
# shellcheck source=scripts/gpu_build.sh
source scripts/gpu_build.sh
rm -rf build-bench
(root=$PWD/bis-t0 gpu_build "$PWD/bis-t0/build-bench" normtune) &
(gpu_build "$PWD/build-bench" normtune) &
wait
for t in t0 t3; do
  nt=$root/build-bench/normtune
  [ "$t" = t0 ] && nt=$root/bis-t0/build-bench/normtune
  NORMTUNE=$nt OUT=$OUT/$t bash scripts/ptx_audit.sh rmsnorm_bwd:bf16:2048x32768 \
    layernorm_bwd:f16:2048x32768 layernorm_bwd:bf16:2048x32768 rmsnorm_bwd:f32:2048x32768 | tail -5
done
cd "$OUT" && tar -czf ptx.tar.gz t0 t3 && rm -rf t0 t3
