#!/usr/bin/env bash
# One GPU call (carry .device-kit), issue 20, about 7 minutes warm: LayerNorm's held rows with
# one-pass statistics, docs/wip/issue20/ln-onepass.patch (CLNORM_LN_ONEPASS=1, cl/forward.cl
# LN_HELD_1P: one reduction of the pair of sums in place of two one after the other; off by
# default). It stays a patch until it is measured: an edit of cl/forward.cl or cl/common.cl
# changes the forward family's kernel hash, which would make issue 22's tuning database stale.
#  1. The patch applied here; test_ops onepass on NVIDIA (the warp vote runs only there) and on
#     PoCL 5, float64 reference, NaN-poisoned outputs.
#  2. In that tree, the switch on against off in one build (ab_builds.sh with BASE=. and
#     HEAD_ENV), 3 rounds: the short 16-bit rows where the variant space's best is 0.63-0.74 of
#     copy (16384 x 512, 16384 x 1024; docs/wip/issue20/README.md), the scorecard's shapes, the
#     fused add. Prediction: 16-bit 512-1024 columns 1.1-1.3x (RMSNorm, one reduction, runs 1.33x
#     LayerNorm's speed there), 4096-16384 columns 1.0x (bandwidth-bound), float32 1.0-1.05x.
# The patch is reverted at the end. Files: $OUT/ab.md, all.tar.gz, the test logs.
set -uo pipefail
out=${OUT:?}
root=$(cd "$(dirname "$0")/../../.." && pwd)
cd "$root" || exit 1
patch_file=docs/wip/issue20/ln-onepass.patch
git apply "$patch_file" 2>/dev/null || patch -p1 --forward <"$patch_file" >/dev/null ||
  { echo "call3: $patch_file does not apply"; exit 1; }
rm -rf build-bench build-tests # built by another tree before: the patch adds a source line
# shellcheck source=scripts/gpu_build.sh
source "$root/scripts/gpu_build.sh"
gpu_test_ops "$root" "$out" onepass NVIDIA,cpu
BASE=. BASE_ENV='' HEAD_ENV=CLNORM_LN_ONEPASS=1 OUT=$out ROUNDS=${ROUNDS:-3} \
  timeout "${AB_LIMIT:-360}" bash scripts/ab_builds.sh \
  --grid 16384x512,16384x1024,4096x4096,8192x8192,32768x1024,65536x512,4096x16384 \
  --ops layernorm,add_layernorm --dtypes f16,bf16,f32
echo "A/B rc=$?"
patch -R -p1 <"$patch_file" >/dev/null || echo "call3: the patch did not reverse"
rm -rf build-bench build-tests
(cd "$out" && tar -czf all.tar.gz ./*.json ./*.log 2>/dev/null && rm -f ./*.json ./*.log)
