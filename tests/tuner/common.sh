# Sourced by the tuner tests: bash NAME.sh NORMTUNE TEST_DISPATCH_TUNED [CASE]
# Gives NORMTUNE, TESTBIN, WORK (a temporary directory, removed on exit unless
# CLNORM_TEST_KEEP=1), and helpers that fail the test with a clear message.
set -euo pipefail

if [[ $# -lt 2 ]]; then
  echo "usage: bash $0 NORMTUNE TEST_DISPATCH_TUNED [CASE]" >&2
  exit 2
fi
NORMTUNE=$1
TESTBIN=$2
shift 2
TEST_NAME=$(basename "$0" .sh)${1:+_$1}
for bin in "$NORMTUNE" "$TESTBIN"; do
  [[ -x $bin ]] || { echo "FAIL [$TEST_NAME]: $bin is not an executable" >&2; exit 1; }
done
WORK=$(mktemp -d "${TMPDIR:-/tmp}/clnorm-$TEST_NAME.XXXXXX")

cleanup() {
  local rc=$?
  if [[ ${CLNORM_TEST_KEEP:-0} == 1 || ($rc -ne 0 && $rc -ne 77) ]]; then
    echo "(files of this test kept in $WORK)" >&2
  else
    chmod -R u+rwX "$WORK" 2>/dev/null || true
    rm -rf "$WORK"
  fi
}
trap cleanup EXIT

fail() {
  echo "FAIL [$TEST_NAME]: $*" >&2
  exit 1
}

step() { echo "== [$TEST_NAME ${SECONDS}s] $*"; }

# The device under test: normtune's default (first GPU, else first device) or $CLNORM_TEST_DEVICE.
DEVICE_ARGS=()
if [[ -n ${CLNORM_TEST_DEVICE:-} ]]; then
  DEVICE_ARGS=(--device "$CLNORM_TEST_DEVICE")
fi

# expect_rc RC NAME CMD...: runs CMD with stdout and stderr in $WORK/NAME.out and NAME.err; fails
# the test, showing both, unless it exits with RC.
expect_rc() {
  local want=$1 name=$2
  shift 2
  local rc=0
  "$@" >"$WORK/$name.out" 2>"$WORK/$name.err" || rc=$?
  if [[ $rc -ne $want ]]; then
    echo "--- stdout of $name: $*" >&2
    tail -n 60 "$WORK/$name.out" >&2
    echo "--- stderr of $name" >&2
    tail -n 60 "$WORK/$name.err" >&2
    fail "$name exited with status $rc, want $want: $*"
  fi
}

# expect_in FILE PATTERN WHAT: FILE must contain PATTERN (an extended regular expression).
expect_in() {
  if ! grep -Eq -- "$2" "$1"; then
    echo "--- $1:" >&2
    tail -n 40 "$1" >&2
    fail "$3: no line matching /$2/ in $(basename "$1")"
  fi
}

# tune DB NAME [OPTIONS...]: a small grid (layernorm f32, 64 x 256) with random search over 3%
# of the candidates and a budget; later options override these. Must exit 0.
tune() {
  local db=$1 name=$2
  shift 2
  expect_rc 0 "$name" "$NORMTUNE" tune --db "$db" ${DEVICE_ARGS[@]+"${DEVICE_ARGS[@]}"} \
    --ops layernorm --dtypes f32 --cols 256 --rows 64 --strategy random --fraction 0.03 \
    --budget 60 "$@"
  echo "   $(tail -n 1 "$WORK/$name.out")"
}

# results DB: how many results the database holds (all devices), read through db.h.
results() {
  local line
  line=$("$TESTBIN" count "$1") || fail "cannot count the results of $1"
  line=${line#results }
  echo "${line%% *}"
}

# dispatch NAME MODE ARGS...: runs test_dispatch_tuned; shows its report; fails on failure.
dispatch() {
  local name=$1
  shift
  expect_rc 0 "$name" "$TESTBIN" "$@"
  sed 's/^/   /' "$WORK/$name.out"
}

pass() { echo "PASS [$TEST_NAME] in ${SECONDS}s"; }
