#!/usr/bin/env bash
# The test suite under tools, each in a build directory of its own:
#   1. AddressSanitizer + UndefinedBehaviorSanitizer (-fno-sanitize-recover: any UB fails), the
#      suite without the `slow`, `oclgrind`, `shim` and `rusticl` labels and three tests whose
#      host code the others run (asan_skip, below) (Oclgrind and the
#      database fault shim are LD_PRELOADed, and ASan's runtime must come first; the tools look
#      at clnorm on PoCL alone, below);
#   2. ThreadSanitizer: the multi-threaded tests (threads, normtune's parallel tuning in
#      tuner_concurrent and tuner_tune_dispatch, log's trace lines from the OpenCL runtime's
#      threads) and test_variants' parallel pre-build (CLNORM_TEST_QUICK=1, every 4th variant);
#   3. Valgrind memcheck (--leak-check=full --error-exitcode=1) on the library's test
#      executables, a plain build, as many at once as there are cores;
#   4. the kernels under Oclgrind (tests/oclgrind.sh, the `oclgrind` ctest label).
# Suppressions (tests/lsan.supp, tests/tsan.supp, tests/valgrind.supp) cover only PoCL, its LLVM
# and the OpenCL ICD loader, each entry with its reason. Exits non-zero when any step fails; every
# step runs, and a summary with each step's time ends the output.
#   bash scripts/check_tools.sh                   # all four
#   bash scripts/check_tools.sh asan tsan         # some: asan tsan valgrind oclgrind
# Environment: TOOLS_DIR (default build-tools, in the checkout) holds the builds; CC picks the compiler
# (gcc or clang); CLNORM_TEST_DEVICE as for the tests.
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
dir=${TOOLS_DIR:-$root/build-tools}
mkdir -p "$dir"
jobs=$(nproc 2>/dev/null || echo 2)
steps=("$@")
[ ${#steps[@]} -eq 0 ] && steps=(asan tsan valgrind oclgrind)
if ! clinfo -l 2>/dev/null | grep -q Device; then
  echo "check_tools: FAIL: no OpenCL device (clinfo -l lists none)" >&2
  exit 1
fi

# The programs the tests build are cached here, not in the user's ~/.cache/clnorm.
export CLNORM_BINARY_CACHE_DIR=${CLNORM_BINARY_CACHE_DIR:-$dir/binary-cache}

summary=()
status=0
run_step() { # NAME COMMAND...: runs, times, records
  local name=$1 start=$SECONDS rc=0
  shift
  echo
  echo "== $name"
  "$@" || rc=$?
  local took=$((SECONDS - start))
  if [ $rc -eq 0 ]; then
    summary+=("PASS  $name  ${took} s")
  else
    summary+=("FAIL  $name  ${took} s (exit status $rc)")
    status=1
  fi
}

# configure and build DIR with extra C flags (quiet unless it fails)
build() {
  local build_dir=$1 flags=$2 log
  if ! log=$(cmake -S "$root" -B "$build_dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCLNORM_WERROR=ON \
               "-DCMAKE_C_FLAGS=$flags" "-DCMAKE_EXE_LINKER_FLAGS=$flags" \
               "-DCMAKE_SHARED_LINKER_FLAGS=$flags" 2>&1 &&
             cmake --build "$build_dir" -j"$jobs" 2>&1); then
    echo "$log" | tail -n 40
    echo "check_tools: the build in $build_dir failed"
    return 1
  fi
}

asan() {
  build "$dir/asan" "-fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer -g" ||
    return 1
  # fast_unwind_on_malloc=0: PoCL has no frame pointers; the slow unwinder gives leaks their
  # whole stack, which tests/lsan.supp's entries need to tell PoCL's own leaks from clnorm's.
  # intercept_tls_get_addr=0: the runtime of GCC <= 13 and LLVM <= 16 takes some of glibc >= 2.25's
  # dynamic TLS blocks for glibc 2.19 ones and LeakSanitizer's tracer then dies at exit ("Tracer
  # caught signal 11", intermittently; google/sanitizers#1322)
  ASAN_OPTIONS=detect_leaks=1:fast_unwind_on_malloc=0:intercept_tls_get_addr=0:strict_string_checks=1:detect_stack_use_after_return=1 \
  LSAN_OPTIONS=suppressions=$root/tests/lsan.supp:print_suppressions=0 \
  UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
    ctest --test-dir "$dir/asan" -LE 'slow|oclgrind|shim|bench|rusticl' -E "$asan_skip" -j"$jobs" \
    --output-on-failure
}

# Left out of the ASan run: tests whose host code another test there runs, and which differ from it
# in the kernels' build options only (the plain suite runs them): random_aligned (random's, with
# CLNORM_UNALIGNED=0), ops_backward_gpu_reduce (ops_backward's, with CLNORM_REDUCE_VEC=1) and
# numerics (the harness's checks of random's and ops_*'s cases, on other data); and two tuner
# tests whose code the other tuner tests run, and which ASan slows most for their waits and
# repeats (tuner_bad_readonly 171 s under ASan in CI's run of 2026-12-07, 21 s plain here, and
# tuner_replace 81 s: a read-only database's open and the file replaced under running processes,
# which the plain suite checks). CI's 60 minutes on 2 cores (docs/TESTING.md).
asan_skip='^(random_aligned|ops_backward_gpu_reduce|numerics|tuner_bad_readonly|tuner_replace)$'

tsan() {
  build "$dir/tsan" "-fsanitize=thread -fno-omit-frame-pointer -g" || return 1
  # TSan needs a narrow address space layout: without ASLR where the kernel randomizes more bits
  # than its runtime accepts ("unexpected memory mapping")
  local norand=()
  if setarch "$(uname -m)" -R true 2>/dev/null; then
    norand=(setarch "$(uname -m)" -R)
  fi
  export TSAN_OPTIONS="halt_on_error=1:second_deadlock_stack=1:suppressions=$root/tests/tsan.supp"
  local rc=0
  "${norand[@]}" ctest --test-dir "$dir/tsan" -R '^(threads|tuner_concurrent|tuner_tune_dispatch)$' \
    -j"$jobs" --output-on-failure || rc=1
  # every 4th variant: some 300 programs through the pre-build's threads (all 1028 took most of
  # the step's 4 minutes in a CI rehearsal, 2026-11-29)
  echo "test_variants layernorm (CLNORM_TEST_QUICK=1 CLNORM_TEST_VARIANT_STEP=4: its parallel" \
       "pre-build, quick shapes)"
  local out r=0
  out=$(CLNORM_TEST_QUICK=1 CLNORM_TEST_VARIANT_STEP=4 "${norand[@]}" \
          "$dir/tsan/tests/test_variants" layernorm 2>&1) || r=$?
  if [ $r -ne 0 ]; then
    echo "$out" | tail -n 60
    rc=1
  else
    echo "$out" | tail -n 1
  fi
  return $rc
}

# valgrind_case NAME CMD: one case under memcheck; its report in $dir/valgrind-NAME.log, its
# verdict ("  valgrind NAME: clean (S s)", or a FAIL line and the report's last lines) printed and
# kept in $dir/valgrind-NAME.verdict.
valgrind_case() {
  local name=$1 cmd=$2 start=$SECONDS r=0
  # shellcheck disable=SC2086 # cmd is a command line
  valgrind --tool=memcheck --leak-check=full --error-exitcode=99 \
    --suppressions="$root/tests/valgrind.supp" --num-callers=50 $cmd >"$dir/valgrind-$name.log" 2>&1 ||
    r=$?
  # test_big_index exits 77 where the device cannot hold its buffers: not a memcheck failure
  if [ $r -eq 0 ] || { [ "$name" = big_index ] && [ $r -eq 77 ]; }; then
    echo "  valgrind $name: clean ($((SECONDS - start)) s)" >"$dir/valgrind-$name.verdict"
  else
    {
      echo "  valgrind $name: FAIL (exit status $r, 99: memcheck errors)"
      grep -v -E '^==[0-9]+==' "$dir/valgrind-$name.log" | tail -n 10
    } >"$dir/valgrind-$name.verdict"
  fi
  cat "$dir/valgrind-$name.verdict" # as each case ends (one write: the lines do not interleave)
}

valgrind_step() {
  build "$dir/plain" "" || return 1
  local rc=0 t="$dir/plain/tests" failed=()
  # name: command. Short runs: memcheck is some 30 times slower, PoCL's kernel compiler included
  # (test_threads' 1600 calls would take over 10 minutes: ThreadSanitizer covers it; test_random's
  # cases take about 60 s each on 2 cores, so 2 of them: the suite runs 3,500 without memcheck).
  # Memcheck runs a process's threads one at a time: the cases run $jobs at once, longest first.
  local -a cases=(
    "args:$t/test_args"
    "random:$t/test_random --cases 2"
    "shared_lib:$t/test_shared_lib"
    "db:$t/test_db"
    "example:$dir/plain/clnorm_example_minimal"
    "big_index:$t/test_big_index"
  )
  local c name running=0
  for c in "${cases[@]}"; do
    name=${c%%:*}
    rm -f "$dir/valgrind-$name.verdict"
    if [ "$running" -ge "$jobs" ]; then
      wait -n || true
      running=$((running - 1))
    fi
    valgrind_case "$name" "${c#*:}" &
    running=$((running + 1))
  done
  wait
  # the verdict files decide (each was printed as its case ended)
  for c in "${cases[@]}"; do
    name=${c%%:*}
    if ! grep -q ': clean (' "$dir/valgrind-$name.verdict" 2>/dev/null; then
      [ -f "$dir/valgrind-$name.verdict" ] || echo "  valgrind $name: FAIL (no verdict)"
      failed+=("$name")
      rc=1
    fi
  done
  # Last, so that the end of a CI log (often all one gets to see of it) shows it: each error of
  # each failed case, its first line and top frames (the whole report: $dir/valgrind-NAME.log).
  for name in "${failed[@]}"; do
    echo "  valgrind $name: the errors (first 14 lines of each, at most 12 errors; all of them in" \
         "$dir/valgrind-$name.log)"
    awk '/ERROR SUMMARY|definitely lost:|indirectly lost:|possibly lost:/ { print; next }
         /^==[0-9]+== *$/ { if (n) { blocks++ }; n = 0; next }
         /^==[0-9]+==/ && blocks < 40 {
           if (n == 0 && ($0 ~ /(Invalid|uninitialised|Conditional|Mismatched|lost in loss|Syscall|overlap|free)/)) { shown++; keep = shown <= 12 }
           else if (n == 0) keep = 0
           if (keep && n < 14) print
           n++ }' \
      "$dir/valgrind-$name.log"
  done
  return $rc
}

oclgrind_step() {
  build "$dir/plain" "" || return 1
  ctest --test-dir "$dir/plain" -L oclgrind --output-on-failure
}

for s in "${steps[@]}"; do
  case $s in
  asan) run_step "AddressSanitizer + UndefinedBehaviorSanitizer: ctest -LE 'slow|oclgrind|shim|bench|rusticl' -E '$asan_skip'" asan ;;
  tsan) run_step "ThreadSanitizer: the multi-threaded tests" tsan ;;
  valgrind) run_step "Valgrind memcheck: the test executables" valgrind_step ;;
  oclgrind) run_step "Oclgrind: ctest -L oclgrind" oclgrind_step ;;
  *)
    echo "check_tools: unknown step $s (asan tsan valgrind oclgrind)" >&2
    exit 2
    ;;
  esac
done
echo
echo "== check_tools summary"
printf '%s\n' "${summary[@]}"
[ $status -eq 0 ] && echo "check_tools: PASS" || echo "check_tools: FAIL"
exit $status
