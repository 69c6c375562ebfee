#!/usr/bin/env bash
# normtune doctor: its sections and documented exit statuses on a good database (0), a missing
# one (3), stale results (3), a read-only one (3), an unreadable one (5), a garbage file (5), and
# with no OpenCL platform (4); the read-only system database found (its results counted),
# missing, off, and damaged (3: the library skips it); every warning and problem comes with a line
# saying what to do.
source "$(dirname "$0")/common.sh"
GOOD=$WORK/good.db
# the binary cache's directory, so that the test does not look into the user's
export CLNORM_BINARY_CACHE_DIR=$WORK/bins
# nor into a system database installed here (the steps below name their own)
export CLNORM_SYSTEM_DB=$WORK/no-system.db

# doctor NAME RC [ARGS...]: runs normtune doctor ARGS with the status wanted; every WARNING and
# PROBLEM line must be followed by a "what to do" line; the last line gives the status.
doctor() {
  local name=$1 rc=$2
  shift 2
  expect_rc "$rc" "$name" ${AS[@]+"${AS[@]}"} "$NORMTUNE" doctor "$@"
  awk '/^  (WARNING|PROBLEM): /{want=1; next} want && !/^    what to do: /{bad=1} {want=0}
       END{exit bad}' "$WORK/$name.out" || fail "doctor $*: a finding without a 'what to do' line"
  if [[ $rc -eq 0 ]]; then
    expect_in "$WORK/$name.out" '^doctor: all fine \(exit status 0\)$' "doctor $* sums up"
  else
    expect_in "$WORK/$name.out" "^doctor: .*\\(exit status $rc: " "doctor $* sums up"
  fi
}
AS=()

step "a good database"
tune "$GOOD" tune
# tune may have cached its programs there already: add two files, count what is there
mkdir -p "$WORK/bins"
head -c 3000 /dev/zero >"$WORK/bins/doctor-test-a.bin"
head -c 5000 /dev/zero >"$WORK/bins/doctor-test-b.bin"
bin_files=$(find "$WORK/bins" -maxdepth 1 -type f ! -name '.*' | wc -l)
doctor good 0 --db "$GOOD"
out=$WORK/good.out
expect_in "$out" '^OpenCL ICD loader$' "doctor has an ICD section"
expect_in "$out" '^    .*\.icd -> ' "doctor shows the library each .icd file names"
expect_in "$out" "^  platform 0: ${CLNORM_TEST_PLATFORM:-Portable Computing Language} .*OpenCL" \
  "doctor lists the platform with its version"
expect_in "$out" '^    device 0 \(--device 0\): ' "doctor lists the device"
expect_in "$out" '; driver [^;]+; OpenCL C ' "doctor gives the device's driver and C versions"
expect_in "$out" "^  path: $GOOD \\(from --db\\)$" "doctor names the database"
expect_in "$out" '^  exists: .*, readable, writable; directory .* writable$' "doctor's access line"
expect_in "$out" '^  schema version [0-9]+ ' "doctor gives the schema version"
expect_in "$out" \
  '^  results per device \(current kernels: [0-9a-f]{16} forward, [0-9a-f]{16} backward\)$' \
  "doctor names the kernel hash of each program family"
expect_in "$out" ': [0-9]+ results, 1 shapes tuned with these kernels; this machine.s device$' \
  "doctor counts the results of this device"
expect_in "$out" "^  directory: $WORK/bins \\(from \\\$CLNORM_BINARY_CACHE_DIR\\)$" \
  "doctor names the binary cache's directory"
expect_in "$out" "^  $bin_files files, [0-9]+\\.[0-9] MiB; writable\$" \
  "doctor gives the binary cache's size"
sed 's/^/   /' "$out"

step "the read-only system database: found and counted, missing, off, damaged (3)"
expect_in "$out" '^System tuning database \(read-only, consulted after the user.s\)$' \
  "doctor has a system database section"
AS=(env CLNORM_SYSTEM_DB="$GOOD")
doctor system_found 0 --db "$GOOD"
expect_in "$WORK/system_found.out" "^  path: $GOOD \\(from \\\$CLNORM_SYSTEM_DB\\)$" \
  "doctor names the system database and where its path came from"
found="^  found: [1-9][0-9]* results, [1-9][0-9]* of them winners for this machine's devices"
expect_in "$WORK/system_found.out" "$found with .*; opened read-only \\(immutable\\)$" \
  "doctor counts the system database's results"
AS=(env CLNORM_SYSTEM_DB="$WORK/no-system.db")
doctor system_missing 0 --db "$GOOD"
expect_in "$WORK/system_missing.out" "^  path: $WORK/no-system.db \\(from " "the missing one's path"
expect_in "$WORK/system_missing.out" '^  not found: ' "doctor says the system database is not there"
AS=(env CLNORM_SYSTEM_DB=)
doctor system_off 0 --db "$GOOD"
expect_in "$WORK/system_off.out" '^  none: \$CLNORM_SYSTEM_DB is empty$' "doctor: system database off"
for i in $(seq 100); do echo "clnorm test $i: not an SQLite database"; done >"$WORK/system.db"
AS=(env CLNORM_SYSTEM_DB="$WORK/system.db")
doctor system_damaged 3 --db "$GOOD"
expect_in "$WORK/system_damaged.out" '^  found, and skipped as damaged: the library does not use it$' \
  "doctor says the damaged system database is skipped"
expect_in "$WORK/system_damaged.out" \
  "WARNING: the system tuning database $WORK/system.db cannot be read: .*(corrupt|not a database)" \
  "doctor says why"
AS=()

step "a missing database: 3, and it is not created"
doctor missing 3 --db "$WORK/sub/none.db"
expect_in "$WORK/missing.out" "^  does not exist; $WORK is writable$" "doctor says it is missing"
expect_in "$WORK/missing.out" \
  'what to do: run `normtune tune --budget 600 --db '"$WORK/sub/none.db"'`' \
  "doctor says how to create it"
[[ ! -e $WORK/sub ]] || fail "doctor created $WORK/sub"

step "stale results (another driver version): 3"
expect_rc 0 export "$NORMTUNE" export "$WORK/good.json" --db "$GOOD"
sed 's/"driver_version": "[^"]*"/"driver_version": "0.0-clnorm-test-old-driver"/' \
  "$WORK/good.json" >"$WORK/stale.json"
expect_rc 0 import "$NORMTUNE" import "$WORK/stale.json" --db "$WORK/stale.db"
doctor stale 3 --db "$WORK/stale.db"
expect_in "$WORK/stale.out" \
  'WARNING: [0-9]+ stored results of .* are stale and not used \([0-9]+: driver changed, 0: kern' \
  "doctor says the results are stale"
expect_in "$WORK/stale.out" '0\.0-clnorm-test-old-driver.*same model as a device here' \
  "doctor tells the old driver's results from this device's"
expect_in "$WORK/stale.out" 'WARNING: no device of this machine has tuned results' \
  "doctor says nothing here is tuned"

step "a garbage file: 5"
for i in $(seq 100); do echo "clnorm test $i: not an SQLite database"; done >"$WORK/garbage.db"
cp "$WORK/garbage.db" "$WORK/garbage.copy"
doctor garbage 5 --db "$WORK/garbage.db"
expect_in "$WORK/garbage.out" "PROBLEM: .*garbage.db.*(corrupt|not a database)" \
  "doctor says the file is not a database"
expect_in "$WORK/garbage.out" 'what to do: run `normtune tune`: it moves a corrupt file' \
  "doctor says how to repair it"
cmp -s "$WORK/garbage.db" "$WORK/garbage.copy" || fail "doctor changed the garbage file"

step "no OpenCL platform (OCL_ICD_VENDORS names an empty directory): 4"
mkdir "$WORK/no-vendors"
OCL_ICD_VENDORS=$WORK/no-vendors OCL_ICD_FILENAMES= doctor no_opencl 4 --db "$GOOD"
expect_in "$WORK/no_opencl.out" "^  OCL_ICD_VENDORS=$WORK/no-vendors: " \
  "doctor shows OCL_ICD_VENDORS"
expect_in "$WORK/no_opencl.out" "^    $WORK/no-vendors: no \\.icd file$" "doctor lists no ICD file"
expect_in "$WORK/no_opencl.out" 'PROBLEM: no OpenCL platform found' "doctor says no platform"
expect_in "$WORK/no_opencl.out" 'what to do: install an OpenCL driver' "and what to do"

step "a read-only database, then an unreadable one"
RO=$WORK/ro
mkdir "$RO"
cp "$GOOD" "$RO/tuning.db"
if [[ $(id -u) -eq 0 ]]; then
  # root reads and writes everything: run these cases as nobody (as bad_db.sh readonly does)
  if ! command -v setpriv >/dev/null || ! setpriv --reuid=65534 --regid=65534 --clear-groups \
    -- true; then
    echo "   (root without a working setpriv: the read-only and unreadable cases are skipped)"
    pass
    exit 0
  fi
  AS=(setpriv --reuid=65534 --regid=65534 --clear-groups --)
  mkdir -p "$WORK/bin" "$WORK/home"
  cp "$NORMTUNE" "$WORK/bin/"
  NORMTUNE=$WORK/bin/$(basename "$NORMTUNE")
  chown 65534:65534 "$WORK/home"
  chmod 755 "$WORK" "$WORK/bin"
  export HOME=$WORK/home XDG_CACHE_HOME=$WORK/home/.cache POCL_CACHE_DIR=$WORK/home/pocl
fi
chmod 444 "$RO/tuning.db"
chmod 555 "$RO"
${AS[@]+"${AS[@]}"} test -w "$RO/tuning.db" && fail "could not make $RO/tuning.db read-only"
doctor readonly 3 --db "$RO/tuning.db"
expect_in "$WORK/readonly.out" '^  exists: .*, readable, NOT writable; directory .* NOT writable$' \
  "doctor's access line says read-only"
expect_in "$WORK/readonly.out" 'WARNING: the database is read-only: normtune tune cannot store' \
  "doctor says tune cannot store"
expect_in "$WORK/readonly.out" 'this machine.s device$' "doctor still reads the results"
chmod 755 "$RO"
chmod 000 "$RO/tuning.db"
doctor unreadable 5 --db "$RO/tuning.db"
expect_in "$WORK/unreadable.out" 'NOT readable' "doctor's access line says unreadable"
expect_in "$WORK/unreadable.out" "PROBLEM: $RO/tuning.db cannot be read" "doctor says so"
expect_in "$WORK/unreadable.out" 'what to do: give yourself read access' "and what to do"
chmod 644 "$RO/tuning.db"
pass
