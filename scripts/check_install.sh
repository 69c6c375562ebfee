#!/usr/bin/env bash
# clnorm as its users get it. Builds with warnings as errors, installs into a temporary prefix and
# moves the build tree away; checks the installed files (headers, libclnorm.so with its SONAME,
# libclnorm.a, normtune and normtune.1, the CMake package, clnorm.pc, LICENSE and NOTICE, the
# licence named in clnorm.pc and the CMake package); then builds a copy of examples/ outside the
# tree against that prefix, once through find_package(clnorm) with CMAKE_PREFIX_PATH and once
# through pkg-config with PKG_CONFIG_PATH, each against the shared and the static library, and
# runs every program on the default OpenCL device. Exits non-zero at the first failure.
#   bash scripts/check_install.sh
#   KEEP=1 bash scripts/check_install.sh     # keep the temporary directory
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/deps.sh
source_dir=$PWD

version=$(sed -n 's/^project(clnorm VERSION \([0-9][0-9.]*\).*/\1/p' CMakeLists.txt)
major=${version%%.*}
if [ -z "$version" ]; then
  echo "check_install: no project(clnorm VERSION ...) in CMakeLists.txt" >&2
  exit 1
fi

work=$(mktemp -d "${TMPDIR:-/tmp}/clnorm-check-install.XXXXXX")
cleanup() {
  if [ "${KEEP:-0}" = 1 ]; then echo "check_install: kept $work"; else rm -rf "$work"; fi
}
trap cleanup EXIT
build=$work/build
prefix=$work/prefix

fail() {
  echo "check_install: FAIL: $*" >&2
  exit 1
}
ok() { echo "  ok: $*"; }
# Runs a command quietly; prints its output when it fails.
quiet() {
  local what=$1 log
  shift
  log=$work/$(tr -c 'a-zA-Z0-9\n' _ <<<"$what").log
  if ! "$@" >"$log" 2>&1; then
    cat "$log" >&2
    fail "$what"
  fi
}
# Runs an example; prints its output; fails when it does.
run_example() {
  echo "  \$ $*"
  "$@" 2>&1 | sed 's/^/    /' || fail "$* exited with status ${PIPESTATUS[0]}"
}
# The libclnorm.so.MAJOR that a dynamically linked program loads must be the installed one.
check_loads_installed() {
  local resolved
  resolved=$(ldd "$1" | sed -n "s/^[[:space:]]*libclnorm\.so\.$major => \([^ ]*\).*/\1/p")
  [ "$resolved" = "$libdir/libclnorm.so.$major" ] ||
    fail "$1 loads libclnorm.so.$major from '${resolved:-nowhere}', not $libdir"
}

echo "== clnorm $version: build (warnings as errors) and install into $prefix"
quiet "configure" cmake -S "$source_dir" -B "$build" -DCMAKE_BUILD_TYPE=Release -DCLNORM_WERROR=ON \
  -DCLNORM_BUILD_TESTS=OFF
quiet "build" cmake --build "$build" -j"$(nproc)"
# --prefix at install time, not at configure time: clnorm.pc and the CMake package must follow it.
quiet "install" cmake --install "$build" --prefix "$prefix"
# Nothing below may use the build tree.
mv "$build" "$work/build.moved-away"

echo "== installed files"
so=$(find "$prefix" -name "libclnorm.so.$version" -type f)
if [ -z "$so" ] || [ "$(wc -l <<<"$so")" != 1 ]; then
  fail "not one libclnorm.so.$version under $prefix: ${so:-none}"
fi
libdir=$(dirname "$so")
for f in include/clnorm.h include/clnorm_variant.h bin/normtune share/man/man1/normtune.1; do
  [ -f "$prefix/$f" ] || fail "$prefix/$f is missing"
done
for f in libclnorm.a cmake/clnorm/clnormConfig.cmake cmake/clnorm/clnormConfigVersion.cmake \
         cmake/clnorm/clnormTargets.cmake cmake/clnorm/clnormStaticTargets.cmake \
         pkgconfig/clnorm.pc; do
  [ -f "$libdir/$f" ] || fail "$libdir/$f is missing"
done
ok "headers, libclnorm.a, normtune and its man page, CMake package and clnorm.pc in $prefix"
for f in LICENSE NOTICE; do
  cmp -s "$source_dir/$f" "$prefix/share/doc/clnorm/$f" ||
    fail "$prefix/share/doc/clnorm/$f is missing or differs from the source tree's $f"
done
grep -qx 'License: Apache-2.0' "$libdir/pkgconfig/clnorm.pc" ||
  fail "clnorm.pc does not name the licence (License: Apache-2.0)"
ok "LICENSE and NOTICE in $prefix/share/doc/clnorm; clnorm.pc says License: Apache-2.0"
[ "$(readlink "$libdir/libclnorm.so.$major")" = "libclnorm.so.$version" ] ||
  fail "libclnorm.so.$major does not link to libclnorm.so.$version"
[ "$(readlink "$libdir/libclnorm.so")" = "libclnorm.so.$major" ] ||
  fail "libclnorm.so does not link to libclnorm.so.$major"
ok "libclnorm.so -> libclnorm.so.$major -> libclnorm.so.$version"
soname=$(readelf -d "$so" | sed -n 's/.*(SONAME).*\[\(.*\)\].*/\1/p')
[ "$soname" = "libclnorm.so.$major" ] || fail "SONAME of $so is '$soname', not libclnorm.so.$major"
ok "SONAME $soname"
for f in "$so" "$prefix/bin/normtune"; do
  if readelf -d "$f" | grep -E '\((RPATH|RUNPATH)\)' | grep -q "$work/build"; then
    fail "$f has a run path into the build tree"
  fi
done
exported=$(nm -D --defined-only "$so" | awk '{print $NF}')
for sym in clnorm_version_string clnorm_version_number clnorm_add_rmsnorm clnorm_run; do
  grep -qx "$sym" <<<"$exported" || fail "$so does not export $sym"
done
if grep -q '^clnorm__' <<<"$exported"; then
  fail "$so exports internal symbols: $(grep '^clnorm__' <<<"$exported" | head -3 | tr '\n' ' ')"
fi
ok "public symbols exported, clnorm__ ones hidden"
quiet "normtune --help" "$prefix/bin/normtune" --help
quiet "normtune devices" "$prefix/bin/normtune" devices
ok "normtune runs"

# From here on, clnorm is found through these two variables only.
export CMAKE_PREFIX_PATH=$prefix
export PKG_CONFIG_PATH=$libdir/pkgconfig
unset PKG_CONFIG_LIBDIR CMAKE_INSTALL_PREFIX LD_LIBRARY_PATH || true

echo "== pkg-config"
[ "$(pkg-config --modversion clnorm)" = "$version" ] ||
  fail "pkg-config --modversion clnorm is not $version"
[ "$(pkg-config --variable=prefix clnorm)" = "$prefix" ] ||
  fail "clnorm.pc's prefix is $(pkg-config --variable=prefix clnorm), not $prefix"
ok "clnorm $version at $prefix: $(pkg-config --cflags --libs clnorm)"
ok "static: $(pkg-config --static --libs clnorm)"
# The installed headers on their own, in C99 and C++, pedantic.
header_test='#include <clnorm_variant.h>
#if CLNORM_VERSION_NUMBER < 1
#error CLNORM_VERSION_NUMBER
#endif
int main(void) { return clnorm_version_number() / 10000u == CLNORM_VERSION_MAJOR ? 0 : 1; }'
read -ra pc_flags <<<"$(pkg-config --cflags --libs clnorm)"
quiet "clnorm.h in C99" cc -std=c99 -Wall -Wextra -Werror -pedantic -x c - -o "$work/header_c" \
  "${pc_flags[@]}" <<<"$header_test"
quiet "clnorm.h in C++" c++ -std=c++11 -Wall -Wextra -Werror -pedantic -x c++ - \
  -o "$work/header_cxx" "${pc_flags[@]}" <<<"$header_test"
quiet "header version = library version" env LD_LIBRARY_PATH="$libdir" "$work/header_c"
ok "clnorm.h and clnorm_variant.h compile alone as C99 and C++11"

# A copy of the examples outside the source tree, as an application would have them.
copy_examples() {
  mkdir -p "$1"
  cp "$source_dir"/examples/CMakeLists.txt "$source_dir"/examples/Makefile \
     "$source_dir"/examples/*.c "$1"/
}

echo "== examples through the CMake package: find_package(clnorm), CMAKE_PREFIX_PATH=$prefix"
copy_examples "$work/example-src"
quiet "configure the example" cmake -S "$work/example-src" -B "$work/example-cmake" \
  -DCMAKE_BUILD_TYPE=Release -DCMAKE_C_FLAGS="-Wall -Wextra -Werror"
found=$(sed -n 's/^clnorm_DIR:PATH=//p' "$work/example-cmake/CMakeCache.txt")
[ "$found" = "$libdir/cmake/clnorm" ] ||
  fail "find_package(clnorm) found '$found', not $libdir/cmake/clnorm"
ok "clnorm_DIR=$found"
mkdir -p "$work/licence-src"
cat >"$work/licence-src/CMakeLists.txt" <<'CMAKE'
cmake_minimum_required(VERSION 3.16)
project(clnorm_licence LANGUAGES C)
find_package(clnorm REQUIRED)
file(WRITE "${CMAKE_BINARY_DIR}/licence.txt" "${clnorm_LICENSE} ${clnorm_LICENSE_FILE}")
CMAKE
quiet "find_package(clnorm) for its licence" cmake -S "$work/licence-src" -B "$work/licence-build"
licence=$(cat "$work/licence-build/licence.txt")
[ "$licence" = "Apache-2.0 $prefix/share/doc/clnorm/LICENSE" ] ||
  fail "find_package(clnorm): clnorm_LICENSE and clnorm_LICENSE_FILE are '$licence', not" \
    "'Apache-2.0 $prefix/share/doc/clnorm/LICENSE'"
ok "find_package(clnorm): clnorm_LICENSE and clnorm_LICENSE_FILE: $licence"
quiet "build the example (CMake)" cmake --build "$work/example-cmake" -j"$(nproc)"
check_loads_installed "$work/example-cmake/transformer_block"
for exe in transformer_block transformer_block_static minimal minimal_static; do
  run_example "$work/example-cmake/$exe"
done

# Users of the shared library alone need no SQLite development files.
quiet "find_package(clnorm) without SQLite" cmake -S "$work/example-src" \
  -B "$work/example-cmake-shared" -DCLNORM_EXAMPLE_STATIC=OFF \
  -DCMAKE_DISABLE_FIND_PACKAGE_SQLite3=ON
quiet "build the example (CMake, shared only)" cmake --build "$work/example-cmake-shared" \
  -j"$(nproc)"
ok "clnorm::clnorm without SQLite development files"

echo "== examples through pkg-config: PKG_CONFIG_PATH=$PKG_CONFIG_PATH"
copy_examples "$work/example-make"
quiet "build the example (make)" make -C "$work/example-make" CFLAGS="-O2 -Wall -Wextra -Werror"
check_loads_installed "$work/example-make/transformer_block"
for exe in transformer_block transformer_block_static minimal minimal_static; do
  run_example "$work/example-make/$exe"
done

echo "check_install: PASS (clnorm $version installed, found by CMake and by pkg-config)"
