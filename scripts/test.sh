#!/usr/bin/env bash
# Set-up, a build with warnings as errors, and the whole test suite on the OpenCL devices found
# (PoCL at least). Fails when no OpenCL platform is found: the tests never pass by skipping.
#   bash scripts/test.sh                  # everything
#   bash scripts/test.sh -L unit          # further arguments go to ctest
#   BUILD_DIR=/tmp/b CLNORM_TEST_DEVICE=gpu bash scripts/test.sh
set -euo pipefail
cd "$(dirname "$0")/.."
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
ctest --test-dir "$build" --output-on-failure -j"$(nproc)" ${CTEST_ARGS:-} "$@"
