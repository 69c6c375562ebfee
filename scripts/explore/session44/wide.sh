#!/usr/bin/env bash
# One GPU call (carry .device-kit): issue 21's question after wg_cap found that NVIDIA's OpenCL
# (driver 580) reports CL_KERNEL_WORK_GROUP_SIZE 256 for every kernel, even one of a single
# multiply with no attributes, yet enqueues and finishes it at 512 and 1024 work-items: do
# clnorm's kernels of 512 and 1024 work-items give right outputs there, and how fast are they?
# Run on 2026-11-30 with a patch that let a variant past the reported size; since 28e6d20 the
# library does so on NVIDIA's platform (CLNORM_REQD_WG). Exhaustive tunes into databases of their own (every output checked against the float64
# reference as always: a wrong one is recorded as such), the backward (float16, 4096 rows of
# 4096 and 16384 columns, as space-2026-11-30) and the forward (float16, 2048 x 65536).
# $OUT: h200-wide-bwd.db.gz, show-h200-wide-bwd.txt, and the same of h200-wide-fwd.
set -uo pipefail
out=${OUT:?}
tune() { # CARD LIMIT BUILD-OPTIONS -- TUNE-OPTIONS
  local card=$1 limit=$2 b=$3
  shift 3
  mkdir -p "$out/$card"
  CARD=$card CALL_LIMIT=$limit PACK_SECONDS=0 BUILD_PROCS=8 BUILD="$b" BUILD_LIMIT=150 \
    OUT=$out/$card bash scripts/tune_gpu.sh "$@" >"$out/$card/log.txt" 2>&1
  echo "== $card: rc=$?"
  tail -5 "$out/$card/log.txt"
  mv "$out/$card/$card.db.gz" "$out/$card/show-$card.txt" "$out/"
  rm -rf "${out:?}/$card"
}
tune h200-wide-bwd 300 "--ops layernorm_bwd,rmsnorm_bwd --dtypes f16 --cols 4096,16384" \
  --ops layernorm_bwd,rmsnorm_bwd --dtypes f16 --cols 4096,16384 --rows 4096 --strategy exhaustive
tune h200-wide-fwd 230 "--ops layernorm --dtypes f16 --cols 65536" \
  --ops layernorm --dtypes f16 --cols 65536 --rows 2048 --strategy exhaustive
ls -la "$out"
