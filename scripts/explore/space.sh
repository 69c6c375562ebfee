#!/usr/bin/env bash
# Sourced by a GPU call's script (carry .device-kit): every variant of a few shapes, timed.
#   source scripts/explore/space.sh     # builds normtune in build-bench; $nt is it
#   space_build OPS DTYPES COLS         # their programs, 8 processes of normtune build
#   space_tune OUT_DB SECS OP:DTYPE:ROWSxCOLS...   # normtune tune --strategy exhaustive, each cut
#                                                  # at SECS; log beside OUT_DB
#   space_show OUT_DB                   # normtune show into OUT_DB's .txt, the database gzipped
root=${root:-$PWD} # gpu_build's source tree
# shellcheck disable=SC1091
source .device-kit/setup.sh
# shellcheck source=scripts/gpu_build.sh
source scripts/gpu_build.sh
gpu_build "$root/build-bench" normtune >/dev/null 2>&1 || { echo "build failed"; exit 1; }
nt=$root/build-bench/normtune
export CLNORM_NO_BINARY_CACHE=0

space_build() {
  gpu_build_parts "$nt" 8 60 --device NVIDIA --ops "$1" --dtypes "$2" --cols "$3" >/dev/null
}

space_tune() {
  local db=$1 secs=$2 c op dt s
  shift 2
  for c in "$@"; do
    IFS=: read -r op dt s <<<"$c"
    timeout "$secs" "$nt" tune --device NVIDIA --db "$db" --ops "$op" --dtypes "$dt" \
      --cols "${s#*x}" --rows "${s%x*}" --strategy exhaustive >>"${db%.db}-log.txt" 2>&1
    echo "space $c rc=$?"
  done
}

space_show() {
  "$nt" show --device NVIDIA --db "$1" >"${1%.db}.txt" 2>&1
  gzip -f "$1"
  cat "${1%.db}.txt"
}
