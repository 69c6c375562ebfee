#!/usr/bin/env bash
# How long NVIDIA's OpenCL takes to build one candidate program, bf16 against f16 (stop 40: the
# tuning run's prebuild of LayerNorm bf16 did not finish in 380 s). normtune tune --budget builds
# each candidate when it first measures it, one at a time: the gaps between evaluation lines are
# the build times. From the repository root, carrying .device-kit:
#   SECS=25 bash scripts/explore/session40/build_time.sh
set -uo pipefail
source .device-kit/setup.sh
out=${OUT:-/tmp/out}
mkdir -p "$out"
# shellcheck disable=SC2034 # gpu_build.sh builds under root
root=$PWD
source scripts/gpu_build.sh
gpu_build build-bench normtune >"$out/build.txt" 2>&1 || { tail -20 "$out/build.txt"; exit 1; }
stamp='import sys, time
t = time.time()
for line in sys.stdin:
    sys.stdout.write("%7.2f %s" % (time.time() - t, line))
    sys.stdout.flush()'
export CLNORM_NO_BINARY_CACHE=1 CUDA_CACHE_DISABLE=1
for dt in bf16 f16; do
  timeout -s INT $((${SECS:-25} + 5)) build-bench/normtune tune --device NVIDIA --db "/tmp/bt-$dt.db" \
    --ops layernorm --dtypes "$dt" --cols 4096 --rows 2048 --strategy random --budget "${SECS:-25}" 2>&1 |
    python3 -u -c "$stamp" >"$out/bt-$dt.txt"
  echo "== $dt: $(grep -c ': ok\|: slow\|: fail\|: unsupported' "$out/bt-$dt.txt") evaluations"
  grep 'wg=' "$out/bt-$dt.txt" | head -12 | cut -c1-110
done
