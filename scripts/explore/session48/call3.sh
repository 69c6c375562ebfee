#!/usr/bin/env bash
# One GPU call (carry .device-kit), issue 21, about 5 minutes warm: where the column-strip backward
# wins. call2.sh's A/B (the patch, CLNORM_BWD_STRIP=1, against the tree without it) on the rows
# around the ones it measured: 16384 < cols < 32768 (held at 1024 work-items), more and fewer rows
# of 32768 columns, and rows of 65536-131072 columns (not held: split rows). $OUT/ab.md, all.tar.gz.
set -uo pipefail
export CLNORM_BWD_STRIP=1
ROUNDS=${ROUNDS:-2} timeout "${AB_LIMIT:-330}" bash scripts/explore/session45/patch_ab.sh \
  docs/wip/issue21/column-strip/column-strip.patch \
  --grid 64x32768,512x32768,4096x32768,1024x24576,2048x20480,512x65536,1024x65536,4096x65536,128x131072 \
  --ops layernorm_bwd,rmsnorm_bwd --dtypes f16,bf16,f32
echo "A/B rc=$?"
