#!/usr/bin/env bash
# Forced variants timed against each other on the GPU machine, one `variant_ab` run (interleaved
# rounds, with the copy kernel in the same rotation) per line of a spec file:
#   OP DTYPE ROWSxCOLS VARIANT...      (VARIANT as variant_ab takes it: auto, copy,
#                                       WG,TPR,VEC,HOLD,STATS[,REDUCE]; '#' starts a comment)
#   bash scripts/gpu_explore.sh SPEC [OUTDIR]     # output: $OUT (or OUTDIR)/explore.txt
# Environment: VARIANT_AB=PATH (default: build-bench/variant_ab, built here), DEVICE (NVIDIA),
# ROUNDS (20).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
spec=${1:?usage: gpu_explore.sh SPEC [OUTDIR]}
out=${OUT:-${2:-.}}
mkdir -p "$out"
ab=${VARIANT_AB:-$root/build-bench/variant_ab}
if [ ! -x "$ab" ]; then
  # shellcheck source=scripts/gpu_build.sh
  source "$root/scripts/gpu_build.sh"
  gpu_build "$root/build-bench" variant_ab
fi
rc=0
while read -r line; do
  line=${line%%#*}
  [ -n "${line// /}" ] || continue
  # shellcheck disable=SC2086 # the line is a list of words
  "$ab" --device "${DEVICE:-NVIDIA}" --rounds "${ROUNDS:-20}" $line 2>&1 | tee -a "$out/explore.txt" || rc=1
done <"$spec"
exit $rc
