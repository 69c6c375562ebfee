#!/usr/bin/env bash
# One GPU call (carry .device-kit and the arms' trees): several builds of clnorm timed in turn,
# ROUNDS rounds (arm 1, arm 2, ..., arm 1, ...), `normtune bench --grid` through each build's
# dispatcher (checked against the float64 reference), the heuristics (no database, no built-in
# table). An arm is a tree unpacked beside the repository (`git archive COMMIT | tar -x -C
# bis-NAME`), "." for this checkout, or a patch (a path ending in .patch): this checkout with the
# patch applied, copied under ARM_TREES (default: a temporary folder) as NAME.
#   ARMS="t0=bis-t0 t3=. t4=bis-t4" bash scripts/explore/session50/arms.sh [BENCH OPTIONS]
#   ARMS="base=. new=docs/wip/issue20/ln-beta-late.patch" bash scripts/explore/session50/arms.sh ...
# Files in $OUT: bench-ARM-ROUND.json and a table per shape (arms.md): each arm's median of its
# rounds and its ratio to the first arm's (first / arm: above 1, the arm is faster), and the
# geometric means per op and dtype (scripts/bench_json.py arms).
set -uo pipefail
root=$(cd "$(dirname "$0")/../../.." && pwd)
out=${OUT:?}
rounds=${ROUNDS:-2}
export CLNORM_NO_BUILTIN=1
read -r -a arms <<<"${ARMS:?set ARMS to NAME=TREE words}"
# shellcheck source=scripts/gpu_build.sh
source "$root/scripts/gpu_build.sh"
trees=()
made=${ARM_TREES:-$(mktemp -d)}
for a in "${arms[@]}"; do
  if [[ ${a#*=} == *.patch ]]; then
    gpu_tree_copy "$made/${a%%=*}" "$root/${a#*=}" || exit 1
    trees+=("$made/${a%%=*}")
  else
    trees+=("$(cd "$root/${a#*=}" && pwd)")
  fi
done
for j in "${!arms[@]}"; do
  (root=${trees[$j]} gpu_build "${trees[$j]}/build-bench" normtune \
    >"$out/build-${arms[$j]%%=*}.log" 2>&1 || echo "arms: ${arms[$j]%%=*} failed to build") &
done
wait
for ((i = 1; i <= rounds; i++)); do
  for j in "${!arms[@]}"; do
    name=${arms[$j]%%=*}
    tree=${trees[$j]}
    rm -f "$out/none.db"
    "$tree/build-bench/normtune" bench --device "${DEVICE:-NVIDIA}" --db "$out/none.db" --json "$@" \
      >"$out/bench-$name-$i.json" 2>"$out/bench-$name-$i.log" || echo "arms: $name round $i failed"
  done
done
rm -f "$out/none.db"
python3 "$root/scripts/bench_json.py" arms "$out" "$rounds" "${arms[@]%%=*}" | tee "$out/arms.md"
