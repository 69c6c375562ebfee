#!/usr/bin/env bash
# One GPU call (carry .device-kit), issue 21: the float32 backward of 513-1024 columns at 32
# work-items a row (docs/wip/issue21/bwd-f32-tpr32.patch, not in main) against main, 3 rounds
# ($OUT/ab.md). Its two runs of 2026-11-30 made the base by reversing a patch taken against a HEAD
# that held the groups-of-256 rule, so their base had that rule (docs/wip/issue21/README.md);
# patch_ab.sh applies the patch to a tree that lacks it, after copying the base.
set -uo pipefail
ROUNDS=3 bash scripts/explore/session45/patch_ab.sh docs/wip/issue21/bwd-f32-tpr32.patch \
  --grid 2048x1024,4096x1024,8192x1024,16384x1024,32768x1024,4096x768,65536x512 \
  --ops layernorm_bwd,rmsnorm_bwd --dtypes f32
