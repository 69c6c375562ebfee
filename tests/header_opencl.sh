#!/usr/bin/env bash
# clnorm.h leaves the application's OpenCL API as the application's own headers give it (issue
# 23, point 4): a C and a C++ program that include clnorm.h first and call OpenCL 2.0's
# clCreateCommandQueueWithProperties compile and link with -Werror, with the Khronos headers as
# system headers and through -I (where clang reports their #pragma message as a warning); the
# CL_* macros after clnorm.h are those of <CL/cl.h> alone, with and without the application's
# CL_TARGET_OPENCL_VERSION; a program that asks for OpenCL 1.2 gets 1.2.
#   bash header_opencl.sh CLNORM_INCLUDE_DIR OPENCL_INCLUDE_DIR OPENCL_LIBRARY LANG:COMPILER...
# LANG is c or c++; every compiler given is tried.
set -euo pipefail
if [[ $# -lt 4 ]]; then
  echo "usage: bash $0 CLNORM_INCLUDE_DIR OPENCL_INCLUDE_DIR OPENCL_LIBRARY LANG:COMPILER..." >&2
  exit 2
fi
include=$1 cl_include=$2 cl_library=$3
shift 3
work=$(mktemp -d "${TMPDIR:-/tmp}/clnorm-header-opencl.XXXXXX")
trap 'rm -rf "$work"' EXIT
fail() {
  echo "FAIL [header_opencl]: $*" >&2
  exit 1
}
[[ -f $cl_include/CL/cl.h ]] || fail "no CL/cl.h in $cl_include"
# The same headers in a directory the compiler does not treat as a system one.
mkdir -p "$work/inc"
cp -r "$cl_include/CL" "$work/inc/"

cat >"$work/app20.c" <<'EOF'
#include <clnorm.h>

#include <CL/cl.h>

int main(void) {
  const cl_queue_properties props[] = {CL_QUEUE_PROPERTIES, CL_QUEUE_PROFILING_ENABLE, 0};
  cl_int err = CL_SUCCESS;
  cl_command_queue queue = clCreateCommandQueueWithProperties(NULL, NULL, props, &err);
  return queue == NULL && CLNORM_VERSION_NUMBER > 0 ? 0 : 1;
}
EOF
cat >"$work/app12.c" <<'EOF'
#define CL_TARGET_OPENCL_VERSION 120
#include <clnorm.h>

#ifdef CL_VERSION_2_0
#error "the program asked for OpenCL 1.2 and got 2.0"
#endif

int main(void) {
  cl_int err = CL_SUCCESS;
  cl_command_queue queue = clCreateCommandQueue(NULL, NULL, 0, &err);
  return queue == NULL ? 0 : 1;
}
EOF
printf '#include <CL/cl.h>\n' >"$work/bare.c"
printf '#include <clnorm.h>\n' >"$work/clnorm.c"

log=$work/log
# run WHAT CMD...: CMD must succeed; its output is shown when it does not.
run() {
  local what=$1
  shift
  "$@" >"$log" 2>&1 || {
    cat "$log" >&2
    fail "$what: $*"
  }
}
# The OpenCL macros a preprocessed file defines, sorted.
cl_macros() { "$@" -E -dM 2>"$log" | grep -E '^#define (CL_|__CL|__OPENCL|cl[A-Z])' | sort; }

tried=""
for spec in "$@"; do
  lang=${spec%%:*} compiler=${spec#*:}
  case $lang in
    c) std=-std=c99 ;;
    c++) std=-std=c++11 ;;
    *) fail "unknown language '$lang' in '$spec'" ;;
  esac
  command -v "$compiler" >/dev/null 2>&1 || fail "no compiler '$compiler' for $lang (install it)"
  flags=(-x "$lang" "$std" -Wall -Wextra -Werror -pedantic)
  if "$compiler" --version 2>/dev/null | grep -qi clang; then
    flags+=("-Werror=#pragma-messages")
  fi
  for where in system include; do
    inc=(-I"$include")
    [[ $where == include ]] && inc+=(-I"$work/inc")
    run "$compiler ($lang, $where headers): clnorm.h first, then an OpenCL 2.0 call" \
      "$compiler" "${flags[@]}" "${inc[@]}" "$work/app20.c" -x none "$cl_library" \
      -o "$work/app20"
    run "$compiler ($lang, $where headers): an OpenCL 1.2 program" \
      "$compiler" "${flags[@]}" "${inc[@]}" "$work/app12.c" -x none "$cl_library" \
      -o "$work/app12"
    for target in "" -DCL_TARGET_OPENCL_VERSION=120 -DCL_TARGET_OPENCL_VERSION=200; do
      for src in bare clnorm; do
        cl_macros "$compiler" -x "$lang" "$std" "${inc[@]}" $target "$work/$src.c" \
          >"$work/$src.m" || { cat "$log" >&2; fail "$compiler cannot preprocess $src.c"; }
      done
      [[ -s $work/bare.m ]] || fail "no OpenCL macros found in <CL/cl.h>"
      if ! diff "$work/bare.m" "$work/clnorm.m" >"$log"; then
        cat "$log" >&2
        fail "$compiler ($lang, $where headers${target:+, $target}): the OpenCL macros after" \
          "clnorm.h differ from <CL/cl.h>'s (< CL/cl.h, > clnorm.h)"
      fi
    done
  done
  tried+=" $compiler($lang)"
done
[[ -n $tried ]] || fail "no compiler given"
echo "PASS [header_opencl]:$tried"
