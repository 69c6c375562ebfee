#!/usr/bin/env bash
# Offline PTX of clnorm's kernels, no GPU: clang's OpenCL front end for nvptx64 with libclc's
# built-ins, then CUDA's ptxas -v for sm_90 (registers, spills, stack). For screening a kernel
# edit on a machine without a GPU (inline PTX that does not assemble, a spill that appears): the
# PTX is clang's, not NVIDIA's OpenCL compiler's, whose register counts differ
# (scripts/ptx_audit.sh measures those on the GPU machine).
#   bash scripts/ptx_clang.sh forward|backward|strip|split [-DNAME=VALUE ...]
# The defines after the family override NVIDIA's defaults below (e.g. -DWG=256 -DTPR=256 -DVEC=8
# -DHOLD=4 -DDTYPE=1 -DRMS=0). Needs clang-15 (or CLANG), libclc's nvptx64--nvidiacl.bc (CLC) and
# ptxas (PTXAS, default: on PATH or /usr/local/cuda/bin). Prints ptxas's lines; the PTX is left
# in ${OUT:-/tmp}/clnorm-FAMILY.ptx.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
family=${1:?usage: ptx_clang.sh forward|backward|strip|split [-DNAME=VALUE ...]}
shift
case $family in
forward) files=(common forward) split=0 ;;
split) files=(common split) split=1 ;;
backward) files=(common backward) split=0 ;;
strip) files=(common backward strip) split=2 ;;
*) echo "ptx_clang: unknown family $family" >&2; exit 2 ;;
esac
clang=${CLANG:-clang-15}
clc=${CLC:-/usr/lib/clc/nvptx64--nvidiacl.bc}
ptxas=${PTXAS:-$(command -v ptxas || echo /usr/local/cuda/bin/ptxas)}
src=$(mktemp --suffix=.cl)
trap 'rm -f "$src"' EXIT
for f in "${files[@]}"; do
  cat "$root/cl/$f.cl"
  echo
done >"$src"
ptx=${OUT:-/tmp}/clnorm-$family.ptx
# NVIDIA's options (src/program.c options_string), each overridable by a later -D
"$clang" -x cl -cl-std=CL1.2 -target nvptx64-nvidia-nvcl -Xclang -target-cpu -Xclang sm_70 \
  -Xclang -mlink-builtin-bitcode -Xclang "$clc" -O2 -Dasm=__asm__ -Wno-macro-redefined \
  -DADD=0 -DDTYPE=1 -DHOLD=4 -DHWHALF=0 -DPREFETCH=0 -DPTX=90 -DRAW16=1 -DRBUF=0 -DREDUCE=2 \
  -DRMS=0 -DRVEC=1 -DSPLIT=$split -DSTATS=1 -DSTREAM=0 -DTPR=256 -DUNALIGNED=0 -DVEC=8 -DWG=256 \
  "$@" -S -o "$ptx" "$src"
# clang targets sm_70 and PTX 7.5 (clang-15's newest); ptxas takes the same text as sm_90
sed -i 's/^\.target sm_70/.target sm_90/; s/^\.version .*/.version 7.8/' "$ptx"
"$ptxas" -arch=sm_90 -v "$ptx" -o /dev/null 2>&1 | grep -vE "^ptxas info *: (Compiling|Function properties)"
