#!/usr/bin/env bash
# bash rusticl.sh NORMTUNE CMD...: runs CMD on Mesa's Rusticl, the software device llvmpipe
# (RUSTICL_ENABLE=llvmpipe, CLNORM_TEST_DEVICE=llvmpipe): a second OpenCL implementation beside
# PoCL, with Mesa's OpenCL C compiler stack (issue 23). Where no llvmpipe device is found the
# test fails in CI (CLNORM_CI=1, as .ci/run sets, or CI=true) and reports a skip (77, saying
# why) elsewhere, so a developer without mesa-opencl-icd can still run the full suite.
set -euo pipefail
normtune=$1
shift
export RUSTICL_ENABLE=llvmpipe CLNORM_TEST_DEVICE=llvmpipe
# Only Rusticl's ICD (scripts/check_tools.sh names PoCL's alone): the device is Rusticl's.
icd=/etc/OpenCL/vendors/rusticl.icd
if [[ -f $icd ]]; then
  export OCL_ICD_VENDORS=$icd
fi
if ! "$normtune" devices 2>/dev/null | grep -qi llvmpipe; then
  why="no Rusticl llvmpipe device (install mesa-opencl-icd: bash scripts/deps.sh)"
  ci=${CLNORM_CI:-}
  [[ -z $ci && -n ${CI:-} && ${CI:-} != false && ${CI:-} != 0 ]] && ci=1
  if [[ ${ci:-0} != 0 ]]; then
    echo "FAIL: $why; \`normtune devices\` lists:" >&2
    "$normtune" devices >&2 || true
    exit 1
  fi
  echo "skipped: $why (CLNORM_CI=1 makes this a failure)"
  exit 77
fi
exec "$@"
