#!/usr/bin/env bash
# Set-up, a build with warnings as errors, and the tests on the OpenCL devices found (PoCL at
# least): the quick set by default (ctest -L quick), every test with --full. Fails when no OpenCL
# platform is found: the tests never pass by skipping.
#   bash scripts/test.sh                  # the quick set: minutes
#   bash scripts/test.sh --full           # every test (what .ci/run runs)
#   bash scripts/test.sh -L unit          # further arguments go to ctest; a selection of its
#                                         # own (-L, -LE, -R, -E, -I) replaces -L quick
#   BUILD_DIR=/tmp/b CLNORM_TEST_DEVICE=gpu bash scripts/test.sh
set -euo pipefail
cd "$(dirname "$0")/.."
select=(-L quick)
if [[ ${1:-} == --full ]]; then
  select=()
  shift
fi
for arg in "$@" ${CTEST_ARGS:-}; do
  case $arg in
    -L* | -R* | -E* | -I* | --label-* | --tests-*) select=() ;;
  esac
done
bash scripts/deps.sh
build=${BUILD_DIR:-build-test}
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCLNORM_WERROR=ON >/dev/null
cmake --build "$build" -j"$(nproc)"
devices=$(clinfo -l 2>&1 || true)
if ! grep -q "Device" <<<"$devices"; then
  echo "clnorm: no OpenCL platform or device found (clinfo -l lists none): failing" >&2
  echo "$devices" >&2
  exit 1
fi
echo "$devices"
# The programs the tests build are cached in the build directory, not in the user's
# ~/.cache/clnorm (the suite builds thousands: some 200 MB on PoCL).
case $build in /*) cache=$build/binary-cache ;; *) cache=$(pwd)/$build/binary-cache ;; esac
export CLNORM_BINARY_CACHE_DIR=${CLNORM_BINARY_CACHE_DIR:-$cache}
# shellcheck disable=SC2086 # CTEST_ARGS is a list of words
ctest --test-dir "$build" --output-on-failure -j"$(nproc)" ${select[@]+"${select[@]}"} \
  ${CTEST_ARGS:-} "$@"
