# shellcheck shell=bash
# Sourced by the GPU-machine scripts (bench_gpu.sh, tune_gpu.sh, env_sweep.sh, gpu_explore.sh):
#   gpu_build DIR TARGET...    a Release build of the targets in DIR (tests off; TESTS=ON: on,
#                              for test targets), configured once; prints the build's output and
#                              returns 1 when it fails, silent when it succeeds.
# shellcheck disable=SC2154 # root: the repository root, set by the script that sources this
gpu_build() {
  local dir=$1 log
  shift
  if ! log=$(cmake -S "$root" -B "$dir" -DCMAKE_BUILD_TYPE=Release -DCLNORM_BUILD_TESTS="${TESTS:-OFF}" 2>&1 &&
             cmake --build "$dir" -j"$(nproc)" --target "$@" 2>&1); then
    echo "$log" >&2
    echo "gpu_build: building $* in $dir failed" >&2
    return 1
  fi
}
