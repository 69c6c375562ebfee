#!/usr/bin/env bash
# Builds the libFuzzer targets of tests/fuzz with clang (CLNORM_FUZZ=ON: libFuzzer, ASan, UBSan)
# and runs each for FUZZ_SECONDS (default 30) on a copy of its corpus; fails when any finds a
# crash, a leak, undefined behaviour or a failed check (docs/TESTING.md says what each covers).
#   bash scripts/fuzz.sh                             # every target
#   FUZZ_SECONDS=600 bash scripts/fuzz.sh fuzz_db    # one, longer
# A failing input is left in FUZZ_DIR/artifacts/<target>/; rerun it with
# FUZZ_DIR/build/tests/fuzz/<target> FILE, and after the fix keep it in tests/fuzz/corpus_<name>/
# as a regression input.
# Environment: FUZZ_DIR (default build-fuzz, in the checkout) holds the build, the corpus copies and the
# logs; FUZZ_JOBS the build's parallel jobs; FUZZ_CC the clang to use (default clang; CC is not
# read, CI may set it to gcc for the other steps); FUZZ_WERROR=OFF lets a clang-only warning
# through (the build is -Werror otherwise, as CI's).
set -uo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
bash scripts/deps.sh || exit 1
# PoCL alone under the tools: with mesa-opencl-icd installed (scripts/deps.sh, for the Rusticl
# tests) the loader would start Mesa's Rusticl and Clover in every process, and Rusticl leaks at
# start-up (72 bytes from load_screens in clGetPlatformIDs, valgrind 2026-11-26).
if [ -z "${OCL_ICD_VENDORS:-}" ] && [ -f /etc/OpenCL/vendors/pocl.icd ]; then
  export OCL_ICD_VENDORS=/etc/OpenCL/vendors/pocl.icd
fi
seconds=${FUZZ_SECONDS:-30}
dir=${FUZZ_DIR:-$root/build-fuzz}
jobs=${FUZZ_JOBS:-$(nproc 2>/dev/null || echo 2)}
cc=${FUZZ_CC:-clang}
targets=("$@")
[ ${#targets[@]} -eq 0 ] && targets=(fuzz_import fuzz_db fuzz_variant)
case $cc in
*clang*) ;;
*) echo "fuzz: FUZZ_CC=$cc is not clang; libFuzzer needs clang" >&2; exit 2 ;;
esac
if ! command -v "$cc" >/dev/null; then
  echo "fuzz: $cc not found (scripts/deps.sh installs clang)" >&2
  exit 1
fi
mkdir -p "$dir"
# the targets' databases: in memory where possible, removed even after a crash
FUZZ_TMPDIR=$(mktemp -d /dev/shm/clnorm-fuzz.XXXXXX 2>/dev/null || mktemp -d)
export FUZZ_TMPDIR
trap 'rm -rf "$FUZZ_TMPDIR"' EXIT
start=$SECONDS
if ! log=$(cmake -S "$root" -B "$dir/build" -DCMAKE_C_COMPILER="$cc" \
             -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCLNORM_FUZZ=ON \
             -DCLNORM_WERROR="${FUZZ_WERROR:-ON}" -DCLNORM_BUILD_TESTS=OFF 2>&1 &&
           cmake --build "$dir/build" -j"$jobs" --target "${targets[@]}" 2>&1); then
  echo "$log" | tail -n 40
  echo "fuzz: the build in $dir/build failed" >&2
  exit 1
fi
echo "fuzz: built ${targets[*]} in $((SECONDS - start)) s"

status=0
# run_target: fuzz target $t on $corpus for $seconds s (LSAN_OPTIONS $lsan), log in $dir/$t.log
run_target() {
  # detect_leaks: LeakSanitizer after each input that allocates more than it frees, and at exit
  ASAN_OPTIONS=detect_leaks=1:allocator_may_return_null=1 LSAN_OPTIONS=$lsan \
  UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
    "$dir/build/tests/fuzz/$t" -max_total_time="$seconds" -max_len=$max_len -len_control=20 \
      -timeout=25 -rss_limit_mb=2048 -print_final_stats=1 -artifact_prefix="$dir/artifacts/$t/" \
      "$corpus" >"$dir/$t.log" 2>&1
}

for t in "${targets[@]}"; do
  corpus=$dir/corpus/$t
  rm -rf "$corpus" "$dir/artifacts/$t"
  mkdir -p "$corpus" "$dir/artifacts/$t"
  seeds=$root/tests/fuzz/corpus_${t#fuzz_}
  [ -d "$seeds" ] && cp "$seeds"/* "$corpus"/ 2>/dev/null
  # fuzz_db's inputs are edit scripts: let them grow to a few dozen edits early in a short run
  max_len=4096
  [ "$t" = fuzz_db ] && max_len=1024
  echo "fuzz: $t for $seconds s"
  # fuzz_variant runs PoCL, whose kernel compiler leaks (tests/fuzz/lsan.supp says how those
  # leaks are told from clnorm's)
  lsan=
  [ "$t" = fuzz_variant ] && lsan=suppressions=$root/tests/fuzz/lsan.supp:print_suppressions=0
  run_target
  rc=$?
  # LeakSanitizer's own stop-the-world tracer has crashed twice in fuzz_variant's PoCL threads
  # ("Tracer caught signal 11", then "LeakSanitizer has encountered a fatal error"; docs/TESTING.md):
  # a crash of the sanitizer, not a finding (a leak reads "detected memory leaks"). The target
  # runs once more, saying so; a second crash, or any other failure, fails the step.
  if [ $rc -ne 0 ] && grep -q 'LeakSanitizer has encountered a fatal error' "$dir/$t.log" &&
    ! grep -q 'detected memory leaks' "$dir/$t.log"; then
    echo "fuzz: $t: LeakSanitizer's tracer crashed (not a finding; the log's end below); once more"
    tail -n 12 "$dir/$t.log" | sed 's/^/  | /'
    rm -rf "${dir:?}/artifacts/$t" && mkdir -p "$dir/artifacts/$t"
    run_target
    rc=$?
  fi
  grep -E '^(stat::number_of_executed_units|stat::average_exec_per_sec|#[0-9]+ +DONE)' \
    "$dir/$t.log" | sed 's/^/  /'
  if [ $rc -ne 0 ]; then
    echo "fuzz: $t FAILED (exit status $rc); the end of $dir/$t.log:"
    tail -n 60 "$dir/$t.log"
    ls "$dir/artifacts/$t"
    status=1
  fi
done
echo "fuzz: $([ $status -eq 0 ] && echo PASS || echo FAIL) in $((SECONDS - start)) s"
exit $status
