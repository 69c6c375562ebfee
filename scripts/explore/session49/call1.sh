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
TESTS=ON gpu_build "$root/build-tests" test_ops || exit 1
limit=${LIMIT:-480}
pids=()
for dev in NVIDIA cpu; do
  for part in backward strips store; do
    CLNORM_TEST_DEVICE=$dev timeout "$limit" "$root/build-tests/tests/test_ops" "$part" \
      >"$out/$dev-$part.log" 2>&1 &
    pids+=($!)
  done
done
i=0
for dev in NVIDIA cpu; do
  for part in backward strips store; do
    wait "${pids[$i]}"
    rc=$?
    i=$((i + 1))
    echo "== $dev test_ops $part: rc=$rc"
    grep -E "^FAIL" "$out/$dev-$part.log" | cut -c1-240 | head -8
    tail -1 "$out/$dev-$part.log" | cut -c1-400
  done
done
gzip -f "$out"/*.log
