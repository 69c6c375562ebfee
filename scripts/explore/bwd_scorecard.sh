#!/usr/bin/env bash
# One GPU call (carry .device-kit), issue 21, about 2 minutes warm, or the first part of one: the
# backward scorecard of docs/PERFORMANCE.md (its command: bench_gpu.sh, clnorm and the PyTorch
# peer). Files in $OUT: compare.md, scorecard.tar.gz (the run's files).
set -uo pipefail
out=${OUT:?}
mkdir -p "$out/scorecard"
CLNORM_BENCH_SHAPES=4096x4096,8192x8192,16384x4096,32768x1024,65536x512,4096x16384,256x65536,1x4096,8x1024,32x2048,128x4096,512x1024,1024x1024 \
  CLNORM_BENCH_OPS=layernorm_bwd,rmsnorm_bwd OUT=$out/scorecard bash scripts/bench_gpu.sh \
  >"$out/scorecard/run.txt" 2>&1
echo "scorecard rc=$?"
tar -czf "$out/scorecard.tar.gz" -C "$out" scorecard && cp "$out/scorecard/compare.md" "$out/" &&
  rm -rf "$out/scorecard"
tail -12 "$out/compare.md"
