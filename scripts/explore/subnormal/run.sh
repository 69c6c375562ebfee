#!/usr/bin/env bash
# On the CPU device (PoCL): build the subnormal measurement against a library build and run it
# (issue 25, point 4; results: docs/DEVICES.md, "subnormal inputs"). Not built by CMake or CI.
#   BUILD=/tmp/b-subn bash scripts/explore/subnormal/run.sh [ROWSxCOLS [REPS [OPS [DTYPES]]]]
# BUILD: a build directory of this tree (cmake -S . -B $BUILD; cmake --build $BUILD --target
# clnorm); the default /tmp/b-subn. On a shared machine run it under nice: the ratios, taken in
# alternation in one process, are what count, not the times.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$here/../../.."
build="${BUILD:-/tmp/b-subn}"
lib="$(dirname "$(find "$build" -name 'libclnorm.so*' -print -quit)")"
cc -O2 -std=c11 -Wall -Wextra -I"$root/include" -I"$build" -I"$build/include" \
  -o "/tmp/subn.$(basename "$build")" "$here/subn.c" -L"$lib" -Wl,-rpath,"$lib" -lclnorm -lOpenCL -lm
timeout "${LIMIT:-1200}" "/tmp/subn.$(basename "$build")" "$@"
