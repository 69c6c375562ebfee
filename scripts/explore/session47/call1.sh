#!/usr/bin/env bash
# One GPU call (carry .device-kit), issue 21, about 4-5 minutes warm: (a) the backward scorecard
# of docs/PERFORMANCE.md (its command: bench_gpu.sh, clnorm and the PyTorch peer) into
# $OUT/scorecard, with LayerNorm's 16-bit rows not held in vectors of 4 (f35b69d); (b) every
# variant (normtune tune --strategy exhaustive, up to SECS seconds a shape) of RMSNorm float16 256
# x 65536 (vectors of 4 there too?), LayerNorm float16 2048 x 32768 (the spilling 1024-wide rows)
# and RMSNorm float16 4096 x 4096 ($OUT/space.txt).
set -uo pipefail
out=${OUT:?}
secs=${SECS:-45}
bash scripts/explore/bwd_scorecard.sh
# shellcheck source=scripts/explore/space.sh
source scripts/explore/space.sh
space_build rmsnorm_bwd f16 65536,4096
space_build layernorm_bwd f16 32768
space_tune "$out/space.db" "$secs" rmsnorm_bwd:f16:256x65536 layernorm_bwd:f16:2048x32768 \
  rmsnorm_bwd:f16:4096x4096
space_show "$out/space.db"
