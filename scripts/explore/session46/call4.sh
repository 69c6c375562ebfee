#!/usr/bin/env bash
# One GPU call (carry .device-kit), issue 21: LayerNorm's 16-bit backward of rows not held in
# vectors of 4 (docs/wip/issue21/bwd16-unheld-vec4.patch, in the tree) against the tree without it,
# 3 rounds; RMSNorm (untouched) the control, 16 x 4194304 the split path's check.
set -uo pipefail
ROUNDS=3 bash scripts/explore/session45/patch_ab.sh -R docs/wip/issue21/bwd16-unheld-vec4.patch \
  --grid 64x65536,256x65536,1024x65536,4096x65536,512x49152,256x131072,16x4194304 \
  --ops layernorm_bwd,rmsnorm_bwd --dtypes f16,bf16
