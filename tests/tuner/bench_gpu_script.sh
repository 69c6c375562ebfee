#!/usr/bin/env bash
# scripts/bench_gpu.sh and scripts/compare_peer.py without a GPU: compare_peer.py on this device's
# `normtune bench --grid --json` and a PyTorch peer file written in peer_torch.py's format
# (synthetic times, so every ratio is known), then bench_gpu.sh's normtune part on a small grid
# with the peer left out. Needs python3 (not among scripts/deps.sh's packages): without it, a skip.
source "$(dirname "$0")/common.sh"
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
if ! command -v python3 >/dev/null; then
  echo "SKIP [$TEST_NAME]: python3 is not installed (scripts/compare_peer.py needs it)" >&2
  exit 77
fi

step "compare_peer.py: clnorm next to a peer file in peer_torch.py's format"
expect_rc 0 grid "$NORMTUNE" bench --db "$WORK/none.db" ${DEVICE_ARGS[@]+"${DEVICE_ARGS[@]}"} \
  --grid 64x1024,8x4096 --ops layernorm,rmsnorm,add_rmsnorm --dtypes f32,bf16 --json
cp "$WORK/grid.out" "$WORK/clnorm.json"
# peer_torch.py prints {"op", "impl", "dtype", "rows", "cols", "us", "gbps"} per line, dtypes
# fp32/fp16/bf16; eager takes 20 us and compile 10 us on every shape here (no 8 x 4096 bf16
# compile line: a missing figure must stay missing)
python3 - "$WORK/torch.json" <<'EOF'
import json, sys
with open(sys.argv[1], "w") as f:
    for dtype, size in (("fp32", 4), ("bf16", 2)):
        for rows, cols in ((64, 1024), (8, 4096)):
            for impl, us in (("torch-eager", 20.0), ("torch-compile", 10.0)):
                if (dtype, rows, impl) == ("bf16", 8, "torch-compile"):
                    continue
                for op in ("layernorm", "rmsnorm"):
                    gbps = round(2 * rows * cols * size / (us * 1e-6) / 1e9, 1)
                    print(json.dumps({"op": op, "impl": impl, "dtype": dtype, "rows": rows,
                                      "cols": cols, "us": us, "gbps": gbps}), file=f)
EOF
expect_rc 0 compare python3 "$ROOT/scripts/compare_peer.py" "$WORK/clnorm.json" \
  "$WORK/torch.json" --out "$WORK/combined.json"
head -n 12 "$WORK/compare.out" | sed 's/^/   /'
expect_in "$WORK/compare.out" \
  '^\| op \| dtype \| rows x cols \| clnorm GB/s \| /copy \| eager GB/s' "the table's header"
[[ $(grep -Ec '^\| (layernorm|rmsnorm|add_rmsnorm) \| (f32|bf16) \| [0-9]+ x [0-9]+ \|' \
  "$WORK/compare.out") -eq 12 ]] || fail "want 12 rows in the table"
num='[0-9.]+'
expect_in "$WORK/compare.out" \
  "^\\| add_rmsnorm \\| f32 \\| 64 x 1024 \\| $num \\| $num \\| — \\| — \\| — \\| — \\| pass \\|\$" \
  "an op without a peer has empty peer columns"
expect_in "$WORK/compare.out" \
  "^\\| rmsnorm \\| bf16 \\| 8 x 4096 \\| $num \\| $num \\| $num \\| — \\| ${num}x \\| — \\| pass \\|\$" \
  "a missing compile figure stays missing"
# every ratio and mean, recomputed from the two files
python3 - "$WORK/clnorm.json" "$WORK/combined.json" <<'EOF' || fail "combined.json is wrong"
import json, math, sys
clnorm = [json.loads(l) for l in open(sys.argv[1]) if '"op"' in l]
combined = json.load(open(sys.argv[2]))
assert len(combined["results"]) == len(clnorm) == 12, len(combined["results"])
for row, c in zip(combined["results"], clnorm):
    assert row["clnorm"] == c
    peer = row["op"] in ("layernorm", "rmsnorm")
    if not peer:
        assert row["torch_eager"] is None and row["vs_eager"] is None, row
        continue
    assert abs(row["vs_eager"] - 20.0 / c["us"]) < 1e-9, row
    assert abs(row["torch_eager"]["gbps"] - c["bytes"] / 20e-6 / 1e9) < 1e-6, row
    if row["dtype"] == "bf16" and row["rows"] == 8:
        assert row["torch_compile"] is None and row["vs_compile"] is None, row
    else:
        assert abs(row["vs_compile"] - 10.0 / c["us"]) < 1e-9, row
for m in combined["geomeans"]:
    rows = [c for c in clnorm if (c["op"], c["dtype"]) == (m["op"], m["dtype"])]
    want = math.exp(sum(math.log(c["ratio"]) for c in rows) / len(rows))
    assert abs(m["copy_ratio"] - want) < 1e-9 and m["shapes"] == 2, m
    if m["op"] != "add_rmsnorm":
        want = math.exp(sum(math.log(20.0 / c["us"]) for c in rows) / len(rows))
        assert abs(m["vs_eager"] - want) < 1e-9, m
print("   combined.json: every ratio and geometric mean as recomputed")
EOF

step "bench_json.py: ab_builds.sh's and env_sweep.sh's tables from known times"
AB=$WORK/ab
mkdir -p "$AB"
# two rounds per tree: base 10 and 12 us (median 11), this tree 5 and 6 (median 5.5): ratio 2;
# a shape only the base ran is "missing"; a line that is not JSON is reported and skipped
python3 - "$AB" <<'EOF'
import json, os, sys
out = sys.argv[1]
for side, times in (("base", (10.0, 12.0)), ("head", (5.0, 6.0))):
    for i, us in enumerate(times, 1):
        with open(os.path.join(out, "%s-%d.json" % (side, i)), "w") as f:
            print(json.dumps({"header": "normtune bench --grid", "copy_gbps": 50.0 + i}), file=f)
            print(json.dumps({"op": "layernorm", "dtype": "f32", "rows": 8, "cols": 1024,
                              "us": us, "gbps": 1.0, "check": "pass"}), file=f)
            if side == "base":
                print(json.dumps({"op": "rmsnorm", "dtype": "bf16", "rows": 4, "cols": 64,
                                  "us": 1.0, "check": "pass"}), file=f)
            print("normtune: not a JSON line", file=f)
        with open(os.path.join(out, "bench-%d.json" % i), "w") as f:
            print(json.dumps({"header": "normtune bench --grid", "copy_gbps": 40.0 + i}), file=f)
            print(json.dumps({"op": "layernorm", "dtype": "f32", "rows": 8, "cols": 1024,
                              "us": 3.0 * i, "gbps": 7.0, "check": "pass" if i == 1 else "FAIL"}),
                  file=f)
EOF
expect_rc 0 ab python3 "$ROOT/scripts/bench_json.py" ab "$AB" 2
expect_in "$WORK/ab.out" '^copy GB/s per round: base \[51\.0, 52\.0\], this tree \[51\.0, 52\.0\]$' \
  "the copy bandwidth of each round"
expect_in "$WORK/ab.out" '^\| layernorm \| f32 \| 8 x 1024 \| 11\.00 \| 5\.50 \| 2\.000 \| pass \|$' \
  "the medians and their ratio"
expect_in "$WORK/ab.out" '^\| rmsnorm \| bf16 \| 4 x 64 \| 1\.00 \| - \| - \| missing \|$' \
  "a shape one tree lacks"
expect_in "$WORK/ab.out" '^\| layernorm \| f32 \| 1 \| 2\.000 \| 2\.000 \| 2\.000 \|$' \
  "the geometric mean"
expect_in "$WORK/ab.err" 'base-1\.json:4: not JSON' "a line that is not JSON is reported"
expect_rc 0 sweep python3 "$ROOT/scripts/bench_json.py" sweep "$AB" VAR 1 2
expect_in "$WORK/sweep.out" '^VAR sweep; copy GB/s per value: 1 41\.0, 2 42\.0$' \
  "the sweep's copy bandwidths"
expect_in "$WORK/sweep.out" '^\| layernorm \| f32 \| 8 x 1024 \| 3\.0 \(7\.0\)  \| 6\.0 \(7\.0\) FAIL \|$' \
  "the sweep's row, a failed check shown"

step "bench_gpu.sh on this device: a small grid, no PyTorch"
OUTDIR=$WORK/out
CLNORM_BENCH_SHAPES=64x256,8x1024 CLNORM_BENCH_OPS=layernorm,add_layernorm,rmsnorm_bwd \
  PEER=0 SETUP=0 NORMTUNE=$NORMTUNE DEVICE=${CLNORM_TEST_DEVICE:-} OUT='' \
  expect_rc 0 script bash "$ROOT/scripts/bench_gpu.sh" "$OUTDIR"
for f in clnorm.json clnorm.log compare.md combined.json; do
  [[ -s $OUTDIR/$f ]] || fail "bench_gpu.sh did not write $f"
done
[[ $(grep -c '"check": "pass"' "$OUTDIR/clnorm.json") -eq 18 ]] ||
  fail "want 18 passing results (3 ops x 3 dtypes x 2 shapes) in clnorm.json"
expect_in "$OUTDIR/compare.md" '^18 clnorm results: 18 passed, 0 FAILED, 0 skipped\.$' \
  "compare.md sums up"
expect_in "$OUTDIR/compare.md" 'No PyTorch results were given' "compare.md says the peer is missing"
[[ ! -e $OUTDIR/no-tuning.db ]] || fail "bench_gpu.sh left its empty database behind"
pass
