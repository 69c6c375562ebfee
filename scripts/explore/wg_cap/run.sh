#!/usr/bin/env bash
# Why NVIDIA's OpenCL allows clnorm's kernels of 512 and 1024 work-items only 256
# (docs/DEVICES.md, "CL_KERNEL_WORK_GROUP_SIZE"), in one call of a minute or two on the GPU
# machine (carry .device-kit, and build-tune for part 3: the tune's cached programs):
#   bash scripts/explore/wg_cap/run.sh            # report in $OUT/wgcap.txt
# 1. Kernels of the least code with one of clnorm's features each (trivial.cl): no attribute,
#    reqd_work_group_size, a local-memory reduction with barriers, inline PTX (shfl.sync, the
#    16-bit conversion), each also launched at that size.
# 2. clnorm's own programs from source (cl/common.cl + the op's file, as src/program.c joins them)
#    at 512 and 1024 work-items, the options as the library gives them on the H200 (a cached
#    program's key), one switched at a time: float32 against float16, PTX=0 (no inline PTX),
#    REDUCE=0 (local memory) against 2 (shfl.sync), the backward and the forward.
# 3. PTX of 512- and 1024-wide programs the tune built (build-tune's cache), loaded as binaries
#    as they are and edited: without `.reqntid`, with `.maxntid` instead, with `.maxnreg 64`;
#    and `ptxas -v` of each (registers, barriers, shared memory, stack).
set -uo pipefail
source .device-kit/setup.sh
root=$PWD
here=$root/scripts/explore/wg_cap
out=${OUT:-/tmp/wgcap-out}
mkdir -p "$out"
{
work=$(mktemp -d)
cc -O2 -std=c11 -Wall -o "$work/wgcap" "$here/wgcap.c" -lOpenCL || exit 1
ptxas=${PTXAS:-/usr/local/cuda/bin/ptxas}
clinfo 2>/dev/null | grep -iE "device name|max work group size|driver version" | head -4

echo "== 1. trivial.cl"
for wg in 256 512 1024; do
  echo "-- WG=$wg"
  WGCAP_LAUNCH=$wg "$work/wgcap" src "-DWG=$wg -DASM" "$here/trivial.cl" -- plain reqd local_sum asm_shfl asm_cvt
done

echo "== 2. clnorm's programs from source"
base="-cl-std=CL1.2 -DADD=0 -DHWHALF=0 -DPREFETCH=0 -DRAW16=1 -DRBUF=0 -DRVEC=1 -DSPLIT=0"
base="$base -DSTREAM=0 -DUNALIGNED=0"
for wg in 512 1024; do
  for file in backward forward; do
    kernels=(norm_bwd bwd_reduce)
    [ $file = forward ] && kernels=(layernorm_fwd)
    for dt in 0 1; do
      for ptx in 90 0; do
        for red in 0 2; do
          opts="$base -DDTYPE=$dt -DHOLD=2 -DPTX=$ptx -DREDUCE=$red -DRMS=0 -DSTATS=1 -DTPR=$wg"
          opts="$opts -DVEC=4 -DWG=$wg"
          printf -- "-- %s WG=%s DTYPE=%s PTX=%s REDUCE=%s: " $file $wg $dt $ptx $red
          WGCAP_SAVE=$work/$file-$wg-$dt-$ptx-$red.ptx "$work/wgcap" src "$opts" \
            "$root/cl/common.cl" "$root/cl/$file.cl" -- "${kernels[@]}" | tr '\n' ' '
          echo
          "$ptxas" -arch=sm_90 -v "$work/$file-$wg-$dt-$ptx-$red.ptx" -o /dev/null 2>&1 |
            grep -E "Used|stack" | sed 's/^/     /'
        done
      done
    done
  done
done
# the same with the build log of NVIDIA's compiler (registers as the driver reports them)
opts="$base -DDTYPE=0 -DHOLD=2 -DPTX=90 -DREDUCE=0 -DRMS=0 -DSTATS=1 -DTPR=512 -DVEC=4 -DWG=512"
echo "-- backward WG=512 float32 with -cl-nv-verbose:"
WGCAP_LOG=1 "$work/wgcap" src "$opts -cl-nv-verbose" "$root/cl/common.cl" \
  "$root/cl/backward.cl" -- norm_bwd bwd_reduce 2>&1 | head -30

echo "== 3. the tune's PTX, as built and edited"
cache=$work/cache
mkdir -p "$cache"
for part in build-tune/caches-h200-clnorm.tar.xz.*; do cat "$part"; done 2>/dev/null |
  xz -dc 2>/dev/null | tar -x -C "$cache" 2>/dev/null
dir=$(find "$cache" -name '*.bin' -printf '%h\n' | head -1)
if [ -z "$dir" ]; then
  echo "(no cached programs: carry build-tune)"
else
  mkdir -p "$work/ptx"
  PYTHONPATH="$root/scripts" python3 "$root/scripts/bincache_ptx.py" --order name "$dir" "$work/ptx"
  n=0
  for key in "$work"/ptx/*.key; do
    wg=$(grep -o -- '-DWG=[0-9]*' "$key" | cut -d= -f2)
    case $wg in 512 | 1024) ;; *) continue ;; esac
    n=$((n + 1))
    [ $n -le 4 ] || break
    ptx=${key%.key}.ptx
    kernel=$(grep -m1 -o '^\.entry [a-z_]*' "$ptx" | cut -d' ' -f2)
    echo "-- $(grep -o 'options .*' "$key")"
    sed 's/^\.reqntid.*//' "$ptx" >"$work/noreq.ptx"
    sed "s/^\.reqntid/.maxntid/" "$ptx" >"$work/max.ptx"
    sed "s/^\.reqntid.*/&\n.maxnreg 64/" "$ptx" >"$work/nreg.ptx"
    for f in "$ptx" "$work/noreq.ptx" "$work/max.ptx" "$work/nreg.ptx"; do
      printf '   %-10s ' "$(basename "$f" .ptx | cut -c1-10)"
      "$work/wgcap" bin "$f" -- "$kernel" | tr '\n' ' '
      "$ptxas" -arch=sm_90 -v "$f" -o /dev/null 2>&1 | grep -m1 "Used" | sed 's/ptxas info *://'
    done
  done
fi
rm -rf "$work"
} 2>&1 | tee "$out/wgcap.txt"
