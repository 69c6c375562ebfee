#!/usr/bin/env bash
# normtune verify of a tuning database (stop 39): the shapes tuned, then held-out shapes (rows and
# cols between and beyond the tuned ones). Carry .device-kit and build-tune.
#   bash scripts/explore/session39/verify_call.sh OPS DTYPES
# DB: the database (default build-tune/h200.db); TUNED: verify's options for the first part
# (default none: the shapes the database holds; session42/verify_builtin.sh names the grid, its
# database being empty). Files in $OUT: build.txt, verify-tuned.txt, verify-held.txt.
set -uo pipefail
source .device-kit/setup.sh
out=${OUT:-/tmp/out}
mkdir -p "$out"
root=$PWD
# shellcheck source=scripts/gpu_build.sh
source scripts/gpu_build.sh
gpu_build build-bench normtune >"$out/build.txt" 2>&1 || { tail -20 "$out/build.txt"; exit 1; }
ops=${1:-layernorm} dtypes=${2:-f32}
db=${DB:-build-tune/h200.db}
read -r -a tuned <<<"${TUNED:-}"
held=4x96,48x300,200x700,1000x1000,3000x2000,6000x3000,100x5000,9000x6000,32x10000,24576x768,700x13000,64x20000,200x40000,30000x512,12x24576,5000x1536
start=$SECONDS
build-bench/normtune verify --device NVIDIA --db "$db" --ops "$ops" --dtypes "$dtypes" \
  "${tuned[@]}" >"$out/verify-tuned.txt" 2>&1
echo "== verify tuned: exit $? after $((SECONDS - start)) s"
start=$SECONDS
build-bench/normtune verify --device NVIDIA --db "$db" --ops "$ops" --dtypes "$dtypes" \
  --grid "$held" >"$out/verify-held.txt" 2>&1
echo "== verify held-out: exit $? after $((SECONDS - start)) s"
for f in tuned held; do
  echo "== $f: $(wc -l <"$out/verify-$f.txt") lines"
  head -4 "$out/verify-$f.txt"
  tail -8 "$out/verify-$f.txt"
done
exit 0
