#!/usr/bin/env bash
# One GPU call (carry .device-kit), about 7 minutes: (a) issue 22's table of LayerNorm and
# RMSNorm re-exported with the wide candidates (docs/tuned/h200-2026-11-30.json, in
# src/builtin_table.h of this tree) checked with the table alone (session42/verify_builtin.sh,
# no database) on the tuned grid and the held-out shapes, at most VERIFY_S seconds (330); (b) in
# what is left of LIMIT (450) seconds, issue 21: RMSNorm's 16-bit backward of rows not held in
# vectors of 4 as LayerNorm's (docs/wip/issue21/rms16-unheld-vec4.patch; the exhaustive space of
# call 1: float16 256 x 65536 256 x 256 x 4 93.8 us against the heuristic's x 8, 126 us in the
# scorecard) timed against the tree without it, LayerNorm the control.
set -uo pipefail
out=${OUT:?}
limit=${LIMIT:-450}
mkdir -p "$out/v"
OUT=$out/v timeout "${VERIFY_S:-330}" bash scripts/explore/session42/verify_builtin.sh >"$out/verify-log.txt" 2>&1
echo "verify rc=$? after $SECONDS s"
tail -30 "$out/verify-log.txt"
mv "$out"/v/verify-builtin-*.txt "$out/" 2>/dev/null
rm -rf "$out/v"
left=$((limit - SECONDS))
if [ "$left" -lt 120 ]; then
  echo "A/B: $left s left, not begun"
  exit 0
fi
OUT=$out/ab ROUNDS=${ROUNDS:-2} timeout "$left" bash scripts/explore/session45/patch_ab.sh \
  docs/wip/issue21/rms16-unheld-vec4.patch --grid 64x65536,256x65536,1024x65536,128x131072,1024x49152 \
  --ops rmsnorm_bwd,layernorm_bwd --dtypes f16,bf16
echo "A/B rc=$? after $SECONDS s"
mv "$out"/ab/ab.md "$out"/ab/all.tar.gz "$out/" 2>/dev/null
rm -rf "$out/ab"
tail -30 "$out/ab.md" 2>/dev/null
