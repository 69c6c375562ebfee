#!/usr/bin/env bash
# Issue 25's forward half on the GPU machine, in one call: correctness first, then the cost.
# From the repository root, with the patch applied and main before it unpacked in ab-base:
#   git apply docs/wip/issue25/forward-split.patch   (here, before the call)
#   source .device-kit/setup.sh && bash docs/wip/issue25/gpu.sh        (the call; carry ab-base)
# 1. builds test_numerics and runs `test_numerics extreme OP` for the four forward ops on NVIDIA,
#    at once (NVIDIA's compiler takes most of the time, on the CPU's 16 cores), EXT_S seconds
#    each at most; prints each op's last line;
# 2. times main (BASE) against this tree, ROUNDS rounds, AB_S seconds at most, and prints the
#    per-shape table (bench_json.py reads the rounds that finished).
# Files in $OUT (default ./gpu-issue25).
set -uo pipefail
out=${OUT:-./gpu-issue25}
rounds=${ROUNDS:-2}
mkdir -p "$out"
if ! { cmake -S . -B /tmp/bt -DCMAKE_BUILD_TYPE=Release >"$out/build.log" 2>&1 &&
       cmake --build /tmp/bt -j"$(nproc)" --target test_numerics >>"$out/build.log" 2>&1; }; then
  tail -n 30 "$out/build.log"
  exit 1
fi
for op in layernorm rmsnorm add_layernorm add_rmsnorm; do
  CLNORM_TEST_DEVICE=NVIDIA timeout "${EXT_S:-150}" /tmp/bt/tests/test_numerics extreme "$op" \
    >"$out/extreme-$op.log" 2>&1 &
done
wait
for op in layernorm rmsnorm add_layernorm add_rmsnorm; do
  echo "extreme $op: $(grep -c ' 0 failed' "$out/extreme-$op.log") lines without failures;" \
       "$(grep -v ' 0 failed' "$out/extreme-$op.log" | tail -n 3 | tr '\n' ' ')"
done
OUT=$out/ab BASE=${BASE:-ab-base} ROUNDS=$rounds timeout "${AB_S:-300}" bash scripts/ab_builds.sh \
  --grid 4096x4096,32768x1024,65536x512,4096x16384,256x65536,16x4194304 \
  --ops layernorm,rmsnorm,add_layernorm,add_rmsnorm --dtypes f32,f16,bf16 >"$out/ab.log" 2>&1
python3 scripts/bench_json.py ab "$out/ab" "$rounds"
