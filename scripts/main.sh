#!/usr/bin/env bash
# The main job: set-up, build, then on the default device (the first GPU, else the first device)
#   1. clnorm_demo: LayerNorm and RMSNorm of a 4096 x 4096 matrix as the dispatcher runs them,
#      checked against the float64 reference, GB/s next to the copy bandwidth;
#   2. normtune tune with a short budget, then normtune bench: tuned vs heuristic vs copy.
#   bash scripts/main.sh                           # arguments go to clnorm_demo
#   bash scripts/main.sh --rows 1024 --cols 768 --json
#   DEVICE=cpu BUDGET=120 bash scripts/main.sh     # DEVICE: demo and normtune; BUDGET: seconds
#   TUNE=0 bash scripts/main.sh                    # the demo only
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/deps.sh
build=${BUILD_DIR:-build}
# Quiet unless something fails.
if ! log=$(cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release -DCLNORM_BUILD_TESTS=OFF 2>&1 &&
           cmake --build "$build" -j"$(nproc)" 2>&1); then
  echo "$log" >&2
  echo "clnorm: the build failed" >&2
  exit 1
fi
devices=$(clinfo -l 2>&1 || true)
if ! grep -q "Device" <<<"$devices"; then
  echo "clnorm: no OpenCL platform or device found (clinfo -l lists none)" >&2
  echo "$devices" >&2
  exit 1
fi
echo "$devices"
device_args=()
[ -n "${DEVICE:-}" ] && device_args=(--device "$DEVICE")
echo
echo "== clnorm_demo"
"$build/clnorm_demo" ${device_args[@]+"${device_args[@]}"} "$@"
[ "${TUNE:-1}" = 0 ] && exit 0
db=${CLNORM_DB:-${XDG_CACHE_HOME:-$HOME/.cache}/clnorm/tuning.db}
echo
echo "== normtune tune (budget ${BUDGET:-60} s) into $db"
"$build/normtune" tune ${device_args[@]+"${device_args[@]}"} --db "$db" --dtypes f32 \
  --cols 768,4096,65536 --rows 256,4096 --budget "${BUDGET:-60}" --quiet
echo
echo "== normtune bench"
"$build/normtune" bench ${device_args[@]+"${device_args[@]}"} --db "$db" --cols 768,4096,65536 \
  --rows 256
