#!/usr/bin/env bash
# Windows, as far as this Linux machine can take it: cross-compiles and links libclnorm.dll (with
# its import library) and normtune.exe for 64-bit Windows with mingw-w64, warnings as errors,
# against the Khronos OpenCL headers, an OpenCL import library made by dlltool from
# scripts/mingw/OpenCL.def, and SQLite built from Debian's source package. Nothing runs them:
# there is no Windows here. Then checks that the DLL exports the API and imports OpenCL.dll.
#   bash scripts/check_mingw.sh
#   CLNORM_MINGW_CACHE=DIR bash scripts/check_mingw.sh   # where SQLite's build is kept
# SQLite's source and its build are kept in $CLNORM_MINGW_CACHE (default: build-mingw/deps), under
# the source package's version: a later run reuses them (cold: under a minute on 2 cores).
set -euo pipefail
cd "$(dirname "$0")/.."
start=$SECONDS
# gcc-mingw-w64-x86-64-win32: mingw-w64's C compiler for 64-bit Windows with Win32 threads
# (src/platform.c needs no winpthreads); the `mingw-w64` metapackage would add C++ and 32-bit
# compilers, four times the download. tcl: SQLite makes its one-file source with tclsh.
bash scripts/deps.sh gcc-mingw-w64-x86-64-win32 binutils-mingw-w64-x86-64 opencl-headers tcl \
  cmake make xz-utils
build=${BUILD_DIR:-build-mingw}
cache=${CLNORM_MINGW_CACHE:-$build/deps}
mkdir -p "$cache"
cache=$(cd "$cache" && pwd)
host=x86_64-w64-mingw32

fail() {
  echo "check_mingw: FAIL: $*" >&2
  exit 1
}
# Runs a command quietly; prints its output when it fails.
quiet() {
  local what=$1 log=$cache/last.log
  shift
  if ! "$@" >"$log" 2>&1; then
    cat "$log" >&2
    fail "$what"
  fi
}

# The headers of the Khronos OpenCL package alone: the build machine's /usr/include holds glibc's
# headers too, which must not reach a Windows build.
mkdir -p "$cache/include"
ln -sfn /usr/include/CL "$cache/include/CL"
[ -f "$cache/include/CL/cl.h" ] || fail "no /usr/include/CL/cl.h (opencl-headers)"
"$host-dlltool" -d scripts/mingw/OpenCL.def -l "$cache/libOpenCL.dll.a"

# SQLite from Debian's source package: apt reads the deb-src twins of the machine's deb sources
# into a state directory of its own, so the machine's apt configuration is left as it is.
apt_dir=$cache/apt
mkdir -p "$apt_dir/sources" "$apt_dir/lists/partial" "$apt_dir/archives/partial"
: >"$apt_dir/sources/deb-src.list"
for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
  if [ -f "$f" ]; then
    sed -n 's/^[[:space:]]*deb[[:space:]]/deb-src /p' "$f" >>"$apt_dir/sources/deb-src.list"
  fi
done
for f in /etc/apt/sources.list.d/*.sources; do
  if [ -f "$f" ]; then
    sed 's/^Types:.*/Types: deb-src/' "$f" >"$apt_dir/sources/$(basename "$f")"
  fi
done
apt_opts=(-o "Dir::Etc::SourceList=$apt_dir/sources/deb-src.list"
          -o "Dir::Etc::SourceParts=$apt_dir/sources" -o "Dir::State::Lists=$apt_dir/lists"
          -o "Dir::Cache=$apt_dir" -o "Debug::NoLocking=1" -o "APT::Sandbox::User=$(id -un)")
# The version apt would fetch; the lists are fetched when there are none yet.
source_version() {
  apt-cache "${apt_opts[@]}" showsrc sqlite3 2>/dev/null | sed -n 's/^Version: //p' | head -1 ||
    true
}
version=$(source_version)
if [ -z "$version" ]; then
  quiet "apt-get update (deb-src lists)" apt-get "${apt_opts[@]}" update
  version=$(source_version)
fi
[ -n "$version" ] || fail "no sqlite3 source package in the deb-src twins of the apt sources"
sqlite=$cache/sqlite-$version
if [ ! -f "$sqlite/libsqlite3.a" ]; then
  echo "check_mingw: building SQLite $version for $host"
  rm -rf "$sqlite" && mkdir -p "$sqlite/src"
  (cd "$sqlite" && quiet "apt-get source sqlite3" apt-get "${apt_opts[@]}" source --download-only \
    "sqlite3=$version")
  # The upstream tarball (the package's other tarball is SQLite's web site); SQLite's build
  # joins its sources into sqlite3.c, which then compiles alone.
  orig=$(find "$sqlite" -maxdepth 1 -name 'sqlite3_*.orig.tar.*' | head -1)
  [ -n "$orig" ] || fail "no sqlite3_*.orig.tar.* among the downloaded source files"
  tar xf "$orig" -C "$sqlite/src" --strip-components=1
  mkdir -p "$sqlite/amalgamation"
  (cd "$sqlite/amalgamation" && quiet "SQLite configure" ../src/configure --disable-tcl &&
    quiet "make sqlite3.c" make sqlite3.c)
  # -O1: a link check, not a fast SQLite; half the compile time of -O2.
  quiet "compile sqlite3.c" "$host-gcc" -O1 -c "$sqlite/amalgamation/sqlite3.c" \
    -o "$sqlite/sqlite3.o" -DSQLITE_OMIT_LOAD_EXTENSION
  quiet "ar libsqlite3.a" "$host-ar" rcs "$sqlite/libsqlite3.a.tmp" "$sqlite/sqlite3.o"
  cp "$sqlite/amalgamation/sqlite3.h" "$sqlite/sqlite3.h"
  mv "$sqlite/libsqlite3.a.tmp" "$sqlite/libsqlite3.a"
  rm -rf "$sqlite/src" "$sqlite/amalgamation" "$sqlite/sqlite3.o" "$sqlite"/sqlite3_*
fi
echo "check_mingw: SQLite $version ready at $((SECONDS - start)) s"

quiet "configure" cmake -S . -B "$build" -DCMAKE_TOOLCHAIN_FILE=cmake/mingw-w64-x86_64.cmake \
  -DCMAKE_BUILD_TYPE=Release -DCLNORM_WERROR=ON -DCLNORM_BUILD_TESTS=OFF \
  -DCMAKE_DISABLE_FIND_PACKAGE_PkgConfig=ON \
  -DOpenCL_INCLUDE_DIR="$cache/include" -DOpenCL_LIBRARY="$cache/libOpenCL.dll.a" \
  -DSQLite3_INCLUDE_DIR="$sqlite" -DSQLite3_LIBRARY="$sqlite/libsqlite3.a"
quiet "build" cmake --build "$build" -j"$(nproc)" --target ${CLNORM_MINGW_TARGETS:-clnorm normtune}

dll=$build/libclnorm.dll
[ -f "$dll" ] || fail "no $dll"
[ -f "$build/libclnorm.dll.a" ] || fail "no import library $build/libclnorm.dll.a"
headers=$("$host-objdump" -p "$dll")
for f in clnorm_ctx_create clnorm_layernorm clnorm_rmsnorm clnorm_set_log_callback; do
  grep -q "[[:space:]]$f\$" <<<"$headers" || fail "$dll does not export $f"
done
grep -q "DLL Name: OpenCL.dll" <<<"$headers" || fail "$dll does not import OpenCL.dll"
exports=$(sed -n '/^\[Ordinal\/Name Pointer\] Table/,/^$/p' <<<"$headers" | grep -c '\] clnorm_')
imports=$(sed -n 's/^[[:space:]]*DLL Name: //p' <<<"$headers" | sort | tr '\n' ' ')
echo "check_mingw: $dll exports $exports clnorm_ functions and imports $imports"
for exe in ${CLNORM_MINGW_TARGETS:-clnorm normtune}; do
  [ "$exe" = clnorm ] || [ -f "$build/$exe.exe" ] || fail "no $build/$exe.exe"
done
echo "check_mingw: ok in $((SECONDS - start)) s (compiled and linked, not run)"
