#!/usr/bin/env bash
# One GPU call (carry .device-kit), issue 21, about 8 minutes warm: the column strips' rows' sums in
# chunks over several groups (clnorm__bwd_strip_chunks, in main since the sixth session of
# 2026-11-30; docs/wip/issue21/strip-chunks.patch is src/ and cl/ from f00f525 to 52eb934: that
# change, with review D1's shared row-lane sums and tail columns, which move no bytes, and the row
# lanes' local-memory guard, which changes no path of the heuristic's variants).
#  A. The change against the tree without it, both with the strips forced on (CLNORM_BWD_STRIP=1),
#     patch_ab.sh -R: few long rows (64 x 32768, 128 x 131072, 256 x 65536), where the strips' first
#     kernel had one group a row and lost to the split rows; 512 x 20480 (float32: two chunks at 256
#     work-items inside the rule's shapes) and 2048 x 32768 (one chunk: the control, expect 1.00x).
#  B. In this tree, the strips forced on against the default (the split rows on those shapes),
#     ab_builds.sh with BASE=. and HEAD_ENV: whether the rule (512 rows or more) should take fewer
#     rows now, and whether 16 x 4194304's split rows keep their lead.
# Files: $OUT/a/ab.md, $OUT/b/ab.md (and their all.tar.gz / JSONs).
set -uo pipefail
out=${OUT:?}
root=$(cd "$(dirname "$0")/../../.." && pwd)
mkdir -p "$out/a" "$out/b"
echo "== A: the chunks against one group a row, strips forced on both sides"
CLNORM_BWD_STRIP=1 OUT=$out/a ROUNDS=${ROUNDS:-2} timeout "${A_LIMIT:-300}" \
  bash "$root/scripts/explore/session45/patch_ab.sh" -R "$root/docs/wip/issue21/strip-chunks.patch" \
  --grid 64x32768,128x131072,256x65536,512x20480,2048x32768 \
  --ops layernorm_bwd,rmsnorm_bwd --dtypes f16,bf16,f32
echo "A rc=$?"
echo "== B: this tree, strips forced on (head) against the default (base)"
(cd "$root" && BASE=. BASE_ENV='' HEAD_ENV=CLNORM_BWD_STRIP=1 OUT=$out/b ROUNDS=${ROUNDS:-2} \
  timeout "${B_LIMIT:-220}" bash scripts/ab_builds.sh \
  --grid 64x32768,128x131072,256x65536,16x4194304 \
  --ops layernorm_bwd,rmsnorm_bwd --dtypes f16,bf16,f32)
echo "B rc=$?"
(cd "$out/b" && tar -czf all.tar.gz ./*.json ./*.log 2>/dev/null && rm -f ./*.json ./*.log)
