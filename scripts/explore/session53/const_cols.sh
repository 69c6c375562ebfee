#!/usr/bin/env bash
# One GPU call (carry .device-kit), issue 20, about 6 minutes: the whole-row forward programs
# built for the call's row length and buffers (docs/wip/issue20/fwd-const-cols.patch: -DCOLS and
# -DFLAGS, the program keyed by its options; on unless CLNORM_FWD_CONST=0), as Triton's kernels
# are for their shapes. Reading torch.compile's code beside clnorm's (docs/wip/issue20/s53/
# triton-analysis.md) puts a quarter of LayerNorm float16's instructions at 65536 x 512 in the
# control that run-time cols and flags need: bounds and tail tests around the held vectors, the
# paths with and without gamma and beta, a divide by cols. The held rows converted once
# (session 53) cut the conversions but not that, and moved 65536 x 512 by 1.01-1.03x.
#  1. test_ops forward on NVIDIA with the patch (float64 reference, NaN-poisoned outputs; every
#     shape of the sweep gets its own program).
#  2. Arms (session50/arms.sh), 3 rounds: base (this checkout) and const (the patch), the
#     plain ops and the fused adds, every dtype, 512-8192 columns.
#  3. ptx_audit.sh of each arm's programs: registers (the PTX in all.tar.gz, for SASS counts
#     offline with scripts/sass_counts.py).
# Prediction: 16-bit LayerNorm at 512-1024 columns 1.05-1.12x (fewer instructions an element,
# and no more registers than base: the constants free the registers of cols and flags), RMSNorm
# 1.02-1.05x, float32 1.00-1.03x, 4096-8192 columns 1.00-1.03x; if 65536 x 512 moves less than
# 2% again, the instructions are not LayerNorm's limit there and the next suspect is the rows a
# warp (Triton runs 2 rows a warp at 512 columns, 32 elements a thread; clnorm 1 row, 16).
# Files in $OUT: arms.md, audit-ARM.md, NVIDIA-forward.log, all.tar.gz.
set -uo pipefail
out=${OUT:?}
root=$(cd "$(dirname "$0")/../../.." && pwd)
cd "$root" || exit 1
export CLNORM_NO_BUILTIN=1
# shellcheck source=scripts/gpu_build.sh
source "$root/scripts/gpu_build.sh"
trees=$(mktemp -d)
gpu_tree_copy "$trees/test" docs/wip/issue20/fwd-const-cols.patch &&
  TEST_LIMIT=${TEST_LIMIT:-240} gpu_test_ops "$trees/test" "$out" forward NVIDIA
mkdir -p "$out/arms"
OUT=$out/arms ARM_TREES=$trees ROUNDS=${ROUNDS:-3} \
  ARMS="base=. const=docs/wip/issue20/fwd-const-cols.patch" \
  timeout "${ARMS_LIMIT:-240}" bash scripts/explore/session50/arms.sh \
  --grid 16384x512,65536x512,16384x1024,32768x1024,4096x4096,16384x4096,8192x8192 \
  --ops layernorm,rmsnorm,add_layernorm,add_rmsnorm --dtypes f16,bf16,f32
cp "$out/arms/arms.md" "$out/arms.md" 2>/dev/null && tail -n 12 "$out/arms.md"
for a in base const; do
  tree=$trees/$a
  [ $a != base ] || tree=$root
  OUT=$out/audit-$a NORMTUNE=$tree/build-bench/normtune timeout 60 \
    bash scripts/ptx_audit.sh layernorm:f16:16384x512 rmsnorm:f16:16384x512 \
    layernorm:f16:65536x512 layernorm:f16:32768x1024 rmsnorm:f16:32768x1024 \
    layernorm:bf16:65536x512 layernorm:f32:65536x512 layernorm:f16:4096x4096 >/dev/null 2>&1
  cp "$out/audit-$a/audit.md" "$out/audit-$a.md" 2>/dev/null
  echo "== registers, $a"
  cut -d'|' -f2-4,8 "$out/audit-$a.md" 2>/dev/null | tail -n +3
done
tar -czf "$out/all.tar.gz" -C "$out" arms audit-base audit-const 2>/dev/null
rm -rf "$out/arms" "$out"/audit-base "$out"/audit-const
