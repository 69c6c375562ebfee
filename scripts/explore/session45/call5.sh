#!/usr/bin/env bash
# One GPU call (carry .device-kit), issue 21: the heuristic's backward in groups of 256 where a
# held row takes fewer work-items (docs/wip/issue21/bwd-wg256.patch, in this tree as 7ed3607 had
# it) against the tree without it, 2 rounds ($OUT/ab.md). Not kept (docs/PERFORMANCE.md).
set -uo pipefail
ROUNDS=2 bash scripts/explore/session45/patch_ab.sh -R docs/wip/issue21/bwd-wg256.patch \
  --grid 65536x512,32768x512,32768x1024,8192x1024,4096x2048,4096x768 \
  --ops layernorm_bwd,rmsnorm_bwd --dtypes f16,f32
