#!/usr/bin/env bash
# The disk fills while `normtune tune` stores results: tune stops with exit status 6 and a message
# that says so; everything committed before stays readable (by sqlite3, db.h and the library,
# the library even while the disk is still full); once there is room again the same command
# resumes and finishes.
#
# Two ways to fill it, neither needing root:
#   - ENOSPC: the fault shim ($CLNORM_TEST_FAULT_SHIM, tests/tuner/fault_shim.c, LD_PRELOAD)
#     gives the database files a disk with 64 KiB free (SQLite: SQLITE_FULL)
#   - EFBIG: `ulimit -f` in a subshell with SIGXFSZ ignored, so write(2) fails instead of the
#     signal killing the process (SQLite: SQLITE_IOERR_WRITE). The limit applies to every file
#     the process writes, PoCL's compiler temporaries (some 600 KB) included: it is
#     $CLNORM_TEST_FSIZE_KIB (default 1536) KiB, which the WAL (some 12 KiB per result) reaches
#     after about a hundred results.
source "$(dirname "$0")/common.sh"
DB=$WORK/full.db
SHIM=${CLNORM_TEST_FAULT_SHIM:-}
[[ -n $SHIM && -f $SHIM ]] || fail "CLNORM_TEST_FAULT_SHIM='$SHIM' is not the fault shim library"
command -v sqlite3 >/dev/null || fail "the sqlite3 command-line tool is missing (scripts/deps.sh)"
LIMIT_KIB=${CLNORM_TEST_FSIZE_KIB:-1536}

args=(tune --db "$DB" ${DEVICE_ARGS[@]+"${DEVICE_ARGS[@]}"} --ops layernorm,rmsnorm --dtypes f32
      --cols 256,512 --rows 64 --strategy random --fraction 0.3 --budget 600)
keys() { sed -n 's/^\(\(layernorm\|rmsnorm\) f32 [0-9]*x[0-9]* wg=[^:]*\): .*/\1/p' "$@"; }
db_keys() {
  sqlite3 -readonly "$DB" "SELECT op || ' ' || dtype || ' ' || rows || 'x' || cols || ' wg=' ||
    wg || ' tpr=' || tpr || ' vec=' || vec || ' hold=' || hold || ' reduce=' || reduce ||
    ' stats=' || stats FROM results" | sort
}

# sound NAME: integrity_check passes, and every result printed so far (run*.out) is stored:
# exactly those, since tune stops cleanly (the failed transaction is rolled back).
sound() {
  local check
  check=$(sqlite3 -readonly "$DB" 'PRAGMA integrity_check' 2>&1) ||
    fail "$1: sqlite3 cannot read the database: $check"
  [[ $check == ok ]] || fail "$1: PRAGMA integrity_check: $check"
  local missing
  missing=$(comm -23 <(keys "$WORK"/run*.out | sort) <(db_keys))
  [[ -z $missing ]] || fail "$1: results printed as stored are not in the database: $missing"
  local printed stored
  printed=$(keys "$WORK"/run*.out | wc -l)
  stored=$(db_keys | wc -l)
  [[ $stored -eq $printed ]] || fail "$1: $printed results printed, the database holds $stored"
  echo "   $1: $(keys "$WORK/$1.out" | wc -l) results stored by it; $stored in all;" \
    "integrity ok"
}

# stopped NAME: NAME exited 6 with a message naming the database and the cause (pattern $2)
stopped() {
  expect_in "$WORK/$1.err" "normtune: storing a result: tuning database '$DB' $2" \
    "$1 says that storing failed, and why"
  expect_in "$WORK/$1.err" "the same command resumes" "$1 says how to go on"
  echo "   $(grep 'storing a result' "$WORK/$1.err")"
}

step "a first result set, stored with room to spare"
tune "$DB" run0
sound run0

step "ENOSPC: the database files have 64 KiB left"
expect_rc 6 runfull env CLNORM_TEST_DISK_FREE=65536 LD_PRELOAD="$SHIM" "$NORMTUNE" "${args[@]}"
stopped runfull 'cannot grow \(disk full\): .*(full|No space left on device)'
[[ $(keys "$WORK/runfull.out" | wc -l) -gt 0 ]] || fail "the 64 KiB were full before a result"
sound runfull
# the library, on a disk that is still full (its reader checkpoints on closing, which fails)
expect_rc 0 library_full env CLNORM_TEST_DISK_FREE=0 LD_PRELOAD="$SHIM" "$TESTBIN" tuned "$DB"
sed "s/^/   /" "$WORK/library_full.out"
expect_rc 0 show_full env CLNORM_TEST_DISK_FREE=0 LD_PRELOAD="$SHIM" "$NORMTUNE" show --db "$DB"
sound runfull

step "EFBIG: a file-size limit of $LIMIT_KIB KiB (ulimit -f, SIGXFSZ ignored)"
rc=0
(
  trap '' XFSZ
  ulimit -f "$LIMIT_KIB"
  exec "$NORMTUNE" "${args[@]}"
) >"$WORK/runlimit.out" 2>"$WORK/runlimit.err" || rc=$?
if grep -q 'LLVM ERROR\|File too large' "$WORK/runlimit.err" &&
  ! grep -q 'storing a result' "$WORK/runlimit.err"; then
  tail -n 5 "$WORK/runlimit.err" >&2
  fail "a file other than the database (PoCL's compiler output?) reached the limit first:" \
    "raise CLNORM_TEST_FSIZE_KIB"
fi
[[ $rc -eq 6 ]] || {
  tail -n 5 "$WORK/runlimit.out" "$WORK/runlimit.err" >&2
  fail "the run under the file-size limit exited with status $rc, want 6"
}
stopped runlimit 'could not be read or written: .*File too large'
sound runlimit
dispatch library_limit tuned "$DB"

step "room again: the same command resumes and finishes"
expect_rc 0 runfinal "$NORMTUNE" "${args[@]}"
expect_in "$WORK/runfinal.out" ' 4 shapes tuned, 0 skipped' "the last run tunes every shape"
sound runfinal
again=$(keys "$WORK"/run*.out | sort | uniq -d)
[[ -z $again ]] || fail "a run measured again what an earlier one had stored: $again"
dispatch dispatch tuned "$DB"
pass
