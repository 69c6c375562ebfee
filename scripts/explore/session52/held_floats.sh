#!/usr/bin/env bash
# One GPU call (carry .device-kit), issue 20, about 7 minutes: the plain forward ops' held rows
# converted to floats once (docs/wip/issue20/fwd-held-floats.patch, cl/forward.cl HF; LayerNorm's
# as d = x - pivot), so that the statistics' passes and the output read registers instead of
# converting the 16-bit bits (and subtracting the pivot) again in each. NVIDIA's sm_90 code of
# float16 LayerNorm 16384 x 512 converts every element three times and subtracts the pivot three
# times (docs/wip/issue20/README.md, session 52): about 15 instructions an element against
# RMSNorm's 6, which at 4 instructions a clock on 132 compute units is near the issue time of the
# copy's bandwidth. The same operations on the same values: the same bits.
#  1. test_ops forward on NVIDIA with the patch (float64 reference, NaN-poisoned outputs).
#  2. Arms (session50/arms.sh), 3 rounds: base (this checkout), hf32 (the patch: rows of up to 32
#     elements a work-item), hf16 (up to 16, fewer registers), hf64 (up to 64: the 4096-column
#     rows too, at 32 registers more a work-item there).
#  3. ptx_audit.sh of each arm's heuristic programs: registers.
# Prediction: 16-bit LayerNorm at 512-1024 columns 1.08-1.15x, RMSNorm 1.02-1.05x, float32
# LayerNorm 1.0-1.05x (no conversions, two subtractions an element saved), 4096 x 4096 and 8192 x
# 8192 1.00x in hf16 and hf32 (their held rows are over 32 elements: untouched); hf64 there
# 0.95-1.1x (fewer groups a compute unit against shorter passes). Files in $OUT: arms.md,
# audit-ARM.md, NVIDIA-forward.log, all.tar.gz.
set -uo pipefail
out=${OUT:?}
root=$(cd "$(dirname "$0")/../../.." && pwd)
cd "$root" || exit 1
export CLNORM_NO_BUILTIN=1
# shellcheck source=scripts/gpu_build.sh
source "$root/scripts/gpu_build.sh"
trees=$(mktemp -d)
gpu_tree_copy "$trees/test" docs/wip/issue20/fwd-held-floats.patch &&
  gpu_test_ops "$trees/test" "$out" forward NVIDIA
mkdir -p "$out/arms"
OUT=$out/arms ARM_TREES=$trees ROUNDS=${ROUNDS:-3} \
  ARMS="base=. hf32=docs/wip/issue20/fwd-held-floats.patch hf16=docs/wip/issue20/fwd-held-floats-16.patch hf64=docs/wip/issue20/fwd-held-floats-64.patch" \
  timeout "${ARMS_LIMIT:-300}" bash scripts/explore/session50/arms.sh \
  --grid 16384x512,65536x512,16384x1024,32768x1024,4096x4096,2048x8192,8192x8192 \
  --ops layernorm,rmsnorm --dtypes f16,bf16,f32
cp "$out/arms/arms.md" "$out/arms.md" 2>/dev/null && cat "$out/arms.md"
for a in base hf32 hf16 hf64; do
  tree=$trees/$a
  [ $a != base ] || tree=$root
  OUT=$out/audit-$a NORMTUNE=$tree/build-bench/normtune timeout 60 \
    bash scripts/ptx_audit.sh layernorm:f16:16384x512 rmsnorm:f16:16384x512 \
    layernorm:f16:32768x1024 rmsnorm:f16:32768x1024 layernorm:bf16:65536x512 \
    layernorm:f32:65536x512 layernorm:f16:4096x4096 >/dev/null 2>&1
  cp "$out/audit-$a/audit.md" "$out/audit-$a.md" 2>/dev/null
  echo "== registers, $a"
  cut -d'|' -f2-4,8 "$out/audit-$a.md" 2>/dev/null | tail -n +3
done
tar -czf "$out/all.tar.gz" -C "$out" arms audit-base audit-hf32 audit-hf16 audit-hf64 2>/dev/null
rm -rf "$out/arms" "$out"/audit-base "$out"/audit-hf32 "$out"/audit-hf16 "$out"/audit-hf64
