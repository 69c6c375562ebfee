#!/usr/bin/env bash
# One GPU call (carry .device-kit), issue 20, about 7 minutes warm: the forward's held rows with
# the next block's rows loaded during this block's work (docs/wip/issue20/fwd-pipe.patch,
# CLNORM_FWD_PIPE=1, cl/forward.cl PIPE; off by default). The 16-bit rows of 512-1024 columns run
# at 0.72-0.77 of copy (LayerNorm) where each work-item holds 32-64 bytes: it loads them, waits,
# reduces and writes, and its memory idles through everything after the load. With PIPE a group
# strides over the blocks of a grid of CLNORM_FWD_GPC groups a compute unit (default: 2048 / wg,
# at most 8) and has the next block's loads in flight while it works.
#  1. A copy of this checkout with the patch applied (gpu_tree_copy); test_ops pipe on NVIDIA and
#     PoCL 5 (float64 reference, NaN-poisoned outputs; one group a compute unit, so every group
#     takes several blocks).
#  2. In that copy, off against on in one build (its ab_builds.sh with BASE the copy), 2 rounds
#     each: the default groups a compute unit, then 4 a compute unit.
#  3. ptx_audit.sh of the pipelined programs (registers: each work-item holds two rows' slices).
# Prediction: 16-bit LayerNorm at 512-1024 columns 1.15-1.3x, RMSNorm 1.05-1.1x, 4096 x 4096
# 1.05-1.15x (no half-empty second wave), 8192 x 8192 and 16384 x 4096 1.0x (bandwidth-bound),
# float32 1.0-1.05x. This checkout stays as it is. Files: $OUT/ab-gpcN.md, audit-pipe.md,
# the test logs, all.tar.gz.
set -uo pipefail
out=${OUT:?}
root=$(cd "$(dirname "$0")/../../.." && pwd)
cd "$root" || exit 1
# shellcheck source=scripts/gpu_build.sh
source "$root/scripts/gpu_build.sh"
tree=$(mktemp -d)/pipe
gpu_tree_copy "$tree" docs/wip/issue20/fwd-pipe.patch || exit 1
TEST_LIMIT=${TEST_LIMIT:-200} gpu_test_ops "$tree" "$out" pipe NVIDIA,cpu
grid=16384x512,65536x512,32768x1024,16384x1024,4096x4096,2048x8192,8192x8192,16384x4096
for gpc in 0 4; do
  head_env=CLNORM_FWD_PIPE=1
  [ "$gpc" = 0 ] || head_env="$head_env CLNORM_FWD_GPC=$gpc"
  mkdir -p "$out/ab-gpc$gpc"
  BASE=$tree BASE_ENV='' HEAD_ENV=$head_env OUT=$out/ab-gpc$gpc ROUNDS=${ROUNDS:-2} \
    KIT=$root/.device-kit timeout "${AB_LIMIT:-150}" bash "$tree/scripts/ab_builds.sh" \
    --grid "$grid" --ops layernorm,rmsnorm,add_layernorm --dtypes f16,bf16,f32 >/dev/null 2>&1
  echo "== A/B off against CLNORM_FWD_PIPE=1, groups a compute unit ${gpc/#0/default} (rc=$?)"
  cp "$out/ab-gpc$gpc/ab.md" "$out/ab-gpc$gpc.md" 2>/dev/null && cat "$out/ab-gpc$gpc.md"
done
CLNORM_NO_BUILTIN=1 CLNORM_FWD_PIPE=1 OUT=$out/audit-pipe NORMTUNE=$tree/build-bench/normtune \
  timeout 90 bash scripts/ptx_audit.sh layernorm:f16:16384x512 rmsnorm:f16:16384x512 \
  layernorm:f16:32768x1024 layernorm:f16:2048x8192 layernorm:f16:4096x4096 \
  layernorm:bf16:65536x512 >/dev/null 2>&1
cp "$out/audit-pipe/audit.md" "$out/audit-pipe.md" 2>/dev/null
echo "== registers, pipe"
cut -d'|' -f2-5,8 "$out/audit-pipe.md" 2>/dev/null | tail -n +3
(cd "$out" && tar -czf all.tar.gz ab-gpc0 ab-gpc4 audit-pipe ./*.log 2>/dev/null &&
  rm -rf ab-gpc0 ab-gpc4 audit-pipe ./*.log)
