#!/usr/bin/env bash
# `test_numerics extreme` (rows of every magnitude, issue 25) on the GPU machine's NVIDIA device,
# one process per OP:DTYPE, all at once: NVIDIA's compiler builds each op and dtype's 60-170
# programs at 2-5 s each on the CPU's cores, so one op and dtype takes minutes.
#
#   source .device-kit/setup.sh && bash scripts/gpu_extreme.sh layernorm:f32 add_layernorm:f16:8x1001 ...
#
# OP:DTYPE runs every layout of the op and dtype; OP:DTYPE:ROWSxCOLS one of them (64x768, 8x1001,
# 4x16384), so that an op and dtype's programs spread over several processes;
# OP:DTYPE:ROWSxCOLS:NAME=VALUE,NAME=VALUE runs it with those environment variables set (e.g.
# CLNORM_RAW16=0), so that one call compares the library's switches on a failing case;
# OP:DTYPE:ROWSxCOLS:[ENV]:VARIANT[:plain] only the variants whose text (clnorm_variant_format)
# contains VARIANT, e.g. "wg=256 tpr=1 vec=16", no dispatcher; plain: with the default data.
# PTX=1: each process builds into its own binary cache, and every program it built goes to $OUT
# as ptx-ARG.tar.gz (NVIDIA's program binary is PTX text; with its key) and `ptxas -v`'s words
# on them in ptx-ARG.txt, for the last PTX_LAST programs (default 4) it built: a process that a
# fault ended built the failing case's programs last (ptxas takes about a second a program).
# Prints, per argument, the test's summary line or, where it failed or ran out of time, its
# failing lines; files in $OUT (or ./gpu-extreme). Environment: LIMIT (seconds per process,
# default 400), DEVICE (CLNORM_TEST_DEVICE, default NVIDIA), BUILD (default /tmp/build-extreme).
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
out=${OUT:-$root/gpu-extreme}
build=${BUILD:-/tmp/build-extreme}
mkdir -p "$out"
if [ $# -eq 0 ]; then
  echo "usage: gpu_extreme.sh OP:DTYPE[:ROWSxCOLS] ..." >&2
  exit 2
fi
# shellcheck source=scripts/gpu_build.sh
source "$root/scripts/gpu_build.sh"
TESTS=ON gpu_build "$build" test_numerics || exit 1
name() { local n=${1//:/-}; echo "${n//[=, ]/_}"; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
for c in "$@"; do
  IFS=: read -r op dt layout vars only plain <<<"$c"
  n=$(name "$c")
  envs=()
  [ -n "$vars" ] && IFS=, read -r -a envs <<<"$vars"
  [ "${PTX:-0}" = 1 ] && envs+=("CLNORM_BINARY_CACHE_DIR=$work/cache-$n")
  (env ${envs[@]+"${envs[@]}"} CLNORM_TEST_DEVICE="${DEVICE:-NVIDIA}" timeout "${LIMIT:-400}" \
     "$build/tests/test_numerics" extreme "$op" "$dt" ${layout:+"$layout"} ${only:+"$only"} \
     ${plain:+"$plain"} >"$out/$n.log" 2>&1
   echo "exit status $?" >>"$out/$n.log") &
done
wait
if [ "${PTX:-0}" = 1 ]; then
  ptxas=${PTXAS:-/usr/local/cuda/bin/ptxas}
  for c in "$@"; do
    n=$(name "$c")
    dir=$work/ptx-$n
    mkdir -p "$dir"
    # NNN.ptx and NNN.key, numbered in the order the process built them
    python3 "$root/scripts/bincache_ptx.py" --order mtime "$work/cache-$n" "$dir"
    for p in $(find "$dir" -name '*.ptx' | sort | tail -n "${PTX_LAST:-4}"); do
      echo "== $(basename "$p"): $(grep -oE -- '-D[A-Z0-9_]+=[0-9]+' "${p%.ptx}.key" | tr '\n' ' ')"
      "$ptxas" -arch="${ARCH:-sm_90}" -v "$p" -o /dev/null 2>&1
    done >"$out/ptx-$n.txt"
    # the last programs' PTX and keys (all of them are too big to come back from the machine)
    (cd "$work" && find "ptx-$n" -name '*.ptx' | sort | tail -n "${PTX_LAST:-4}" |
       sed 'p; s/\.ptx$/.key/' | tar -czf "$out/ptx-$n.tar.gz" -T -)
  done
fi
rc=0
for c in "$@"; do
  log=$out/$(name "$c").log
  if grep -q "PASS (0 failures)" "$log"; then
    echo "$c: $(grep 'PASS' "$log" | tail -n 1)"
  else
    rc=1
    echo "$c: NOT PASSED ($(tail -n 1 "$log"; echo); 124: out of time). Lines with failures:"
    grep -v ' 0 failed' "$log" | grep -v '^exit status' | tail -n 8
    echo "  ($(grep -c ' 0 failed' "$log") layouts passed before it stopped)"
  fi
done
exit $rc
