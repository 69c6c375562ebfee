#!/usr/bin/env bash
# Start-up cost: bench/startup.c in N fresh processes per case, medians of its figures (ms):
# opencl (platform, device, context, queue), ctx (clnorm_ctx_create), buffers, first_call
# (the first clnorm_layernorm until clFinish returns, program build or load included) and total
# (from the start of main, before clGetPlatformIDs, to the first completed call); second_call is
# the same call again, for scale: the kernel's own run and the enqueue.
#
#   bash scripts/startup.sh [N] [DEVICE]     # N runs per case (default 11); DEVICE as normtune's
#
# Cases, each with temporary compile caches (the tuning database is read from its usual place):
#   cold          empty clnorm binary cache, and the drivers' own caches off: PoCL's kernel cache
#                 (POCL_KERNEL_CACHE=0, and an empty POCL_CACHE_DIR per run: with the cache off
#                 alone, PoCL 3.1's first call here was at times 3 ms, at times 300 ms) and
#                 NVIDIA's compute cache (CUDA_CACHE_DISABLE=1), so that every run compiles
#   warm          clnorm's binary cache and the drivers' caches filled by one earlier run
#   clnorm only   clnorm's cache filled, the drivers' caches off (what clnorm's cache alone buys)
#   driver only   CLNORM_NO_BINARY_CACHE=1, the drivers' caches filled (start-up before issue 8)
# Environment: STARTUP=PATH (the startup binary; default: BUILD_DIR/startup, built when missing),
#   BUILD_DIR=DIR (default build-startup, in the checkout; Release), ROWS, COLS (default 256 x 1024).
# Exit status 1 when a run fails or its result or its cache behaviour is not the case's.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
runs=${1:-11}
device=${2:-}
rows=${ROWS:-256}
cols=${COLS:-1024}
build=${BUILD_DIR:-$root/build-startup}
bin=${STARTUP:-$build/startup}
if [ ! -x "$bin" ]; then
  cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release -DCLNORM_BUILD_TESTS=OFF >/dev/null
  cmake --build "$build" --target startup -j >/dev/null
fi
tmp=$(mktemp -d /tmp/clnorm-startup-XXXXXX)
trap 'rm -rf "$tmp"' EXIT
unset CLNORM_NO_BINARY_CACHE CLNORM_LOG

# one run: prints startup's line; $1 is a pattern its cache counters must match
one() {
  local want=$1
  shift
  local line
  line=$(env "$@" "$bin" "$device" "$rows" "$cols") || { echo "startup failed: $*" >&2; exit 1; }
  if ! grep -q "check=ok" <<<"$line" || ! grep -Eq "$want" <<<"$line"; then
    echo "unexpected run ($want): $line" >&2
    exit 1
  fi
  echo "$line"
}

median() { # field name, then lines on stdin
  tr ' ' '\n' | sed -n "s/^$1=//p" | sort -g |
    awk '{v[NR] = $1}
         END {if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2}'
}

report() { # case name, then lines on stdin
  local lines
  lines=$(cat)
  printf '%-12s' "$1"
  for f in opencl_ms ctx_ms buffers_ms first_call_ms total_ms second_call_ms; do
    printf ' %11.2f' "$(median $f <<<"$lines")"
  done
  printf '\n'
}

drivers_off=(POCL_KERNEL_CACHE=0 CUDA_CACHE_DISABLE=1)
drivers_on=(POCL_KERNEL_CACHE=1 "POCL_CACHE_DIR=$tmp/pocl" "CUDA_CACHE_PATH=$tmp/nv")
miss='cache_hits=0 cache_misses=[1-9]'
hit='cache_hits=[1-9][0-9]* cache_misses=0 cache_rejected=0'
off='cache_hits=0 cache_misses=0 cache_rejected=0 cache_written=0'

first=$(one "$miss" "${drivers_off[@]}" "POCL_CACHE_DIR=$tmp/pocl-first" \
  "CLNORM_BINARY_CACHE_DIR=$tmp/first")
echo "startup: $runs runs per case, layernorm $rows x $cols float32," \
  "${first#*device=}, $(date -u +%F)"
printf '%-12s %11s %11s %11s %11s %11s %11s   (medians, ms)\n' case opencl ctx buffers \
  first_call total second_call
for i in $(seq "$runs"); do
  one "$miss" "${drivers_off[@]}" "POCL_CACHE_DIR=$tmp/pocl-cold-$i" \
    "CLNORM_BINARY_CACHE_DIR=$tmp/cold-$i"
done | report cold

# fill clnorm's cache and the drivers' caches once
one "$miss" "${drivers_on[@]}" "CLNORM_BINARY_CACHE_DIR=$tmp/warm" >/dev/null
for i in $(seq "$runs"); do
  one "$hit" "${drivers_on[@]}" "CLNORM_BINARY_CACHE_DIR=$tmp/warm"
done | report warm
for i in $(seq "$runs"); do
  one "$hit" "${drivers_off[@]}" "POCL_CACHE_DIR=$tmp/pocl-only-$i" \
    "CLNORM_BINARY_CACHE_DIR=$tmp/warm"
done | report "clnorm only"
for i in $(seq "$runs"); do
  one "$off" "${drivers_on[@]}" CLNORM_NO_BINARY_CACHE=1
done | report "driver only"
