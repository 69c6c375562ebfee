#!/usr/bin/env bash
# clnorm against PyTorch on the GPU machine, in one command:
#   1. builds normtune (Release, in build-bench), after sourcing the device kit's setup.sh there;
#   2. `normtune bench --grid gpu --json` on the NVIDIA device: every op x dtype x shape of the
#      grid through the dispatcher, checked against the float64 reference, next to the copy
#      bandwidth of the same run;
#   3. the PyTorch peer (scripts/peer_torch.py: eager, and torch.compile specialized to each shape,
#      LayerNorm and RMSNorm)
#      on the same shapes and dtypes;
#   4. scripts/compare_peer.py: the side-by-side markdown table and a combined JSON.
#
#   bash scripts/bench_gpu.sh [OUTDIR]     # files go to $OUT when it is set, else to OUTDIR
#
# Files: clnorm.json clnorm.log torch.json torch.log compare.md combined.json
# Environment:
#   DEVICE=NAME               normtune's --device (default NVIDIA: the device kit's platform
#                             order puts PoCL first; empty: normtune's default device)
#   CLNORM_BENCH_SHAPES=RxC,...   a smaller grid (default: gpu, the shapes of docs/TUNING.md)
#   CLNORM_BENCH_OPS, CLNORM_BENCH_DTYPES   the bench's --ops and --dtypes (default: all)
#   CLNORM_DB=PATH            a tuning database for the dispatcher (default: none, so the
#                             figures are the heuristic's, the same on every fresh machine)
#   CLNORM_NO_BUILTIN=0       the shipped table (src/builtin_table.h) on, as a user without a
#                             database has it (default 1: off, the heuristic's figures)
#   PEER=0                    no PyTorch run (a machine without CUDA)
#   PEER=cpu                  the peer is PyTorch on the CPU (scripts/peer_cpu.py, every core),
#                             for clnorm on PoCL (issue 6): DEVICE=cpu PEER=cpu bash ...
#   SETUP=0|1                 source the kit's setup.sh (default: when nvidia-smi exists; it
#                             registers NVIDIA's OpenCL driver under /etc and unpacks to /opt)
#   NORMTUNE=PATH             use this normtune instead of building one
#   KIT=DIR                   the device kit (default: .device-kit in the repository)
#   BUILD_DIR=DIR             where to build (default build-bench, in the checkout)
# Exit status: normtune's (1 when a check failed), or 1 when a step could not run.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
# the heuristic's figures: the shipped table off too, unless the caller set CLNORM_NO_BUILTIN
export CLNORM_NO_BUILTIN=${CLNORM_NO_BUILTIN-1}
out=${OUT:-${1:-}}
if [ -z "$out" ]; then
  echo "usage: bash scripts/bench_gpu.sh OUTDIR (or set OUT)" >&2
  exit 2
fi
mkdir -p "$out"
kit=${KIT:-$root/.device-kit}
setup=${SETUP:-}
if [ -z "$setup" ]; then
  setup=0
  command -v nvidia-smi >/dev/null 2>&1 && setup=1
fi
if [ "$setup" = 1 ]; then
  [ -f "$kit/setup.sh" ] || { echo "bench_gpu: no $kit/setup.sh (set KIT)" >&2; exit 1; }
  # shellcheck disable=SC1091 # the kit is carried to the machine beside the repository
  source "$kit/setup.sh"
fi

if [ -z "${NORMTUNE:-}" ]; then
  build=${BUILD_DIR:-$root/build-bench}
  echo "== building normtune in $build" >&2
  # shellcheck source=scripts/gpu_build.sh
  source "$root/scripts/gpu_build.sh"
  gpu_build "$build" normtune || { echo "bench_gpu: the build failed" >&2; exit 1; }
  NORMTUNE=$build/normtune
fi

device=${DEVICE-NVIDIA}
grid=${CLNORM_BENCH_SHAPES:-gpu}
db=${CLNORM_DB:-$out/no-tuning.db}
[ -n "${CLNORM_DB:-}" ] || rm -f "$db"
echo "== normtune bench --grid $grid on ${device:-the default device}" >&2
rc=0
"$NORMTUNE" bench --grid "$grid" --device "$device" --db "$db" \
  --ops "${CLNORM_BENCH_OPS:-all}" --dtypes "${CLNORM_BENCH_DTYPES:-all}" --json \
  >"$out/clnorm.json" 2> >(tee "$out/clnorm.log" >&2) || rc=$?
if [ "$rc" -ne 0 ] && [ "$rc" -ne 1 ]; then
  echo "bench_gpu: normtune bench exited with status $rc" >&2
  exit 1
fi

# The peer runs the shapes and dtypes normtune ran (a shape normtune skipped is still listed).
shapes=- dtypes=-
read -r shapes dtypes < <(python3 - "$out/clnorm.json" <<'EOF'
import json, sys
shapes, dtypes = [], []
peer = {"f32": "fp32", "f16": "fp16", "bf16": "bf16"}
for line in open(sys.argv[1]):
    r = json.loads(line)
    if "op" not in r:
        continue
    s, d = f"{r['rows']}x{r['cols']}", peer[r["dtype"]]
    shapes += [s] if s not in shapes else []
    dtypes += [d] if d not in dtypes else []
print(",".join(shapes) or "-", ",".join(dtypes) or "-")
EOF
) || true
shapes=${shapes:--}
dtypes=${dtypes:--}
torch_json=
if [ "${PEER:-1}" != 0 ] && [ "$shapes" != - ]; then
  peer=("$root/scripts/peer_torch.py")
  [ "${PEER:-1}" = cpu ] && peer=("$root/scripts/peer_cpu.py" --threads "$(nproc)")
  echo "== PyTorch peer (${peer[*]}): shapes $shapes, dtypes $dtypes" >&2
  # the ops PyTorch has (peer_torch.py: layernorm, rmsnorm and their backward; no fused add)
  [ "${PEER:-1}" = cpu ] || peer+=(--ops "$(echo "${CLNORM_BENCH_OPS:-layernorm,rmsnorm,layernorm_bwd,rmsnorm_bwd}" |
                                    sed 's/\ball\b/layernorm,rmsnorm,layernorm_bwd,rmsnorm_bwd/')")
  if PYTHONUNBUFFERED=1 python3 "${peer[@]}" --shapes "$shapes" --dtypes "$dtypes" \
       >"$out/torch.json" 2> >(tee "$out/torch.log" >&2); then
    torch_json=$out/torch.json
  else
    echo "bench_gpu: the PyTorch peer failed (see torch.log); comparing what it printed" >&2
    [ -s "$out/torch.json" ] && torch_json=$out/torch.json
    rc=1
  fi
fi

echo "== side by side" >&2
python3 "$root/scripts/compare_peer.py" "$out/clnorm.json" ${torch_json:+"$torch_json"} \
  --out "$out/combined.json" | tee "$out/compare.md"
rm -f "$out/no-tuning.db"
exit "$rc"
