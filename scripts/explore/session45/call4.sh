#!/usr/bin/env bash
# One GPU call (carry .device-kit), issue 21: every variant of the backward on the shapes the
# scorecard has furthest from copy, with the 512- and 1024-wide ones (`normtune tune --strategy
# exhaustive` into $OUT/space.db, up to SECS seconds a shape; `normtune show` in space.txt):
# RMSNorm float16 32768 x 1024 and 65536 x 512, LayerNorm and RMSNorm float32 4096 x 16384,
# LayerNorm float32 32768 x 1024.
set -uo pipefail
out=${OUT:?}
secs=${SECS:-45}
# shellcheck source=scripts/explore/space.sh
source scripts/explore/space.sh
space_build rmsnorm_bwd f16 1024,512
space_build layernorm_bwd,rmsnorm_bwd f32 16384,1024
space_tune "$out/space.db" "$secs" rmsnorm_bwd:f16:32768x1024 rmsnorm_bwd:f16:65536x512 \
  layernorm_bwd:f32:4096x16384 rmsnorm_bwd:f32:4096x16384 layernorm_bwd:f32:32768x1024
space_show "$out/space.db"
