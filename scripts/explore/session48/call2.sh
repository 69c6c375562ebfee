#!/usr/bin/env bash
# One GPU call (carry .device-kit), issue 21, about 5-6 minutes warm: the column-strip backward
# (docs/wip/issue21/column-strip: CLNORM_BWD_STRIP=1 turns it on; the base tree has no such
# switch). (a) `ptxas -v` of the programs the dispatcher builds with the patch applied, the strip
# ones included ($OUT/audit.md); (b) patch_ab.sh, the patch against the tree without it, the
# switch set for both (ignored by the base): $OUT/ab.md, all.tar.gz.
set -uo pipefail
out=${OUT:?}
patch_file=docs/wip/issue21/column-strip/column-strip.patch
export CLNORM_BWD_STRIP=1
patch -p1 --forward <"$patch_file" >/dev/null || { echo "call2: the patch does not apply"; exit 1; }
OUT=$out/ptx timeout 150 bash scripts/ptx_audit.sh layernorm_bwd:bf16:2048x32768 \
  rmsnorm_bwd:bf16:2048x32768 layernorm_bwd:f16:4096x16384 layernorm_bwd:f32:2048x32768 \
  >"$out/ptx-log.txt" 2>&1
echo "ptx_audit rc=$?"
cp "$out/ptx/audit.md" "$out/" 2>/dev/null && rm -rf "$out/ptx" build-bench
patch -R -p1 <"$patch_file" >/dev/null || { echo "call2: the patch does not reverse"; exit 1; }
grep -E "strip|spill" "$out/audit.md" | head -20
# patch_ab.sh leaves ab.md and all.tar.gz in $OUT and prints ab.md
ROUNDS=${ROUNDS:-2} timeout "${AB_LIMIT:-360}" bash scripts/explore/session45/patch_ab.sh \
  "$patch_file" --grid 2048x32768,1024x32768,4096x16384,256x65536 \
  --ops layernorm_bwd,rmsnorm_bwd --dtypes f16,bf16,f32
echo "A/B rc=$?"
