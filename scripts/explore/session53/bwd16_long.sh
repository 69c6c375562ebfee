#!/usr/bin/env bash
# One GPU call (carry .device-kit), issues 21 and 22, about 4 minutes: LayerNorm's 16-bit backward
# of 16385-32768 columns on NVIDIA (docs/wip/issue21/bwd16-ln-long.patch, src/variants.c): held
# by 512 work-items at most, so those rows are not held (256 x 4, the rule for rows not held) in
# place of the heuristic's 1024 x 4 x 8 held row. From the backward's tune (session 53,
# docs/wip/issue22/README.md): at 32768 columns the held row lost to the unheld 256 x 4 at every
# row class timed (8, 128 and 16384 rows: 1.18x, 2.5x, 1.10-1.42x; A/Bs at 64-256 rows 2.0-3.3x).
# The patch is the same at every row count (tests/test_plan_rules.c): the 128 x 8 that won at
# 1024-16384 rows (1.35-1.65x over the held row) is the tuned table's, per row class.
# This call checks the rule through the dispatcher on shapes the tune never timed (20480, 24576
# columns) and on its own shapes, with controls the rule leaves alone (49152-65536 columns,
# 4096 x 16384, 16 x 4194304, RMSNorm).
# Arms (session50/arms.sh, every output checked against the float64 reference), 2 rounds.
# Prediction: 32768 columns 1.1-3x (most at 64-256 rows), 20480-24576 1.05-2x, the controls
# 1.00x. A shape of 20480-24576 below 1.0x: the rule's lower bound moves up.
# Files in $OUT: arms.md, all.tar.gz.
set -uo pipefail
out=${OUT:?}
root=$(cd "$(dirname "$0")/../../.." && pwd)
cd "$root" || exit 1
export CLNORM_NO_BUILTIN=1
mkdir -p "$out/arms"
OUT=$out/arms ROUNDS=${ROUNDS:-2} ARMS="base=. long=docs/wip/issue21/bwd16-ln-long.patch" \
  timeout "${ARMS_LIMIT:-300}" bash scripts/explore/session50/arms.sh \
  --grid 8x32768,128x20480,128x32768,256x24576,1024x20480,2048x24576,4096x32768,16384x32768,1024x49152,4096x65536,256x65536,4096x16384,16x4194304 \
  --ops layernorm_bwd,rmsnorm_bwd --dtypes f16,bf16
cp "$out/arms/arms.md" "$out/arms.md" 2>/dev/null && cat "$out/arms.md"
tar -czf "$out/all.tar.gz" -C "$out" arms 2>/dev/null
rm -rf "$out/arms"
