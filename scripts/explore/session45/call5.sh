#!/usr/bin/env bash
# One GPU call (carry .device-kit), issue 21: the heuristic's backward in groups of 256 where a
# held row takes fewer work-items (docs/wip/issue21/bwd-wg256.patch, in this tree) against the
# tree without it (a copy made here with the patch reversed): scripts/ab_builds.sh, 2 rounds
# ($OUT/ab.md).
set -uo pipefail
out=${OUT:?}
base=$(mktemp -d)/ab-base
mkdir -p "$base"
tar -c --exclude=./build-tune --exclude=./.device-kit --exclude='./build-*' --exclude=./.git . |
  tar -x -C "$base"
patch -R -p1 -d "$base" <docs/wip/issue21/bwd-wg256.patch >/dev/null || exit 1
BASE=$base ROUNDS=2 timeout 225 bash scripts/ab_builds.sh \
  --grid 65536x512,32768x512,32768x1024,8192x1024,4096x2048,4096x768 \
  --ops layernorm_bwd,rmsnorm_bwd --dtypes f16,f32 >"$out/ab-log.txt" 2>&1
echo "ab rc=$?"
cd "$out" && tar -czf all.tar.gz ./*.json ./*.log ab-log.txt 2>/dev/null
rm -rf ./*.json ./*.log ab-log.txt
cat ab.md
