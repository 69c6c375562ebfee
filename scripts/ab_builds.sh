#!/usr/bin/env bash
# Two builds of clnorm timed against each other in one command: the tree at BASE (an earlier
# commit unpacked there, e.g. `mkdir ab-base && git archive COMMIT | tar -x -C ab-base`) and this
# checkout. Each builds normtune (Release); then `normtune bench --grid SHAPES --json` of the base
# and of this tree run in turn, ROUNDS times each (A B A B ...), so that drift of the machine
# falls on both; the summary gives per op, dtype and shape the median of each build's rounds,
# their ratio (base time / this tree's time: above 1, this tree is faster), both checks, and the
# geometric mean of the ratios per op and dtype.
#
#   BASE=ab-base bash scripts/ab_builds.sh [BENCH OPTIONS]
#   e.g. ... --grid 4096x4096,65536x512 --ops layernorm,layernorm_bwd --dtypes f32,bf16
#
# Files in $OUT (or ./build-ab): base-N.json, head-N.json, ab.md (also printed). Environment:
# BASE (required), ROUNDS (default 3), DEVICE (default NVIDIA; empty: normtune's default device;
# cpu: PoCL), KIT (the device kit, sourced when nvidia-smi exists), BASE_ENV and HEAD_ENV
# (NAME=VALUE words set for that side's runs only). BASE may be this checkout itself: then the
# two sides are one build under BASE_ENV and HEAD_ENV, e.g. a switch off against on:
#   BASE=. BASE_ENV=CLNORM_BWD_STRIP=0 HEAD_ENV=CLNORM_BWD_STRIP=1 bash scripts/ab_builds.sh ...
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
# the builds' heuristics against each other: their shipped tables off, unless the caller set
# CLNORM_NO_BUILTIN
export CLNORM_NO_BUILTIN=${CLNORM_NO_BUILTIN-1}
base=$(cd "${BASE:?set BASE to the tree of the earlier build}" && pwd)
out=${OUT:-$root/build-ab}
rounds=${ROUNDS:-3}
mkdir -p "$out"
if command -v nvidia-smi >/dev/null 2>&1; then
  # shellcheck disable=SC1091 # the kit is carried to the machine beside the repository
  source "${KIT:-$root/.device-kit}/setup.sh"
fi
# shellcheck source=scripts/gpu_build.sh
source "$root/scripts/gpu_build.sh"
gpu_build "$root/build-bench" normtune
if [ "$base" != "$root" ]; then
  root_saved=$root
  root=$base gpu_build "$base/build-bench" normtune
  root=$root_saved
fi
read -r -a base_env <<<"${BASE_ENV:-}"
read -r -a head_env <<<"${HEAD_ENV:-}"
device=${DEVICE-NVIDIA}
rc=0
for ((i = 1; i <= rounds; i++)); do
  for side in base head; do
    tree=$root
    side_env=("${head_env[@]}")
    if [ "$side" = base ]; then
      tree=$base
      side_env=("${base_env[@]}")
    fi
    echo "== round $i: $side ${side_env[*]}" >&2
    rm -f "$out/none.db"
    env "${side_env[@]}" "$tree/build-bench/normtune" bench ${device:+--device "$device"} --db "$out/none.db" --json "$@" \
      >"$out/$side-$i.json" 2>"$out/$side-$i.log" || rc=1
  done
done
rm -f "$out/none.db"
python3 "$(dirname "$0")/bench_json.py" ab "$out" "$rounds" | tee "$out/ab.md"
exit $rc
