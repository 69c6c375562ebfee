#!/usr/bin/env bash
# One GPU call (carry .device-kit), issue 20, about 5 minutes: why
# LayerNorm's forward runs slower than RMSNorm's with the same variant (H200 tuning database:
# float16 2048 x 8192 at 256 x 256 x 8 x 4, LayerNorm 30.1 us against RMSNorm 22.3; at 16384 x 512
# with the heuristic's 128 x 32 x 8 x 2 14.3 against 11.3). The suspect: LayerNorm's held rows
# preload beta with gamma before the reductions (cl/common.cl WEIGHTS_DECL, WPRE), 16 registers
# more than RMSNorm's, which may cost a group a compute unit. Arms (session50/arms.sh makes the
# patched trees from this checkout):
#   base  this checkout
#   nob   docs/wip/issue20/ln-beta-late.patch: beta read in the output loop, gamma preloaded
#   rst   docs/wip/issue20/fwd-restrict.patch: gamma and beta `restrict` (the output loop's loads
#         of a slot may then move above the stores of the slot before)
# Prediction: nob 1.1-1.3x on LayerNorm and add_layernorm where the registers cross a step of
# occupancy (read it from the audits), 1.00x on RMSNorm (untouched); rst 1.00-1.05x.
# Then ptx_audit.sh of each arm's heuristic programs (no built-in table) on the LayerNorm and
# RMSNorm float16 shapes: registers, loads. Files in $OUT: arms.md, audit-ARM.md, all.tar.gz.
set -uo pipefail
out=${OUT:?}
root=$(cd "$(dirname "$0")/../../.." && pwd)
cd "$root" || exit 1
export CLNORM_NO_BUILTIN=1
mkdir -p "$out/arms"
trees=$(mktemp -d)
OUT=$out/arms ARM_TREES=$trees ROUNDS=${ROUNDS:-2} \
  ARMS="base=. nob=docs/wip/issue20/ln-beta-late.patch rst=docs/wip/issue20/fwd-restrict.patch" \
  timeout "${ARMS_LIMIT:-420}" bash scripts/explore/session50/arms.sh \
  --grid 16384x512,65536x512,32768x1024,2048x8192,8192x8192,4096x4096 \
  --ops layernorm,add_layernorm,rmsnorm --dtypes f16,bf16,f32
cp "$out/arms/arms.md" "$out/arms.md" 2>/dev/null
for a in base nob rst; do
  tree=$trees/$a
  [ $a != base ] || tree=$root
  OUT=$out/audit-$a NORMTUNE=$tree/build-bench/normtune timeout 90 \
    bash scripts/ptx_audit.sh layernorm:f16:16384x512 rmsnorm:f16:16384x512 \
    layernorm:f16:2048x8192 rmsnorm:f16:2048x8192 layernorm:f16:4096x4096 \
    rmsnorm:f16:4096x4096 >/dev/null 2>&1
  cp "$out/audit-$a/audit.md" "$out/audit-$a.md" 2>/dev/null
  echo "== registers, $a"
  cut -d'|' -f2-5,8 "$out/audit-$a.md" 2>/dev/null | tail -n +3
done
tar -czf "$out/all.tar.gz" -C "$out" arms "audit-base" "audit-nob" "audit-rst" 2>/dev/null
rm -rf "$out/arms" "$out"/audit-base "$out"/audit-nob "$out"/audit-rst
