#!/usr/bin/env bash
# The kernels under Oclgrind: every case of test_oclgrind (see its top for how the cases are
# chosen) in its own oclgrind process, with
#   --data-races      races on global and local memory, within and across work-groups
#   --uninitialized   uses of uninitialized values (not at vector width 16: see below)
#   (always)          out-of-bounds reads and writes
#   --check-api       OpenCL API errors
#   --log FILE        the reports, one file per case: any report fails the test
# and its outputs checked against the float64 reference. Fails (never skips) when oclgrind is
# missing or lacks one of these options.
#
# Why one process per case: Oclgrind 21.10's uninitialized-value tracking reports false
# positives in a process once a buffer has been released while a command using it was still
# queued (legal OpenCL; the library does it with the backward pass's scratch buffer) and other
# buffers were freed since: the values read are right, the tracking is not. A fresh process per
# case avoids that and names the case of every report.
# Why not --uninitialized at width 16: the plugin reports initialized float16 values after the
# sums of their quarters (the kernels' horizontal sum at VEC 16; test_oclgrind --checks).
# Why CLNORM_STREAM_STORES=0/1 by case number: the kernels' stores are plain or streaming
# (-DSTREAM, on PoCL's CPU device); Oclgrind's clang takes __builtin_nontemporal_store (its
# --dump-spir shows the nontemporal stores), so odd cases check the streaming path, even ones the
# plain path the GPUs take; with STREAM the fused float16 add also rounds through
# vstore_half_rte, as on PoCL's CPU device. Why CLNORM_UNALIGNED=0/1 by case number (0 for cases
# 0, 1, 4, 5, ...): Oclgrind's device says it is a CPU, so its kernels would all take any row
# alignment through vloadN/vstoreN (-DUNALIGNED); the GPUs' kernels, which need aligned rows (the
# width narrowed to them), run in the other half. Why CLNORM_PREFETCH=0: Oclgrind 21.10 cannot run
# llvm.prefetch ("Undefined external function"), and a prefetch reads nothing it could check; the
# prefetching kernels run in every PoCL test instead. Why CLNORM_ROW_BUFFER=0/1 by case number (1
# in odd cases, with the streaming stores, as on PoCL's CPU device): the fused-add kernels of a CPU
# keep 16-bit rows in a private buffer (-DRBUF, cl/common.cl); Oclgrind's platform is not PoCL, so
# only the switch turns it on. Why CLNORM_REDUCE_VEC=1/16 by case number (1 for cases 4-7,
# 12-15, ...): the backward's column reduction of GPUs (groups of lanes over the partial rows, a
# local-memory sum behind a barrier) and of CPUs; Oclgrind's device says it is a CPU.
# Why --build-options -cl-opt-disable: with optimized kernels Oclgrind 21.10's uninitialized
# plugin crashes (SIGSEGV in Uninitialized::instructionExecuted) on vector code as plain as
# `float4 a = vload4(0, p); q[i] = a.s0 + a.s1;`. Unoptimized code performs every access the
# source makes, which is what the race and bounds checks should see.
#
#   bash tests/oclgrind.sh build/tests/test_oclgrind [FIRST [LAST]]    (cases FIRST..LAST)
# Environment: JOBS (default: the number of cores), KEEP=1 keeps the logs.
set -uo pipefail
prog=${1:?usage: oclgrind.sh TEST_OCLGRIND [FIRST [LAST]]}
if ! command -v oclgrind >/dev/null; then
  echo "oclgrind: FAIL: oclgrind is not installed (apt-get install oclgrind; scripts/deps.sh" \
       "installs it)"
  exit 1
fi
help=$(oclgrind --help 2>&1)
for opt in --data-races --uninitialized --check-api --log --build-options; do
  if ! grep -q -- "$opt" <<<"$help"; then
    echo "oclgrind: FAIL: this oclgrind ($(oclgrind --version 2>&1 | grep -m1 .)) has no $opt"
    exit 1
  fi
done
work=$(mktemp -d "${TMPDIR:-/tmp}/clnorm-oclgrind.XXXXXX")
[ "${KEEP:-0}" = 1 ] || trap 'rm -rf "$work"' EXIT
export CLNORM_TEST_DEVICE=oclgrind
# Oclgrind's platform only: the simulator replaces the ICD loader in the process.
count=$(oclgrind "$prog" --count 2>&1 | tail -n 1)
if ! [[ "$count" =~ ^[0-9]+$ ]] || [ "$count" -eq 0 ]; then
  echo "oclgrind: FAIL: test_oclgrind --count under oclgrind gave: $count"
  oclgrind "$prog" --count
  exit 1
fi
# 1: the case's uninitialized-value check is trustworthy; 0: it runs at vector width 16, where
# Oclgrind 21.10 reports initialized values (test_oclgrind.c says which code): no --uninitialized.
declare -A uninit
# (the width depends on CLNORM_UNALIGNED, which alternates by case: see the run below)
for u in 0 1; do
  while read -r i ok; do
    [ $(((i / 2) % 2)) = "$u" ] && uninit[$i]=$ok
  done < <(CLNORM_UNALIGNED=$u oclgrind "$prog" --checks 2>&1 | grep -E '^[0-9]+ [01]$')
done
if [ "${#uninit[@]}" -ne "$count" ]; then
  echo "oclgrind: FAIL: test_oclgrind --checks listed ${#uninit[@]} of $count cases"
  exit 1
fi
first=${2:-0}
last=${3:-$((count - 1))}
jobs=${JOBS:-$(nproc 2>/dev/null || echo 2)}
echo "oclgrind: $(oclgrind --version 2>&1 | grep -m1 .); cases $first..$last of $count," \
     "$jobs at a time"
start=$SECONDS
export prog work
for i in $(seq "$first" "$last"); do
  echo "$i ${uninit[$i]}"
done | xargs -P "$jobs" -L 1 bash -c '
  checks=(--data-races --check-api)
  [ "$1" = 1 ] && checks+=(--uninitialized)
  CLNORM_STREAM_STORES=$(($0 % 2)) CLNORM_UNALIGNED=$((($0 / 2) % 2)) CLNORM_PREFETCH=0 \
    CLNORM_ROW_BUFFER=$(($0 % 2)) CLNORM_REDUCE_VEC=$(( ($0 / 4) % 2 ? 1 : 16 )) \
    oclgrind "${checks[@]}" --build-options -cl-opt-disable --log "$work/$0.log" "$prog" \
    --case "$0" >"$work/$0.out" 2>&1
  echo $? >"$work/$0.rc"'
without=0
for i in $(seq "$first" "$last"); do
  [ "${uninit[$i]}" = 1 ] || without=$((without + 1))
done
failed=0
reported=0
for i in $(seq "$first" "$last"); do
  rc=$(cat "$work/$i.rc" 2>/dev/null || echo missing)
  if [ "$rc" != 0 ] || [ -s "$work/$i.log" ]; then
    failed=$((failed + 1))
    [ -s "$work/$i.log" ] && reported=$((reported + 1))
    if [ "$failed" -le 10 ]; then
      echo "---- case $i: exit status $rc, $(grep -c . "$work/$i.log" 2>/dev/null || echo 0)" \
           "lines of Oclgrind reports"
      grep -v "^test_oclgrind" "$work/$i.out" | head -n 20
      head -n 40 "$work/$i.log" 2>/dev/null
    fi
  fi
done
echo "oclgrind: $((last - first + 1)) cases in $((SECONDS - start)) s ($without at vector" \
     "width 16 without --uninitialized): $failed failed ($reported with Oclgrind reports)"
[ "$failed" -eq 0 ] && echo "oclgrind: PASS" || echo "oclgrind: FAIL"
[ "$failed" -eq 0 ]
