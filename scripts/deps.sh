#!/usr/bin/env bash
# Installs what clnorm needs to build and test on Debian or Ubuntu: a C compiler, CMake, the
# OpenCL headers and ICD loader, PoCL (OpenCL on the CPU, so there is always a device), Mesa's
# Rusticl (a second OpenCL implementation, on the CPU too), SQLite, clinfo, and the tools of the
# checks (Oclgrind, Valgrind, clang with libFuzzer). Does nothing when all of it is installed
# already.
#   bash scripts/deps.sh               # all of the above
#   bash scripts/deps.sh PACKAGE...    # these Debian packages instead (scripts/check_mingw.sh)
# CLNORM_NO_DEPS=1: install nothing (a machine without a package registry, such as the GPU
# machine, where the device kit provides what is missing).
set -euo pipefail
[ "${CLNORM_NO_DEPS:-0}" = 1 ] && exit 0
packages=(build-essential cmake ocl-icd-opencl-dev opencl-headers pocl-opencl-icd clinfo
          libsqlite3-dev sqlite3 pkg-config python3
          mesa-opencl-icd # Mesa's Rusticl: the llvmpipe device of the `rusticl` tests
          oclgrind valgrind # tests/oclgrind.sh (the kernels under a simulator), check_tools.sh
          clang libclang-rt-dev) # scripts/fuzz.sh: libFuzzer (Debian 12: in libclang-rt-dev)
if [ $# -gt 0 ]; then
  packages=("$@")
fi
if ! command -v dpkg-query >/dev/null || ! command -v apt-get >/dev/null; then
  echo "clnorm: not a Debian/Ubuntu system: install the equivalents of ${packages[*]} yourself" >&2
  exit 0
fi
missing=()
for p in "${packages[@]}"; do
  # dpkg -s also succeeds for removed packages that left their configuration behind.
  status=$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null || true)
  [ "$status" = "install ok installed" ] || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi
echo "clnorm: installing ${missing[*]}"
sudo=()
if [ "$(id -u)" -ne 0 ]; then
  if ! command -v sudo >/dev/null; then
    echo "clnorm: need root or sudo to install ${missing[*]}" >&2
    exit 1
  fi
  sudo=(sudo)
fi
export DEBIAN_FRONTEND=noninteractive
${sudo[@]+"${sudo[@]}"} apt-get update -qq
# sudo resets the environment: pass DEBIAN_FRONTEND through env.
${sudo[@]+"${sudo[@]}"} env DEBIAN_FRONTEND=noninteractive \
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
