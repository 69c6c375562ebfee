#!/bin/bash
# proxy.sh TREE NAME OPTS... : clang-15 nvptx + libclc -> PTX -> ptxas -v (sm_90) for norm_bwd
tree=$1; name=$2; shift 2
d=/tmp/px/out; mkdir -p $d
cat $tree/cl/common.cl > $d/$name.cl; echo >> $d/$name.cl; cat $tree/cl/backward.cl >> $d/$name.cl
clang-15 -x cl -cl-std=CL1.2 -target nvptx64-nvidia-nvcl -march=sm_80 -Dasm=__asm__ -O3 -S $PXFLAGS -Xclang -finclude-default-header \
  -Xclang -mlink-builtin-bitcode -Xclang /usr/lib/clc/nvptx64--nvidiacl.bc \
  -DADD=0 -DHWHALF=0 -DPREFETCH=0 -DPTX=90 -DRAW16=1 -DRBUF=0 -DREDUCE=2 -DRVEC=1 -DSPLIT=0 -DSTATS=0 -DSTREAM=0 -DUNALIGNED=0 "$@" \
  $d/$name.cl -o $d/$name.ptx 2>$d/$name.err || { head $d/$name.err; exit 1; }
/usr/local/cuda/bin/ptxas -arch=sm_90 -v $d/$name.ptx -o $d/$name.cubin > $d/$name.ptxas 2>&1 || { head $d/$name.ptxas; exit 1; }
r=$(grep -A3 "entry function 'norm_bwd'" $d/$name.ptxas | tr '\n' ' ' | grep -o '[0-9]* bytes stack frame\|Used [0-9]* registers\|[0-9]* bytes spill stores' | tr '\n' ' ')
echo "$name: $r | ld.v4:$(grep -c 'ld.global.v4' $d/$name.ptx) ld:$(grep -c 'ld.global' $d/$name.ptx) st.v4:$(grep -c 'st.global.v4' $d/$name.ptx) st:$(grep -c 'st.global' $d/$name.ptx)"
