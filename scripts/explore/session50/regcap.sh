#!/usr/bin/env bash
# One GPU call (carry .device-kit), issues 20 and 21, about 6 minutes: what occupancy buys the
# kernels whose register counts hold it down, by capping NVIDIA's registers a work-item
# (CLNORM_NV_MAXRREG=N: -cl-nv-maxrregcount=N on every program; ptxas spills past the cap).
#  1. ptx_audit.sh without a cap and at 32 and 40: registers, spills and stack of the heuristic's
#     programs for 16-bit LayerNorm and RMSNorm of 512 and 1024 columns (issue 20: LayerNorm's
#     0.63-0.74 of copy there against RMSNorm's 0.84-0.88) and the 16-bit LayerNorm backward of
#     4096 columns (issue 21: 105-195 registers, one or two groups of 256 a compute unit). The
#     audit's ptxas sees the cap only where NVIDIA's compiler writes it into the PTX (.maxnreg,
#     counted below); where it does not, its counts are the uncapped ones and the sweep's times
#     alone show the cap.
#  2. env_sweep.sh over the cap (unset, 32, 40, 48, 64) on those shapes, checked against the
#     float64 reference. Prediction: forward 16-bit LayerNorm 512-1024 columns gains 1.05-1.2x at
#     40-48 if occupancy holds it; the backward loses where the cap spills (its rows are held).
# Files: $OUT/audit-*.md, $OUT/sweep.md, $OUT/all.tar.gz.
set -uo pipefail
out=${OUT:?}
root=$(cd "$(dirname "$0")/../../.." && pwd)
cd "$root" || exit 1
# shellcheck disable=SC1091 # the kit is carried beside the repository
source .device-kit/setup.sh
# shellcheck source=scripts/gpu_build.sh
source scripts/gpu_build.sh
gpu_build "$root/build-bench" normtune || exit 1
cases=(layernorm:f16:16384x512 rmsnorm:f16:16384x512 layernorm:bf16:16384x1024
  rmsnorm:bf16:16384x1024 layernorm_bwd:f16:4096x4096 layernorm_bwd:bf16:8192x8192)
for cap in none 32 40; do
  (
    [ "$cap" = none ] || export CLNORM_NV_MAXRREG=$cap
    OUT=$out/audit-$cap timeout 150 bash scripts/ptx_audit.sh "${cases[@]}" >/dev/null 2>&1
  )
  cp "$out/audit-$cap/audit.md" "$out/audit-$cap.md" 2>/dev/null
  echo "== registers, cap $cap"
  cut -d'|' -f2-4,8-10 "$out/audit-$cap.md" 2>/dev/null | tail -n +3
  echo "programs whose PTX carries .maxnreg: $(grep -l maxnreg "$out/audit-$cap"/ptx/*.ptx 2>/dev/null | wc -l)"
done
OUT=$out/sweep VAR=CLNORM_NV_MAXRREG VALUES="default 32 40 48 64" timeout 300 \
  bash scripts/env_sweep.sh --grid 16384x512,16384x1024,4096x4096,8192x8192 \
  --ops layernorm,rmsnorm,layernorm_bwd --dtypes f16,bf16
cp "$out/sweep/sweep.md" "$out/sweep.md" 2>/dev/null
(cd "$out" && tar -czf all.tar.gz audit-none audit-32 audit-40 sweep 2>/dev/null &&
  rm -rf audit-none audit-32 audit-40 sweep)
