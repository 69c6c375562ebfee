#!/usr/bin/env bash
# One GPU call (carry .device-kit), issue 20, about 6-7 minutes: the code that reaches the target
# on this card beside clnorm's. torch.compile's Triton kernels for LayerNorm and RMSNorm on the
# short 16-bit rows (bfloat16 65536 x 512: 3,596 GB/s, 0.87 of copy, where clnorm's heuristic
# runs 0.73; docs/PERFORMANCE.md) and clnorm's programs for the same shapes, both as machine code:
#  1. scripts/peer_torch.py on the shapes (torch.compile specialized to each, 16 compiles) with
#     TRITON_CACHE_DIR and TORCHINDUCTOR_CACHE_DIR in a fresh folder and TORCH_LOGS=output_code
#     (the Triton source inductor writes: rows a program, the reduction's block, the loads); its
#     timings in peer.jsonl.
#  2. Every kernel Triton cached: its metadata (num_warps, shared memory), `ptxas -v` on its PTX
#     (registers), its cubin through cuobjdump -sass (Triton's own, beside its ptxas).
#  3. clnorm: ptx_audit.sh on the same shapes (the heuristic's programs, no built-in table), each
#     program's PTX through ptxas to a cubin and cuobjdump -sass.
#  4. A table per kernel (scripts/sass_counts.py): registers, threads, SASS instructions in all,
#     global loads and stores, shuffles, barriers, conversions, FP32 arithmetic.
# Files in $OUT: summary.md, peer.jsonl, triton.tar.gz (sources, PTX, SASS, metadata),
# clnorm-sass.tar.gz.
set -uo pipefail
out=${OUT:?}
root=$(cd "$(dirname "$0")/../../.." && pwd)
cd "$root" || exit 1
work=$(mktemp -d)
shapes=${SHAPES:-65536x512,16384x512,32768x1024,4096x4096}
export TRITON_CACHE_DIR=$work/triton TORCHINDUCTOR_CACHE_DIR=$work/inductor
TORCH_LOGS=output_code timeout "${PEER_LIMIT:-300}" python3 scripts/peer_torch.py \
  --shapes "$shapes" --dtypes fp16,bf16 >"$out/peer.jsonl" 2>"$work/output_code.txt"
echo "== peer: rc=$? $(wc -l <"$out/peer.jsonl") timings"
unset TRITON_CACHE_DIR TORCHINDUCTOR_CACHE_DIR
tbin=$(python3 -c 'import os, triton; print(os.path.join(os.path.dirname(triton.__file__), "backends", "nvidia", "bin"))' 2>/dev/null)
ptxas=/usr/local/cuda/bin/ptxas
[ -x "$ptxas" ] || ptxas=$tbin/ptxas
cuobjdump=$tbin/cuobjdump
[ -x "$cuobjdump" ] || cuobjdump=$(command -v cuobjdump || echo "")
echo "== tools: ptxas $ptxas, cuobjdump ${cuobjdump:-none}"
mkdir -p "$work/tk"
# a kernel's name repeats across shapes: each file keeps its cache folder's name in front
while IFS= read -r f; do
  d=$(basename "$(dirname "$f")")
  cp "$f" "$work/tk/${d:0:12}-$(basename "$f")"
done < <(find "$work/triton" -type f \( -name '*.ptx' -o -name '*.cubin' -o -name '*.json' \
  -o -name '*.ttgir' -o -name '*.source' \) 2>/dev/null)
cp "$work/output_code.txt" "$work/tk/"
# clnorm's programs for the same shapes
cases=()
IFS=, read -r -a shape_list <<<"$shapes"
for s in "${shape_list[@]}"; do
  for op in layernorm rmsnorm; do
    for dt in f16 bf16; do cases+=("$op:$dt:$s"); done
  done
done
# shellcheck source=scripts/gpu_build.sh
source "$root/scripts/gpu_build.sh"
gpu_build "$root/build-bench" normtune >/dev/null 2>&1
CLNORM_NO_BUILTIN=1 OUT=$work/clnorm NORMTUNE=$root/build-bench/normtune timeout 150 \
  bash scripts/ptx_audit.sh "${cases[@]}" >/dev/null 2>&1
echo "== clnorm audit: $(find "$work/clnorm/ptx" -name '*.ptx' 2>/dev/null | wc -l) programs"
for p in "$work"/clnorm/ptx/*.ptx; do
  [ -e "$p" ] || continue
  tr -d '\000' <"$p" >"$p.tmp" && mv "$p.tmp" "$p"
  "$ptxas" -arch=sm_90 "$p" -o "${p%.ptx}.cubin" 2>/dev/null
done
if [ -n "$cuobjdump" ]; then
  for c in "$work"/tk/*.cubin "$work"/clnorm/ptx/*.cubin; do
    [ -e "$c" ] && "$cuobjdump" -sass "$c" >"${c%.cubin}.sass" 2>/dev/null
  done
fi
for p in "$work"/tk/*.ptx; do
  [ -e "$p" ] && "$ptxas" -arch=sm_90 -v "$p" -o /dev/null >"${p%.ptx}.ptxas.txt" 2>&1
done
python3 scripts/sass_counts.py "$work"/tk/*.sass "$work"/clnorm/ptx/*.sass >"$out/summary.md"
cat "$out/summary.md"
tar -czf "$out/triton.tar.gz" -C "$work" tk 2>/dev/null
tar -czf "$out/clnorm-sass.tar.gz" -C "$work" clnorm 2>/dev/null
rm -rf "$work"
