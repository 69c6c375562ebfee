#!/usr/bin/env bash
# One GPU call (carry .device-kit, build-tune): issue 21's two
# short questions. 1. scripts/explore/wg_cap/run.sh ($OUT/wgcap.txt). 2. The A/B of
# docs/wip/issue21/rms16-bwd-heuristic.patch against this tree as it is ($OUT/ab.md,
# base-N/head-N.json); the base is a copy of the tree made before the patch.
set -uo pipefail
root=$PWD
out=${OUT:?}
timeout 200 bash scripts/explore/wg_cap/run.sh >/dev/null 2>&1
tail -c 6000 "$out/wgcap.txt"
base=$(mktemp -d)/ab-base
mkdir -p "$base"
tar -c --exclude=./build-tune --exclude=./.device-kit --exclude='./build-*' --exclude=./.git . | tar -x -C "$base"
patch -p1 <docs/wip/issue21/rms16-bwd-heuristic.patch || exit 1
BASE=$base ROUNDS=3 bash scripts/ab_builds.sh \
  --grid 2048x12288,4096x12288,2048x16384,4096x16384,8192x16384,4096x8192 \
  --ops rmsnorm_bwd,layernorm_bwd --dtypes f16,bf16,f32 >"$out/ab-log.txt" 2>&1
echo "ab rc=$?"
cat "$out/ab.md"
cd "$root" && patch -R -p1 <docs/wip/issue21/rms16-bwd-heuristic.patch >/dev/null
