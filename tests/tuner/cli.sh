#!/usr/bin/env bash
# normtune's command line: help, usage errors (status 2 with a message), `devices`.
source "$(dirname "$0")/common.sh"

step "help"
expect_rc 0 help "$NORMTUNE" --help
expect_in "$WORK/help.out" '^usage: normtune COMMAND' "--help prints the usage"
for cmd in devices tune show bench export import; do
  expect_in "$WORK/help.out" "^  $cmd( |$)" "--help lists $cmd"
done
expect_rc 0 tune_help "$NORMTUNE" tune --help
expect_in "$WORK/tune_help.out" '--budget SECONDS' "tune --help lists --budget"
expect_in "$WORK/help.out" '^  bench --grid gpu\|ROWSxCOLS' "--help lists bench --grid"
for op in layernorm rmsnorm add_layernorm add_rmsnorm layernorm_bwd rmsnorm_bwd; do
  expect_in "$WORK/help.out" "^OP: .*\b$op\b" "--help names the op $op"
done
expect_rc 0 h "$NORMTUNE" -h
for cmd in devices tune show bench report doctor export import strategies; do
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
usage_error out_elsewhere '--out belongs to report only' show --out x.svg

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
pass
