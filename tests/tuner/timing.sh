#!/usr/bin/env bash
# Timing that never lies (issue 23): every timing path checks its profiling events with the one
# check (tool_time_plausible, tuner/tool.h) and, where they cannot be believed, clnorm_demo,
# `normtune bench` (pairs and grid) and `normtune verify` time by the wall clock and say why,
# `normtune tune` refuses (exit 1, nothing stored), `normtune report` leaves stored times that
# cannot be believed out and says so.
#   hook (default): on the test device, with CLNORM_TEST_PROFILING=fast|zero|backwards forcing
#                   the events read to 1 ns (Rusticl's), zero, or an end before its start
#   rusticl:        on Mesa's Rusticl (llvmpipe), whose real events read 1 ns, without the hook
# CLNORM_TEST_DEMO: clnorm_demo's path.
source "$(dirname "$0")/common.sh"
CASE=${1:-hook}
DEMO=${CLNORM_TEST_DEMO:?CLNORM_TEST_DEMO names clnorm_demo}
DB=$WORK/tuning.db
SHAPE=(--ops layernorm --dtypes f32 --cols 256 --rows 64)

# demo NAME MODE REASON: clnorm_demo (small matrix) with the hook's MODE ("" for none) times by
# the wall clock and names REASON, as text and as JSON.
demo() {
  local name=$1 mode=$2 reason=$3
  expect_rc 0 "$name" env CLNORM_TEST_PROFILING="$mode" "$DEMO" ${DEVICE_ARGS[@]+"${DEVICE_ARGS[@]}"} \
    --rows 64 --cols 256
  expect_in "$WORK/$name.out" "each run timed by the wall clock" "$name: the wall clock named"
  expect_in "$WORK/$name.out" "^timed by the wall clock: .*$reason" "$name: why ($reason)"
  expect_in "$WORK/$name.out" "^PASS$" "$name: checks passed"
}

# refused NAME MODE: tune refuses (exit 1), saying why, and stores nothing.
refused() {
  local name=$1 mode=$2
  rm -f "$DB"
  expect_rc 1 "$name" env CLNORM_TEST_PROFILING="$mode" "$NORMTUNE" tune --db "$DB" \
    ${DEVICE_ARGS[@]+"${DEVICE_ARGS[@]}"} "${SHAPE[@]}" --strategy random --fraction 0.03 \
    --budget 60
  expect_in "$WORK/$name.err" "cannot be believed: .*refuses to tune this device" \
    "$name: the refusal says why"
  [[ ! -e $DB || $(results "$DB") == 0 ]] || fail "$name: a refused tune stored results"
}

if [[ $CASE == rusticl ]]; then
  step "clnorm_demo on Rusticl: its 1 ns events give way to the wall clock"
  demo demo_rusticl "" "less than 0.001 of it"
  step "normtune tune on Rusticl: refused"
  refused tune_rusticl ""
  pass
  exit 0
fi

step "the one check, on a healthy device: bench keeps the profiling events"
expect_rc 0 bench_ok "$NORMTUNE" bench --db "$DB" ${DEVICE_ARGS[@]+"${DEVICE_ARGS[@]}"} \
  "${SHAPE[@]}" --json
expect_in "$WORK/bench_ok.out" '"clock": "profiling events"' "bench: profiling events kept"

step "clnorm_demo: 1 ns, zero and backward events give way to the wall clock"
demo demo_fast fast "less than 0.001 of it"
demo demo_zero zero "zero time"
expect_rc 0 demo_json env CLNORM_TEST_PROFILING=backwards "$DEMO" \
  ${DEVICE_ARGS[@]+"${DEVICE_ARGS[@]}"} --rows 64 --cols 256 --json
expect_in "$WORK/demo_json.out" '"op": "copy", .*"clock": "wall clock", "clock_why": ".*not monotonic' \
  "demo --json: the clock and why"

step "normtune bench, bench --grid: the wall clock, said on stderr and in the output"
expect_rc 0 bench_fast env CLNORM_TEST_PROFILING=fast "$NORMTUNE" bench --db "$DB" \
  ${DEVICE_ARGS[@]+"${DEVICE_ARGS[@]}"} "${SHAPE[@]}"
expect_in "$WORK/bench_fast.err" "timing by the wall clock .*cannot be believed" "bench: stderr"
expect_in "$WORK/bench_fast.out" "^timed by the wall clock: " "bench: the table's note"
expect_rc 0 grid_zero env CLNORM_TEST_PROFILING=zero "$NORMTUNE" bench --db "$DB" \
  ${DEVICE_ARGS[@]+"${DEVICE_ARGS[@]}"} --grid 64x256 --ops layernorm --dtypes f32 --json
expect_in "$WORK/grid_zero.out" '"rows": 64, "cols": 256, .*"clock": "wall clock", .*"check": "pass"' \
  "bench --grid --json: the clock"

step "normtune tune: refused with each kind of bad event"
for mode in fast zero backwards; do
  refused "tune_$mode" "$mode"
done

step "normtune verify: the wall clock"
tune "$DB" tune "${SHAPE[@]}" --fraction 0.01
expect_rc 0 verify_fast env CLNORM_TEST_PROFILING=fast "$NORMTUNE" verify --db "$DB" \
  ${DEVICE_ARGS[@]+"${DEVICE_ARGS[@]}"} --grid 64x256 --ops layernorm --json
expect_in "$WORK/verify_fast.out" '"summary": "normtune verify", .*"clock": "wall clock"' \
  "verify --json: the clock"
expect_in "$WORK/verify_fast.err" "timing by the wall clock .*less than 0.001" "verify: stderr"

step "normtune report: stored times that cannot be believed are left out, and said"
command -v sqlite3 >/dev/null || fail "the sqlite3 command-line tool is missing (scripts/deps.sh)"
expect_rc 0 report_ok "$NORMTUNE" report --db "$DB" --out "$WORK/ok.svg"
! grep -q "left out" "$WORK/report_ok.err" || fail "report: a sound database had results left out"
# the heuristic's result (always drawn) at 1 ns (Rusticl's), the copy bandwidth at 10^9 GB/s
sqlite3 "$DB" "UPDATE heuristic SET median_s = 1e-9, gbps = 1.3e5; UPDATE copy_bandwidth SET gbps = 1e9;"
expect_rc 0 report_some "$NORMTUNE" report --db "$DB" --out "$WORK/some.svg"
expect_in "$WORK/report_some.err" "copy bandwidth of .* is not drawn: .*more than any memory" \
  "report: the copy bandwidth"
expect_in "$WORK/report_some.err" "result.* left out: times that cannot be believed" \
  "report: the result at 1 ns"
sqlite3 "$DB" "UPDATE results SET median_s = 1e-9, gbps = 1.3e5; UPDATE heuristic SET median_s = 1e-9;"
expect_rc 3 report_none "$NORMTUNE" report --db "$DB" --out "$WORK/none.svg"
expect_in "$WORK/report_none.err" "every result in .* cannot be believed" "report: nothing left"
pass
