#!/usr/bin/env bash
# One GPU call (carry .device-kit and the arms' trees): several builds of clnorm timed in turn,
# ROUNDS rounds (arm 1, arm 2, ..., arm 1, ...), `normtune bench --grid` through each build's
# dispatcher (checked against the float64 reference), the heuristics (no database, no built-in
# table). The arms are trees unpacked beside the repository (`git archive COMMIT | tar -x -C
# bis-NAME`), "." for this checkout.
#   ARMS="t0=bis-t0 t3=. t4=bis-t4" bash scripts/explore/session50/arms.sh [BENCH OPTIONS]
# Files in $OUT: bench-ARM-ROUND.json and a table per shape (arms.md): each arm's median of its
# rounds and its ratio to the first arm's (first / arm: above 1, the arm is faster).
set -uo pipefail
root=$(cd "$(dirname "$0")/../../.." && pwd)
out=${OUT:?}
rounds=${ROUNDS:-2}
export CLNORM_NO_BUILTIN=1
read -r -a arms <<<"${ARMS:?set ARMS to NAME=TREE words}"
# shellcheck source=scripts/gpu_build.sh
source "$root/scripts/gpu_build.sh"
for a in "${arms[@]}"; do
  tree=$(cd "$root/${a#*=}" && pwd)
  (root=$tree gpu_build "$tree/build-bench" normtune >"$out/build-${a%%=*}.log" 2>&1 ||
    echo "arms: ${a%%=*} failed to build") &
done
wait
for ((i = 1; i <= rounds; i++)); do
  for a in "${arms[@]}"; do
    name=${a%%=*}
    tree=$(cd "$root/${a#*=}" && pwd)
    rm -f "$out/none.db"
    "$tree/build-bench/normtune" bench --device "${DEVICE:-NVIDIA}" --db "$out/none.db" --json "$@" \
      >"$out/bench-$name-$i.json" 2>"$out/bench-$name-$i.log" || echo "arms: $name round $i failed"
  done
done
rm -f "$out/none.db"
python3 - "$out" "$rounds" "${arms[@]%%=*}" <<'PY' | tee "$out/arms.md"
import json, os, statistics, sys
out, rounds, names = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
times, checks = {}, {}
for n in names:
    for i in range(1, rounds + 1):
        path = os.path.join(out, "bench-%s-%d.json" % (n, i))
        if not os.path.exists(path):
            continue
        for line in open(path):
            r = json.loads(line)
            if "op" not in r:
                continue
            k = (r["op"], r["dtype"], r["rows"], r["cols"])
            times.setdefault(k, {}).setdefault(n, []).append(r["us"])
            if r.get("check") != "pass":
                checks[k] = "%s %s" % (n, r.get("check"))
print("| op | dtype | rows x cols | " + " | ".join("%s us" % n for n in names) + " | " +
      " | ".join("%s/%s" % (names[0], n) for n in names[1:]) + " | checks |")
print("| --- | --- | --- |" + " ---: |" * (2 * len(names) - 1) + " --- |")
for k in sorted(times):
    med = {n: statistics.median(v) for n, v in times[k].items()}
    cells = ["%.2f" % med[n] if n in med else "-" for n in names]
    ratios = ["%.3f" % (med[names[0]] / med[n]) if n in med and names[0] in med else "-"
              for n in names[1:]]
    print("| %s | %s | %d x %d | %s | %s | %s |" % (k[0], k[1], k[2], k[3], " | ".join(cells),
          " | ".join(ratios), checks.get(k, "pass")))
PY
