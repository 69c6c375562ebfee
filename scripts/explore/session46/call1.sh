#!/usr/bin/env bash
# One GPU call (carry .device-kit), issue 21: (a) session45/call6.sh (the float32 backward of
# 513-1024 columns at 32 work-items a row against main) into $OUT/ab; (b) every variant of the
# backward (normtune tune --strategy exhaustive, up to SECS seconds a shape) on the scorecard's
# shapes furthest from copy that no earlier space run reached: LayerNorm float16 4096 x 16384 and
# 256 x 65536, RMSNorm float32 256 x 65536, LayerNorm float16 4096 x 4096 ($OUT/space.txt).
set -uo pipefail
out=${OUT:?}
secs=${SECS:-45}
mkdir -p "$out/ab"
OUT=$out/ab bash scripts/explore/session45/call6.sh >"$out/ab-call6.txt" 2>&1
echo "call6 rc=$?"
tail -40 "$out/ab/ab.md" 2>/dev/null
# shellcheck source=scripts/explore/space.sh
source scripts/explore/space.sh
space_build layernorm_bwd f16 16384,65536,4096
space_build rmsnorm_bwd f32 65536
space_tune "$out/space.db" "$secs" layernorm_bwd:f16:4096x16384 layernorm_bwd:f16:256x65536 \
  rmsnorm_bwd:f32:256x65536 layernorm_bwd:f16:4096x4096
space_show "$out/space.db"
