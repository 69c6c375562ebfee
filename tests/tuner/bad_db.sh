#!/usr/bin/env bash
# A bad tuning database: the library still computes correct results and says why it fell back;
# `normtune tune` repairs or recreates it (moving a bad file aside to PATH.bad-TIME), says that
# results are stale and re-tunes, or, where it cannot write, fails with a message and touches
# nothing. CASE: garbage | truncated | newer | stale | readonly.
source "$(dirname "$0")/common.sh"
CASE=${1:-}
GOOD=$WORK/good.db
BAD=$WORK/bad.db

step "a good database to start from"
tune "$GOOD" good
[[ ! -e $GOOD-wal ]] || fail "normtune left $GOOD-wal behind"
device=$(sed -n 's/^normtune: tuning \(.*\) (.*) into .*/\1/p' "$WORK/good.out")

# moved_aside: BAD is repaired; the bad file was moved to BAD.bad-TIME, unchanged (= $1)
tune_repairs() {
  local original=$1
  tune "$BAD" repair
  expect_in "$WORK/repair.err" "moved the bad file to $BAD\\.bad-[0-9]+" \
    "tune says where it moved the bad file"
  local moved
  moved=$(sed -n 's/.*moved the bad file to \([^ ]*\) and created.*/\1/p' "$WORK/repair.err")
  [[ -f $moved ]] || fail "tune says it moved the bad file to $moved, which does not exist"
  [[ $moved =~ ^$BAD\.bad-[0-9]+$ ]] || fail "the bad file was moved to $moved, not $BAD.bad-TIME"
  cmp -s "$moved" "$original" || fail "the moved file $moved is not the bad file as it was"
  echo "   moved aside: $(basename "$moved")"
  expect_in "$WORK/repair.out" ' 1 shapes tuned' "tune tunes into the recreated database"
  dispatch repaired tuned "$BAD"
}

case $CASE in
garbage)
  step "a file that is not a database"
  for i in $(seq 200); do echo "clnorm test $i: this file is not an SQLite database"; done >"$BAD"
  cp "$BAD" "$WORK/original"
  dispatch library fallback "$BAD" "corrupt|not a database" "$GOOD"
  expect_rc 1 show "$NORMTUNE" show --db "$BAD"
  expect_in "$WORK/show.err" "corrupt|not a database" "show says what is wrong"
  cmp -s "$BAD" "$WORK/original" || fail "show or the library changed the bad file"
  tune_repairs "$WORK/original"
  ;;
truncated)
  step "a database truncated to half its size"
  cp "$GOOD" "$BAD"
  truncate -s $(($(stat -c %s "$GOOD") / 2)) "$BAD"
  cp "$BAD" "$WORK/original"
  dispatch library fallback "$BAD" "corrupt|malformed" "$GOOD"
  tune_repairs "$WORK/original"
  ;;
newer)
  step "a database of a newer schema (PRAGMA user_version 99)"
  cp "$GOOD" "$BAD"
  # user_version is the big-endian 32-bit integer at offset 60 of the database header
  printf '\0\0\0\143' | dd of="$BAD" bs=1 seek=60 conv=notrunc status=none
  cp "$BAD" "$WORK/original"
  dispatch library fallback "$BAD" "newer" "$GOOD"
  expect_in "$WORK/library.out" "schema version 99" "the library names the version it found"
  expect_rc 1 show "$NORMTUNE" show --db "$BAD"
  expect_in "$WORK/show.err" "newer than this clnorm" "show says the database is newer"
  tune_repairs "$WORK/original"
  ;;
stale)
  step "results of another driver version"
  expect_rc 0 export "$NORMTUNE" export "$WORK/good.json" --db "$GOOD"
  sed 's/"driver_version": "[^"]*"/"driver_version": "0.0-clnorm-test-old-driver"/' \
    "$WORK/good.json" >"$WORK/stale.json"
  expect_in "$WORK/stale.json" '"driver_version": "0.0-clnorm-test-old-driver"' "the edit"
  expect_rc 0 import "$NORMTUNE" import "$WORK/stale.json" --db "$BAD"
  n=$(results "$BAD")
  [[ $n -gt 0 && $n -eq $(results "$GOOD") ]] || fail "the stale database holds $n results"
  CLNORM_LOG=info dispatch library fallback "$BAD" "stale|driver" "$GOOD"
  expect_in "$WORK/library.err" "^clnorm: layernorm f32 rows=64 cols=256 .*\\(tuned \\(other driver\\)\\)$" \
    "another driver's results are used, and the info log says so"
  expect_rc 0 show "$NORMTUNE" show --db "$BAD" --device "$device"
  expect_in "$WORK/show.out" "$n results of this device are stale \\($n: driver changed" \
    "show says the results are stale"
  tune "$BAD" retune
  expect_in "$WORK/retune.err" \
    "$n stored results of this device are stale \\($n from another driver version" \
    "tune says the results are stale"
  expect_in "$WORK/retune.out" ' 1 shapes tuned' "tune tunes again"
  ls "$BAD".bad-* >/dev/null 2>&1 && fail "tune moved a sound database aside"
  [[ $(results "$BAD") -gt $n ]] || fail "the re-tune stored nothing"
  dispatch retuned tuned "$BAD"

  # stale_hash NAME HASH WHAT: good.json's results re-keyed to HASH are stale: the library falls
  # back and show counts them as of other kernels
  stale_hash() {
    sed "s/\"kernel_hash\": \"[0-9a-f]*\"/\"kernel_hash\": \"$2\"/" "$WORK/good.json" \
      >"$WORK/$1.json"
    expect_rc 0 "import_$1" "$NORMTUNE" import "$WORK/$1.json" --db "$WORK/$1.db"
    dispatch "library_$1" fallback "$WORK/$1.db" "stale|kernel" "$GOOD"
    expect_rc 0 "show_$1" "$NORMTUNE" show --db "$WORK/$1.db" --device "$device"
    expect_in "$WORK/show_$1.out" \
      "$n results of this device are stale \\(0: driver changed, $n: kernels changed" "$3"
  }

  step "results of other kernel sources"
  stale_hash kernels 00000000c1a0b0a1 "show says the results of other kernels are stale"

  step "forward results keyed by the backward family's kernel hash"
  expect_rc 0 version "$NORMTUNE" --version
  backward=$(sed -n 's/^kernel sources .* forward, \([0-9a-f]*\) backward$/\1/p' "$WORK/version.out")
  [[ -n $backward ]] || fail "--version named no backward hash: $(cat "$WORK/version.out")"
  stale_hash family "$backward" "a layernorm result of the backward ops' hash is stale"
  ;;
readonly)
  step "a database in a read-only directory"
  RO=$WORK/ro
  mkdir "$RO"
  cp "$GOOD" "$RO/tuning.db"
  cp "$GOOD" "$WORK/original"
  AS=()
  if [[ $(id -u) -eq 0 ]]; then
    # root writes into read-only directories: run this case as nobody, in a directory root owns
    if ! command -v setpriv >/dev/null; then
      echo "SKIP [$TEST_NAME]: running as root and setpriv (util-linux) is missing, so no" \
        "read-only directory can be made; only this sub-case is skipped" >&2
      exit 77
    fi
    AS=(setpriv --reuid=65534 --regid=65534 --clear-groups --)
    if ! "${AS[@]}" true; then
      echo "SKIP [$TEST_NAME]: running as root and setpriv cannot switch to uid 65534 here, so" \
        "no read-only directory can be made; only this sub-case is skipped" >&2
      exit 77
    fi
    mkdir -p "$WORK/bin" "$WORK/home"
    cp "$NORMTUNE" "$TESTBIN" "$WORK/bin/"
    NORMTUNE=$WORK/bin/$(basename "$NORMTUNE")
    TESTBIN=$WORK/bin/$(basename "$TESTBIN")
    chown 65534:65534 "$WORK/home"
    chmod 755 "$WORK" "$WORK/bin" "$RO"
    chmod 644 "$GOOD" "$RO/tuning.db"
    export HOME=$WORK/home XDG_CACHE_HOME=$WORK/home/.cache POCL_CACHE_DIR=$WORK/home/pocl
  else
    chmod 555 "$RO"
  fi
  if ${AS[@]+"${AS[@]}"} test -w "$RO"; then
    fail "could not make $RO read-only for the test"
  fi
  if ! ${AS[@]+"${AS[@]}"} test -r "$GOOD" -a -x "$TESTBIN" -a -x "$NORMTUNE"; then
    fail "uid 65534 cannot reach $WORK (TMPDIR=${TMPDIR:-/tmp}): use a TMPDIR others can enter"
  fi
  # the library reads a database it cannot write (immutable), and uses its winners
  expect_rc 0 library ${AS[@]+"${AS[@]}"} "$TESTBIN" tuned "$RO/tuning.db"
  sed 's/^/   /' "$WORK/library.out"
  # a missing database there: the library falls back
  expect_rc 0 missing ${AS[@]+"${AS[@]}"} "$TESTBIN" fallback "$RO/none.db" "no tuning database" \
    "$GOOD"
  sed 's/^/   /' "$WORK/missing.out"
  # tune cannot store anything: it says so, exits 1, and leaves the database as it was
  expect_rc 1 tune_ro ${AS[@]+"${AS[@]}"} "$NORMTUNE" tune --db "$RO/tuning.db" \
    ${DEVICE_ARGS[@]+"${DEVICE_ARGS[@]}"} --ops layernorm --dtypes f32 --cols 256 --rows 64
  expect_in "$WORK/tune_ro.err" "read-only" "tune says the database cannot be written"
  expect_rc 1 tune_new ${AS[@]+"${AS[@]}"} "$NORMTUNE" tune --db "$RO/new.db" \
    ${DEVICE_ARGS[@]+"${DEVICE_ARGS[@]}"} --ops layernorm --dtypes f32 --cols 256 --rows 64
  expect_in "$WORK/tune_new.err" "directory '$RO' of the tuning database is read-only" \
    "tune says the directory is read-only"
  cmp -s "$RO/tuning.db" "$WORK/original" || fail "the read-only database changed"
  leftovers=$(ls -A "$RO" | grep -v '^tuning\.db$' || true)
  [[ -z $leftovers ]] || fail "files appeared in the read-only directory: $leftovers"
  chmod 755 "$RO"
  ;;
*)
  fail "unknown case '$CASE' (garbage, truncated, newer, stale, readonly)"
  ;;
esac
pass
