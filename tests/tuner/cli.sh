#!/usr/bin/env bash
# normtune's command line: help, the man page against it, --version; usage errors (status 2 with a
# message): bad numbers in every numeric option, options a command does not take; `devices`,
# --device gpu/cpu by type; tune's summary when resumed or out of budget; show's row classes as
# row ranges; bench over every cols x rows, in rounds with their spread, its JSON named as
# --grid's, the heuristic's own variant named.
source "$(dirname "$0")/common.sh"

step "help"
expect_rc 0 help "$NORMTUNE" --help
expect_in "$WORK/help.out" '^usage: normtune COMMAND' "--help prints the usage"
for cmd in devices tune build show bench verify export import; do
  expect_in "$WORK/help.out" "^  $cmd( |$)" "--help lists $cmd"
done
expect_rc 0 tune_help "$NORMTUNE" tune --help
expect_in "$WORK/tune_help.out" '--budget SECONDS' "tune --help lists --budget"
expect_in "$WORK/help.out" '^  bench --grid gpu\|ROWSxCOLS' "--help lists bench --grid"
for op in layernorm rmsnorm add_layernorm add_rmsnorm layernorm_bwd rmsnorm_bwd; do
  expect_in "$WORK/help.out" "^OP: .*\b$op\b" "--help names the op $op"
done
expect_rc 0 h "$NORMTUNE" -h
for cmd in devices tune build show bench verify report doctor export import strategies; do
  expect_in "$WORK/help.out" "^  $cmd( |$)" "--help lists $cmd"
  expect_rc 0 "help_$cmd" "$NORMTUNE" help "$cmd"
  expect_rc 0 "dash_help_$cmd" "$NORMTUNE" "$cmd" --help
  cmp -s "$WORK/help_$cmd.out" "$WORK/dash_help_$cmd.out" ||
    fail "normtune help $cmd and normtune $cmd --help differ"
  expect_in "$WORK/help_$cmd.out" "^usage: normtune $cmd" "normtune help $cmd gives the usage"
  expect_in "$WORK/help_$cmd.out" '^examples:$' "normtune help $cmd gives examples"
  expect_in "$WORK/help_$cmd.out" "^  normtune $cmd" "normtune help $cmd: an example of $cmd"
  expect_in "$WORK/help_$cmd.out" '^exit status' "normtune help $cmd documents its exit status"
done
expect_in "$WORK/help.out" '^exit status: 0 success, 1 failure' "--help documents exit statuses"
expect_in "$WORK/help_doctor.out" '^  4  no OpenCL platform' "doctor's help documents status 4"
expect_in "$WORK/help_report.out" '3 the database holds no tuned result' \
  "report's help documents status 3"

step "usage errors exit 2 with a message"
usage_error() { # NAME PATTERN ARGS...
  local name=$1 pattern=$2
  shift 2
  expect_rc 2 "$name" "$NORMTUNE" "$@"
  expect_in "$WORK/$name.err" "$pattern" "normtune $* explains the usage error"
  [[ ! -s $WORK/$name.out ]] || fail "normtune $* wrote to stdout: $(cat "$WORK/$name.out")"
}
expect_rc 2 no_args "$NORMTUNE"
expect_in "$WORK/no_args.err" '^usage: normtune' "normtune without a command prints the usage"
usage_error bad_option 'unknown argument "--frobnicate"' tune --frobnicate
usage_error bad_command 'unknown command "frobnicate"' frobnicate
usage_error bad_cols '--cols: "12x" is not a list of positive integers' tune --cols 12x
usage_error zero_rows '--rows: "0" is not a list of positive integers' tune --rows 0
usage_error bad_budget '--budget: "-1" is not a positive number' tune --budget -1
usage_error bad_fraction '--fraction: "1.5" is not in' tune --fraction 1.5
usage_error bad_op '--ops: unknown value "groupnorm"' tune --ops layernorm,groupnorm
usage_error bad_dtype '--dtypes: unknown value "f64"' tune --dtypes f64
usage_error bad_op_bench '--ops: unknown value "layernorm_backward"' bench --ops layernorm_backward
usage_error empty_ops '--ops: no value given' strategies --ops ,
usage_error bad_grid '--grid: "4096" is neither gpu nor a list ROWSxCOLS' bench --grid 4096
usage_error bad_strategy '--strategy: unknown value "greedy"' tune --strategy greedy
usage_error missing_value '--db needs a value' show --db
usage_error export_no_file 'export needs a FILE' export --db "$WORK/x.db"
usage_error import_no_file 'import needs a FILE' import --db "$WORK/x.db"
usage_error help_unknown 'unknown command "frobnicate" \(commands: devices, tune' help frobnicate
usage_error out_elsewhere 'show does not take --out' show --out x.svg

usage_error out_elsewhere2 'report does not take --device' report --device 0 --out x.svg

step "numbers: negative, overflowing or trailing garbage is bad usage in every numeric option"
# Each numeric option of each command that takes it: status 2, a message naming the option,
# nothing on stdout (before issue 23, tune --rows -5 wrapped to 2^64 - 5 and exited 0).
bad_counts=(-5 +5 18446744073709551616 99999999999999999999999 12x 1e3 0x10 " 7" "" 5, ,5 0)
bad_reals=(-5 0 nan inf 1e999 12x "" " 7")
n=0
for value in "${bad_counts[@]}"; do
  for cmd_opt in "tune --cols" "tune --rows" "bench --cols" "bench --rows"; do
    read -r cmd opt <<<"$cmd_opt"
    usage_error "num$((n++))" "^normtune: $opt: \"" "$cmd" "$opt" "$value"
  done
done
for value in "${bad_reals[@]}"; do
  usage_error "num$((n++))" '^normtune: --budget: "' tune --budget "$value"
done
for value in -0.5 0 1.5 nan 12x ""; do
  usage_error "num$((n++))" '^normtune: --fraction: "' tune --fraction "$value"
done
for value in -1 +1 18446744073709551616 1x " 1" ""; do
  usage_error "num$((n++))" '^normtune: --seed: "' tune --seed "$value"
done
for value in -4x8 4x-8 4x8x 4x99999999999999999999999 4x8, x8 4x "4x 8"; do
  usage_error "num$((n++))" '^normtune: --grid: "' bench --grid "$value"
done
for cmd in tune show bench verify strategies; do
  for value in -1 +0 99999999999999999999999; do
    usage_error "num$((n++))" '^normtune: --device: "' "$cmd" --device "$value"
  done
done
echo "   $n bad numbers refused with status 2"

step "options a command does not take are bad usage"
not_taken() { # PATTERN ARGS...
  usage_error "nt$((n++))" "$@"
}
n=0
not_taken 'devices does not take --json' devices --json
not_taken 'devices does not take --db' devices --db "$WORK/x.db"
not_taken 'devices takes no FILE' devices extra
not_taken 'doctor does not take --json' doctor --json
not_taken 'doctor does not take --device' doctor --device 0
not_taken 'export does not take --json' export - --json
not_taken 'import does not take --quiet' import - --quiet
not_taken 'show does not take --cols' show --cols 64
not_taken 'show does not take --quiet' show --quiet
not_taken 'show takes --json or --c-table, not both' show --json --c-table X --device 0
not_taken 'report does not take --json' report --json --out x.svg
not_taken 'strategies does not take --budget' strategies --budget 5
not_taken 'tune does not take --part' tune --part 1/2
not_taken 'build does not take --db' build --db "$WORK/x.db"
not_taken 'tune does not take --json' tune --json
not_taken 'tune does not take --out' tune --out x.svg
not_taken 'tune does not take --c-table' tune --c-table X
not_taken '--fraction applies to --strategy random and anneal' tune --strategy exhaustive \
  --fraction 0.5
not_taken '--seed applies to --strategy random and anneal' tune --seed 3 --strategy exhaustive
not_taken 'bench does not take --budget' bench --budget 5
not_taken 'bench --grid takes its shapes from --grid, not from --cols' bench --grid 4x8 --cols 8
not_taken 'bench --grid takes its shapes from --grid, not from --rows' bench --rows 8 --grid 4x8
not_taken '--quiet belongs to bench --grid' bench --quiet
not_taken 'verify does not take --budget' verify --budget 5
not_taken 'verify --grid takes its shapes from --grid, not from --cols' verify --grid 4x8 --cols 8
not_taken '--version takes no argument' --version tune
echo "   $n options refused where their command does not take them"

step "--version"
expect_rc 0 version "$NORMTUNE" --version
header_version=$(sed -n 's/^#define CLNORM_VERSION_STRING "\(.*\)"$/\1/p' \
  "$(dirname "$0")/../../include/clnorm.h")
expect_in "$WORK/version.out" "^normtune \(clnorm\) $header_version$" \
  "--version prints the version of include/clnorm.h ($header_version)"
expect_in "$WORK/version.out" '^kernel sources [0-9a-f]{16} forward, [0-9a-f]{16} backward$' \
  "--version names the kernel hash of each program family"
forward=$(sed -n 's/^kernel sources \([0-9a-f]*\) forward, .*/\1/p' "$WORK/version.out")
backward=$(sed -n 's/^kernel sources .* forward, \([0-9a-f]*\) backward$/\1/p' "$WORK/version.out")
[[ $forward != "$backward" ]] || fail "the forward and backward kernel hashes are the same: $forward"

step "the man page matches the help"
MAN=$(dirname "$0")/../../docs/normtune.1
[[ -f $MAN ]] || fail "no man page at $MAN"
sed 's/\\-/-/g; s/\\f[BIRP]//g' "$MAN" >"$WORK/man.txt"
expect_in "$WORK/man.txt" "^\.TH NORMTUNE 1 [0-9-]+ \"clnorm $header_version\"" \
  "the man page is of clnorm $header_version"
for cmd in devices tune build show bench verify report doctor export import strategies help; do
  expect_in "$WORK/man.txt" "^\.B $cmd( |$)" "the man page describes $cmd"
  # every option the command's help names
  for opt in $(grep -oE -- '--[a-z][a-z-]+' "$WORK/help_$cmd.out" 2>/dev/null | sort -u); do
    grep -qF -- "$opt" "$WORK/man.txt" ||
      fail "the man page does not name $opt (normtune help $cmd)"
  done
done
for opt in $(grep -oE -- '--[a-z][a-z-]+' "$WORK/help.out" | sort -u); do
  grep -qF -- "$opt" "$WORK/man.txt" || fail "the man page does not name $opt (normtune --help)"
done
exit_help=$(sed -n '/^exit status/,$p' "$WORK/help.out" | tr '\n' ' ')
for status in 0 1 2 3 4 5 6 130; do
  grep -qE "(^|[ :,])$status [a-z(]" <<<"$exit_help" ||
    fail "normtune --help does not document exit status $status"
  grep -A1 -x '\.TP' "$WORK/man.txt" | grep -qx "\.B $status" ||
    fail "the man page does not document exit status $status"
done
if command -v groff >/dev/null; then
  groff -man -ww -z "$MAN" 2>"$WORK/groff.err" || fail "groff: $(cat "$WORK/groff.err")"
  [[ ! -s $WORK/groff.err ]] || fail "groff warns about the man page: $(cat "$WORK/groff.err")"
fi

step "failures exit 1 with a message"
expect_rc 1 show_missing "$NORMTUNE" show --db "$WORK/missing.db"
expect_in "$WORK/show_missing.err" "no tuning database at '$WORK/missing.db'" \
  "show on a missing database"
[[ ! -e $WORK/missing.db ]] || fail "show created $WORK/missing.db"
expect_rc 1 bad_device "$NORMTUNE" tune --db "$WORK/x.db" --device no-such-device-here
expect_in "$WORK/bad_device.err" 'no-such-device-here' "tune names the device it did not find"

step "devices lists the OpenCL device (${CLNORM_TEST_PLATFORM:=Portable Computing Language})"
expect_rc 0 devices "$NORMTUNE" devices
expect_in "$WORK/devices.out" '^index  type  platform / device' "devices prints its header"
expect_in "$WORK/devices.out" "^ +[0-9]+  (CPU|GPU|ACC)   $CLNORM_TEST_PLATFORM / " \
  "devices lists a device of $CLNORM_TEST_PLATFORM (set CLNORM_TEST_PLATFORM on other machines)"
sed 's/^/   /' "$WORK/devices.out"

step "--device gpu and cpu select by device type"
# A budget that the copy measurement alone uses up: tune names its device, measures nothing and
# says so.
DB=$WORK/tuning.db
for type in CPU GPU; do
  first=$(sed -n "s/^ \+[0-9]\+  $type   [^/]* \/ \(.*\) ([0-9]* compute units, .*/\1/p" \
    "$WORK/devices.out" | head -n 1)
  lower=$(tr 'A-Z' 'a-z' <<<"$type")
  if [[ -n $first ]]; then
    expect_rc 0 "type_$lower" "$NORMTUNE" tune --db "$DB" --device "$lower" --ops layernorm \
      --cols 64 --rows 8 --budget 0.001
    grep -qF "normtune: tuning $first (" "$WORK/type_$lower.out" ||
      fail "tune --device $lower did not pick the first $type, $first: $(head -n 1 \
        "$WORK/type_$lower.out")"
    expect_in "$WORK/type_$lower.out" \
      '--budget of 0.001 s ran out before this run measured anything \(1 of 1 shapes not reached' \
      "a budget used up before the first shape says so"
    echo "   --device $lower: $first"
  else
    expect_rc 1 "type_$lower" "$NORMTUNE" tune --db "$DB" --device "$lower" --budget 1
    expect_in "$WORK/type_$lower.err" "no device of type $type" "--device $lower without a $type"
    echo "   --device $lower: no $type here, refused"
  fi
done

step "a resumed tune says what it measured and what it read back"
tune "$DB" first --ops rmsnorm --cols 64 --rows 8
expect_in "$WORK/first.out" ' 1 shapes tuned, 0 skipped, .*\(shapes: 1 measured by this run, 0 ' \
  "the first run measures its shape"
tune "$DB" again --ops rmsnorm --cols 64 --rows 8
expect_in "$WORK/again.out" ' 1 shapes tuned, 0 skipped, .*\(shapes: 0 measured by this run, 1 ' \
  "the same command again reads its shape back"
expect_rc 0 resumed_out "$NORMTUNE" tune --db "$DB" ${DEVICE_ARGS[@]+"${DEVICE_ARGS[@]}"} \
  --ops rmsnorm --dtypes f32 --cols 64,128 --rows 8 --budget 0.001
expect_in "$WORK/resumed_out.out" 'ran out before this run measured anything \(2 of 2 shapes' \
  "a resumed run whose budget ran out says so"

step "show names row classes by their rows"
expect_rc 0 show "$NORMTUNE" show --db "$DB"
expect_in "$WORK/show.out" '^  op +dtype +cols +row class +rows ' "show's header"
expect_in "$WORK/show.out" '^ +rmsnorm +f32 +64 +1-16 +8 ' "rows 8: row class 1-16"
expect_rc 0 show_json "$NORMTUNE" show --db "$DB" --json
expect_in "$WORK/show_json.out" '"row_class": 0, "rows": 8, .*"row_range": "1-16"}' \
  "show --json: row_range"

step "bench: every cols with every rows, 5 rounds and their spread, the heuristic's own variant"
# No database: the dispatcher's choice is the heuristic's own variant.
bench_args=(--db "$WORK/none.db" ${DEVICE_ARGS[@]+"${DEVICE_ARGS[@]}"} --ops rmsnorm)
expect_rc 0 bench "$NORMTUNE" bench "${bench_args[@]}" --cols 64,96 --rows 8,24
same="heuristic +\| +same +\| .*\(the heuristic's own variant\)$"
for shape in "8 +64" "8 +96" "24 +64" "24 +96"; do
  expect_in "$WORK/bench.out" "^rmsnorm +f32 +$shape \| +[0-9.]+ +[0-9.]+ +[0-9.]+ $same" \
    "bench times rows x cols $shape once, as the heuristic's own variant"
done
[[ $(grep -c '^rmsnorm ' "$WORK/bench.out") -eq 4 ]] || fail "bench ran other than 4 shapes"
expect_in "$WORK/bench.out" 'median of 5 rounds' "bench says how it measured"
expect_rc 0 bench_json "$NORMTUNE" bench "${bench_args[@]}" --cols 64,96 --rows 8,24 --json
expect_rc 0 grid_json "$NORMTUNE" bench "${bench_args[@]}" --dtypes f32 --grid 8x64 --json --quiet
python3 - "$WORK/bench_json.out" "$WORK/grid_json.out" <<'EOF' || fail "bench --json: as above"
import json, sys
bench = [json.loads(line) for line in open(sys.argv[1])]
grid = [json.loads(line) for line in open(sys.argv[2])][1:]  # after the header line
shapes = sorted((r["rows"], r["cols"]) for r in bench)
assert shapes == [(8, 64), (8, 96), (24, 64), (24, 96)], "bench --json shapes: %s" % shapes
shared = {"device", "op", "dtype", "rows", "cols", "us", "gbps", "copy_gbps", "ratio", "bytes",
          "variant", "why", "max_err", "check", "reason"}
for r in bench:
    assert not shared - set(r), "bench --json lacks %s: %s" % (shared - set(r), r)
    assert r["check"] == "pass" and r["rounds"] == 5, r
    assert r["us_min"] <= r["us"] <= r["us_max"], r
    assert r["heuristic_same"] is True and r["heuristic_variant"] == r["variant"], r
assert grid, "bench --grid --json gave no result"
for g in grid:
    assert not shared - set(g), "bench --grid --json lacks %s: %s" % (shared - set(g), g)
old = {"chosen_gbps", "chosen_why", "chosen_ratio"} & set().union(*bench)
assert not old, "old field names: %s" % old
print("   bench --json: 4 shapes, 5 rounds each; %d fields named as --grid names them"
      % len(shared))
EOF
pass
