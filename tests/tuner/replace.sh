#!/usr/bin/env bash
# The tuning database replaced while processes use it:
#   - a process holding a context ($CLNORM_TEST_DB_REPLACE, tests/test_db_replace.c) keeps
#     computing correct results while the file is renamed over, overwritten and removed again and
#     again, and each reload sees exactly the file that is there;
#   - `normtune tune` running while another database is renamed over its file, garbage is renamed
#     over it, or garbage is written into it: tune stops with exit status 6 and says so, and the
#     file now at the path is left exactly as it was put there (never corrupted by tune's WAL);
#     the same command then tunes into it.
source "$(dirname "$0")/common.sh"
REPLACER=${CLNORM_TEST_DB_REPLACE:-}
[[ -x $REPLACER ]] || fail "CLNORM_TEST_DB_REPLACE='$REPLACER' is not test_db_replace"
command -v sqlite3 >/dev/null || fail "the sqlite3 command-line tool is missing (scripts/deps.sh)"
SECONDS_LIB=${CLNORM_TEST_REPLACE_SECONDS:-20}
DB=$WORK/replaced.db
GOOD=$WORK/good.db
OTHER=$WORK/other.db
keys() { sed -n 's/^\(layernorm f32 [0-9]*x[0-9]* wg=[^:]*\): .*/\1/p' "$@"; }
winners() {
  local line
  line=$("$TESTBIN" count "$1") || fail "cannot count the results of $1"
  echo "${line##* }"
}

step "two sound databases: GOOD (one shape) and OTHER (two shapes)"
tune "$GOOD" good
tune "$OTHER" other --cols 256,512
good_w=$(winners "$GOOD")
other_w=$(winners "$OTHER")
[[ $good_w -eq 1 && $other_w -eq 2 ]] || fail "winners: GOOD $good_w, OTHER $other_w; want 1 and 2"
for i in $(seq 200); do echo "clnorm test $i: garbage renamed over a tuning database"; done \
  >"$WORK/garbage"

step "a process with a context while DB is replaced, for $SECONDS_LIB s"
cp "$GOOD" "$DB"
expect_rc 0 library env CLNORM_DB="$DB" "$REPLACER" "$DB" "$SECONDS_LIB" "$GOOD" "$good_w" \
  "$OTHER" "$other_w"
sed 's/^/   /' "$WORK/library.out"

# tune_replaced NAME HOW: starts tune on a copy of GOOD; after its third result, HOW replaces DB.
tune_replaced() {
  local name=$1 how=$2 pid rc=0
  rm -f "$DB" "$DB-wal" "$DB-shm"
  cp "$GOOD" "$DB"
  "$NORMTUNE" tune --db "$DB" ${DEVICE_ARGS[@]+"${DEVICE_ARGS[@]}"} --ops layernorm --dtypes f32 \
    --cols 1024 --rows 64 --strategy random --fraction 0.5 --budget 300 \
    >"$WORK/$name.out" 2>"$WORK/$name.err" &
  pid=$!
  for _ in $(seq 6000); do
    [[ $(keys "$WORK/$name.out" | wc -l) -ge 3 ]] && break
    kill -0 $pid 2>/dev/null || break
    sleep 0.05
  done
  case $how in
  other) cp "$OTHER" "$DB.new" && mv "$DB.new" "$DB" && cp "$OTHER" "$WORK/expected" ;;
  garbage) cp "$WORK/garbage" "$DB.new" && mv "$DB.new" "$DB" && cp "$WORK/garbage" "$WORK/expected" ;;
  in_place) cat "$WORK/garbage" >"$DB" ;;
  esac
  wait $pid || rc=$?
  [[ $rc -eq 6 ]] || {
    tail -n 5 "$WORK/$name.out" "$WORK/$name.err" >&2
    fail "$name: tune exited with status $rc, want 6 (did it finish before the replacement?)"
  }
  echo "   $(grep '^normtune: storing' "$WORK/$name.err")"
}

step "tune while another database is renamed over its file"
tune_replaced mv_other other
expect_in "$WORK/mv_other.err" "tuning database '$DB' was replaced or removed while" \
  "tune says the database was replaced"
cmp -s "$DB" "$WORK/expected" || fail "tune changed the database renamed over its file"
[[ ! -s $DB-wal ]] || fail "tune left its WAL ($(stat -c %s "$DB-wal") bytes) beside the new file"
[[ $(sqlite3 -readonly "$DB" 'PRAGMA integrity_check') == ok ]] || fail "the new file is corrupt"
[[ $(results "$DB") -eq $(results "$OTHER") ]] || fail "the new file lost or gained results"
dispatch mv_other_dispatch tuned "$DB"
tune "$DB" mv_other_again --cols 1024
[[ $(results "$DB") -gt $(results "$OTHER") ]] || fail "tune stored nothing into the new file"

step "tune while garbage is renamed over its file"
tune_replaced mv_garbage garbage
expect_in "$WORK/mv_garbage.err" "tuning database '$DB' was replaced or removed while" \
  "tune says the database was replaced"
cmp -s "$DB" "$WORK/expected" || fail "tune changed the garbage renamed over its file"
[[ ! -e $DB-wal ]] || fail "tune left its WAL beside the garbage"
tune "$DB" mv_garbage_again --cols 1024
expect_in "$WORK/mv_garbage_again.err" "moved the bad file to $DB\\.bad-[0-9]+" \
  "the next tune moves the garbage aside"

step "tune while garbage is written into its file (same inode)"
tune_replaced in_place in_place
expect_in "$WORK/in_place.err" "tuning database '$DB' was overwritten by another program" \
  "tune says the database was overwritten"
tune "$DB" in_place_again --cols 1024
dispatch in_place_dispatch tuned "$DB"
pass
