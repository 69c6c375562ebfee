#!/usr/bin/env bash
# `normtune bench --grid`: every op x dtype x shape through the dispatcher, each checked against
# the float64 reference and timed, one JSON object per line (--json) or a table; large matrices
# are checked on a sample of rows; a shape whose buffers the device cannot hold is skipped with a
# message, never silently.
source "$(dirname "$0")/common.sh"
NONE=$WORK/none.db # no tuning database: the dispatcher's heuristic
bench() { # NAME ARGS...: normtune bench on the device under test; must exit 0
  local name=$1
  shift
  expect_rc 0 "$name" "$NORMTUNE" bench --db "$NONE" ${DEVICE_ARGS[@]+"${DEVICE_ARGS[@]}"} "$@"
}
# field NAME LINE: the JSON value of NAME in LINE (numbers, null, or a string without quotes)
field() { sed -n "s/.*\"$1\": \\(\"[^\"]*\"\\|[^,}]*\\).*/\\1/p" <<<"$2" | tr -d '"'; }

step "two small shapes, every op and dtype (the defaults of --grid), JSON"
bench json --grid 64x1024,8x4096 --json
expect_in "$WORK/json.out" '^\{"header": "normtune bench --grid", "device": ' "a header line"
[[ $(grep -c '^{"device": ' "$WORK/json.out") -eq 36 ]] ||
  fail "want 36 results (6 ops x 3 dtypes x 2 shapes): $(grep -c '^{"device": ' "$WORK/json.out")"
for op in layernorm rmsnorm add_layernorm add_rmsnorm layernorm_bwd rmsnorm_bwd; do
  for dtype in f32 f16 bf16; do
    for shape in "64 1024" "8 4096"; do
      # shellcheck disable=SC2086 # "ROWS COLS" into $1 and $2
      set -- $shape
      line=$(grep "\"op\": \"$op\", \"dtype\": \"$dtype\", \"rows\": $1, \"cols\": $2," \
        "$WORK/json.out" || true)
      [[ -n $line ]] || fail "no result for $op $dtype $1 x $2"
      [[ $(field check "$line") == pass ]] || fail "$op $dtype $1 x $2 did not pass: $line"
      [[ $(field rows_checked "$line") == "$1" ]] ||
        fail "$op $dtype $1 x $2: not every row checked"
      for f in us event_us gbps ratio wall_us max_err err_tol bytes; do
        v=$(field $f "$line")
        [[ $v =~ ^[0-9.e+-]+$ ]] || fail "$op $dtype $1 x $2: $f is '$v': $line"
      done
      [[ $(field variant "$line") == wg=* && $(field why "$line") == heuristic ]] ||
        fail "$op $dtype $1 x $2: variant or why missing: $line"
    done
  done
done
# bytes: each input read once, each output written once (f16: 2 bytes an element)
line=$(grep '"op": "add_layernorm", "dtype": "f16", "rows": 64, "cols": 1024,' "$WORK/json.out")
want=$((4 * 64 * 1024 * 2 + 2 * 1024 * 2 + 2 * 64 * 4)) # x res sum y; gamma beta; mean rstd
[[ $(field bytes "$line") == "$want" ]] ||
  fail "add_layernorm f16: bytes $(field bytes "$line"), want $want"
line=$(grep '"op": "layernorm_bwd", "dtype": "bf16", "rows": 8, "cols": 4096,' "$WORK/json.out")
want=$((3 * 8 * 4096 * 2 + 3 * 4096 * 2 + 2 * 8 * 4)) # dy x dx; gamma dgamma dbeta; mean rstd
[[ $(field bytes "$line") == "$want" ]] ||
  fail "layernorm_bwd bf16: bytes $(field bytes "$line"), want $want"
expect_in "$WORK/json.err" '^normtune: \[36/36\] ' "progress on stderr"
echo "   36 results, all pass"

step "a large matrix is checked on 64 rows spread over it; the table"
bench table --grid 2048x2304 --ops layernorm,add_rmsnorm,rmsnorm_bwd --dtypes bf16
expect_in "$WORK/table.out" '64 rows spread evenly' "the header says how rows are sampled"
for op in layernorm add_rmsnorm rmsnorm_bwd; do
  expect_in "$WORK/table.out" "^$op +bf16 +2048 +2304 .* pass " "$op bf16 2048 x 2304 passes"
done
expect_in "$WORK/table.out" '^3 results: 3 passed, 0 FAILED, 0 skipped' "the summary line"
bench sample --grid 2048x2304 --ops rmsnorm --dtypes f16 --json
line=$(grep '"op": "rmsnorm"' "$WORK/sample.out")
[[ $(field rows_checked "$line") == 64 && $(field wall_us "$line") == null ]] ||
  fail "2048 x 2304 (4.7M elements): want 64 rows checked and no wall time: $line"

step "a shape no device holds is skipped with a message"
bench huge --grid 65536x4194304,8x256 --ops layernorm --dtypes f32 --json
line=$(grep '"rows": 65536' "$WORK/huge.out")
[[ $(field check "$line") == skipped ]] || fail "65536 x 4194304 was not skipped: $line"
expect_in "$WORK/huge.out" '"reason": "layernorm f32 65536 x 4194304: one matrix is 1048576 MiB' \
  "the skip names the size"
expect_in "$WORK/huge.err" 'skipped: layernorm f32 65536 x 4194304' "stderr says what was skipped"
[[ $(field check "$(grep '"rows": 8,' "$WORK/huge.out")") == pass ]] || fail "8 x 256 did not run"

step "usage errors"
expect_rc 2 bad_grid "$NORMTUNE" bench --grid 64x
expect_in "$WORK/bad_grid.err" '--grid: "64x" is neither gpu nor a list' "a bad --grid"
expect_rc 2 grid_tune "$NORMTUNE" tune --grid gpu
expect_in "$WORK/grid_tune.err" 'tune does not take --grid' "--grid outside bench"
pass
