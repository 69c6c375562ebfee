#!/usr/bin/env bash
# One GPU call (carry .device-kit), issue 21's acceptance line "the test suite passes on the GPU
# machine's NVIDIA device and its PoCL 5 with the new kernels", the backward's part, about 9
# minutes: test_ops backward (every backward variant family through the dispatcher and forced
# variants, float64 reference, NaN-poisoned outputs), test_ops strips (the column strips, forced
# on, and their determinism) and test_ops store (determinism of the whole-row backward, rounding,
# zero rows) on NVIDIA and on PoCL 5's CPU device, all six processes at once. Prints each one's
# summary line and failures; logs in $OUT.
set -uo pipefail
out=${OUT:?}
root=$(cd "$(dirname "$0")/../../.." && pwd)
# shellcheck source=scripts/gpu_build.sh
source "$root/scripts/gpu_build.sh"
TEST_LIMIT=${LIMIT:-480} gpu_test_ops "$root" "$out" backward,strips,store NVIDIA,cpu || exit 1
gzip -f "$out"/*.log
