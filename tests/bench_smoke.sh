#!/usr/bin/env bash
# A short run of one program of bench/: it must exit 0 and print its figure (a line matching
# PATTERN), so a benchmark that crashes or prints nothing fails CI rather than waiting for someone
# to run it by hand (issue 24: dispatch_overhead had crashed unseen).
#   bash bench_smoke.sh PATTERN PROGRAM [ARGUMENTS...]
set -uo pipefail
if [[ $# -lt 2 ]]; then
  echo "usage: bash $0 PATTERN PROGRAM [ARGUMENTS...]" >&2
  exit 2
fi
pattern=$1
shift
out=$("$@" 2>&1)
rc=$?
printf '%s\n' "$out"
if [[ $rc -ne 0 ]]; then
  echo "FAIL [bench_smoke]: $* exited with $rc" >&2
  exit 1
fi
if ! grep -Eq "$pattern" <<<"$out"; then
  echo "FAIL [bench_smoke]: $* printed no line matching /$pattern/" >&2
  exit 1
fi
