#!/usr/bin/env bash
# One GPU call (carry .device-kit), issues 21 and 22, about 4 minutes: LayerNorm's 16-bit backward
# of more than 16384 columns on NVIDIA (docs/wip/issue21/bwd16-ln-long.patch, src/variants.c):
# the row not held, 256 x 4 below 1024 rows and 128 x 8 from 1024 rows on, in place of the
# heuristic's 1024 x 4 x 8 held row (16385-32768 columns) and 256 x 4 (more). From normtune's
# A/Bs of the backward's tune (session 53, docs/wip/issue22/README.md): at 32768 columns the
# held row lost 2.0-3.3x at 64-256 rows and 1.35-1.65x at 1024-16384; 65536 columns 1.15-1.31x
# at 1024-4096 rows. This call checks the rule through the dispatcher on shapes the tune never
# timed (20480, 24576, 49152 columns) and on its own shapes, with controls the rule leaves alone.
# Arms (session50/arms.sh, every output checked against the float64 reference), 2 rounds.
# Prediction: 32768 columns 1.3-3x, 20480-24576 1.1-2x (the held row's registers cost there
# too), 49152-65536 at 1024+ rows 1.1-1.3x, the controls (4096 x 16384, 16 x 4194304, RMSNorm,
# float32) 1.00x. A shape of 20480-24576 below 1.0x: the rule's lower bound moves up.
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
