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
# cpu: PoCL), KIT (the device kit, sourced when nvidia-smi exists).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
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
root_saved=$root
root=$base gpu_build "$base/build-bench" normtune
root=$root_saved
device=${DEVICE-NVIDIA}
rc=0
for ((i = 1; i <= rounds; i++)); do
  for side in base head; do
    tree=$root
    [ "$side" = base ] && tree=$base
    echo "== round $i: $side" >&2
    rm -f "$out/none.db"
    "$tree/build-bench/normtune" bench ${device:+--device "$device"} --db "$out/none.db" --json "$@" \
      >"$out/$side-$i.json" 2>"$out/$side-$i.log" || rc=1
  done
done
rm -f "$out/none.db"
python3 - "$out" "$rounds" <<'PY' | tee "$out/ab.md"
import json, math, os, statistics, sys
out, rounds = sys.argv[1], int(sys.argv[2])
runs = {"base": {}, "head": {}}
copy = {"base": [], "head": []}
for side in runs:
    for i in range(1, rounds + 1):
        path = os.path.join(out, "%s-%d.json" % (side, i))
        if not os.path.exists(path):
            continue
        for line in open(path):
            try:
                r = json.loads(line)
            except ValueError:
                continue
            if "copy_gbps" in r and "op" not in r:
                copy[side].append(r["copy_gbps"])
            if "op" not in r or r.get("us") is None:
                continue
            key = (r["op"], r["dtype"], r["rows"], r["cols"])
            runs[side].setdefault(key, []).append((r["us"], r.get("check", r.get("outcome", ""))))
print("copy GB/s per round: base %s, this tree %s\n" % (copy["base"], copy["head"]))
print("| op | dtype | rows x cols | base us | this tree us | base / this | checks |")
print("| --- | --- | --- | ---: | ---: | ---: | --- |")
ratios = {}
for key in sorted(set(runs["base"]) | set(runs["head"])):
    b, h = runs["base"].get(key, []), runs["head"].get(key, [])
    if not b or not h:
        print("| %s | %s | %d x %d | %s | %s | - | missing |" % (key[0], key[1], key[2], key[3],
              "-" if not b else "%.2f" % statistics.median(u for u, _ in b),
              "-" if not h else "%.2f" % statistics.median(u for u, _ in h)))
        continue
    mb, mh = statistics.median(u for u, _ in b), statistics.median(u for u, _ in h)
    checks = sorted(set(c for _, c in b + h))
    ratios.setdefault((key[0], key[1]), []).append(mb / mh)
    print("| %s | %s | %d x %d | %.2f | %.2f | %.3f | %s |" % (key[0], key[1], key[2], key[3], mb,
          mh, mb / mh, ",".join(checks)))
print("\n| op | dtype | shapes | geometric mean base / this | min | max |")
print("| --- | --- | ---: | ---: | ---: | ---: |")
for k in sorted(ratios):
    r = ratios[k]
    g = math.exp(sum(math.log(x) for x in r) / len(r))
    print("| %s | %s | %d | %.3f | %.3f | %.3f |" % (k[0], k[1], len(r), g, min(r), max(r)))
PY
exit $rc
