#!/usr/bin/env bash
# One GPU call (carry .device-kit), issue 21: the heuristic's float32 backward of 513-1024 columns
# at 32 work-items a row (docs/wip/issue21/bwd-f32-tpr32.patch, in this tree) against the
# tree without it (a copy made here with the patch reversed): scripts/ab_builds.sh, 2 rounds
# ($OUT/ab.md).
set -uo pipefail
out=${OUT:?}
base=$(mktemp -d)/ab-base
mkdir -p "$base"
tar -c --exclude=./build-tune --exclude=./.device-kit --exclude='./build-*' --exclude=./.git . |
  tar -x -C "$base"
patch -R -p1 -d "$base" <docs/wip/issue21/bwd-f32-tpr32.patch >/dev/null || exit 1
BASE=$base ROUNDS=3 timeout 80 bash scripts/ab_builds.sh \
  --grid 2048x1024,4096x1024,8192x1024,16384x1024,32768x1024,4096x768,65536x512 \
  --ops layernorm_bwd,rmsnorm_bwd --dtypes f32 >"$out/ab-log.txt" 2>&1
echo "ab rc=$?"
cd "$out" && tar -czf all.tar.gz ./*.json ./*.log ab-log.txt 2>/dev/null
rm -rf ./*.json ./*.log ab-log.txt
cat ab.md
