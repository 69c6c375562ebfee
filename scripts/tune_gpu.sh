#!/usr/bin/env bash
# A tuning run on the GPU machine that resumes across calls and sessions: one database per card
# model, kept in build-tune/ (carry it to the machine and copy it back from $OUT).
#
#   bash scripts/tune_gpu.sh [normtune tune options]     e.g. --ops all --dtypes all --budget 540
#
# 1. builds normtune (Release, build-bench; the device kit's setup.sh is sourced when nvidia-smi
#    exists); 2. names the card from nvidia-smi (h100-80gb-hbm3, h200, ...; CARD= overrides) and
#    copies build-tune/CARD.db (when carried) to the working database; 3. `normtune tune --device
#    NVIDIA --db DB OPTIONS`; 4. `normtune show` and `normtune export` of that device.
# Files in $OUT (or ./build-tune/out): CARD.db.gz (gunzip it into build-tune/ to resume; the
# machine's files come back only up to a size), CARD.json (`normtune export --winners`, for
# docs/tuned/), show-CARD.txt, tune-CARD.log (every progress line).
# Environment: DEVICE (default NVIDIA), KIT (default .device-kit), VERIFY="verify options": also
# `normtune verify --device DEVICE --db DB VERIFY` after the run (its output in verify-CARD.txt);
# STOP_AFTER=SECONDS: interrupt the tune (SIGINT, results kept) after that long, so that one call
# of the machine's 10-minute limit still exports; unlike --budget it does not hurry the shapes.
# The programs built go with the database: clnorm's binary cache and NVIDIA's own (CUDA_CACHE_PATH)
# are kept in build-tune/caches-CARD/{clnorm,nvidia} and packed into $OUT/caches-CARD-clnorm.tar.xz.N
# and $OUT/caches-CARD-nvidia.tar.xz.N, one xz stream cut into 15 MiB parts (a file that comes back
# from the machine may be 16 MiB, and at most 8 come back): CACHE_PARTS (default "clnorm:1
# nvidia:2") caps the parts of each: the stream holds the newest files first (the programs of the
# op and dtype the run is on; a finished one's are not built again) and is cut after that many
# parts, which also stops the compression there. Put the parts in build-tune/ to resume: they are
# unpacked from there (the single caches-CARD.tar.xz and caches-CARD-PART.tar.xz of before too);
# of a cut stream the files it holds whole are kept and the one the cut fell in is dropped. A
# resumed run skips NVIDIA's compiles of the programs an earlier call built. NVIDIA's half matters
# most: the driver compiles PTX to machine code one program at a time per process (about 4 a
# second on the H200 from one process's 16 threads, 30 a second from 8 processes of `normtune
# build`; docs/DEVICES.md), so a call that carries clnorm's cache alone spends minutes on the
# programs it resumes with. CUDA_CACHE_MAXSIZE is raised to 4 GiB (NVIDIA's cache held 775 MB for
# 4,706 programs; the default size evicts). XZ_LEVEL (default 8): xz's preset for the packing;
# 8 (a 32 MiB dictionary) made the H200's cached programs 22-29% smaller than 6 did, so the
# parts a call brings back hold its caches whole: on 2026-11-30 clnorm's 5,673 programs packed
# into one 10 MiB part in 44-47 s and NVIDIA's 7,512 files into two (28 MiB) in 56 s, and the
# next call's build loaded all 4,404 of its programs in 2 s (from the cut caches of xz -6 the
# call before: 67 s). PACK_SECONDS (below) must leave time for it.
# The database may be carried as build-tune/CARD.db or build-tune/CARD.db.gz (2 MB where the
# database is 12; the carried files may be 64 MiB in all).
# BUILD="normtune build options" (e.g. "--ops layernorm --dtypes bf16"): before the tune, `normtune
# build BUILD --part I/N` in BUILD_PROCS processes at once (default 8), into the caches the run
# uses, for at most BUILD_LIMIT seconds (default 300; then SIGINT: what was built is kept and
# counted, exit status 130): NVIDIA's compiler
# runs one program at a time per process (docs/DEVICES.md); the tune then loads them.
# CALL_LIMIT=SECONDS: the whole script's time (a device call's limit less a margin, e.g. 570 of
# 600): the build ends a minute before, and the tune (STOP_AFTER or not) 15 s before, the time
# kept for the packing (PACK_SECONDS, default 120: xz -8 packed both caches in about 105 s), so
# that the caches are packed before the call is killed (a call killed while packing returns a
# stream cut anywhere).
# Exit status: normtune tune's (130: a signal cut it short; 124: STOP_AFTER did; the same call
# resumes).
set -euo pipefail
call_start=$SECONDS
# time_left: CALL_LIMIT's seconds not yet spent, less PACK_SECONDS kept for the packing
time_left() {
  echo $((CALL_LIMIT - (SECONDS - call_start) - ${PACK_SECONDS:-120}))
}
root=$(cd "$(dirname "$0")/.." && pwd)
out=${OUT:-$root/build-tune/out}
mkdir -p "$out" "$root/build-tune"
kit=${KIT:-$root/.device-kit}
if command -v nvidia-smi >/dev/null 2>&1; then
  # shellcheck disable=SC1091 # the kit is carried to the machine beside the repository
  source "$kit/setup.sh"
fi
# shellcheck source=scripts/gpu_build.sh
source "$root/scripts/gpu_build.sh"
gpu_build "$root/build-bench" normtune
normtune=$root/build-bench/normtune
device=${DEVICE:-NVIDIA}
card=${CARD:-}
if [ -z "$card" ] && command -v nvidia-smi >/dev/null 2>&1; then
  card=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1 |
         tr '[:upper:]' '[:lower:]' | sed 's/^nvidia //; s/[^a-z0-9]\+/-/g; s/-$//')
fi
card=${card:-device}
db=$root/build-tune/$card.db
if [ ! -f "$db" ] && [ -f "$db.gz" ]; then
  gunzip -c "$db.gz" >"$db.part" && mv "$db.part" "$db" && rm -f "$db.gz"
fi
caches=$root/build-tune/caches-$card
# unpack FILE...: one xz stream of a tar, in parts, perhaps cut short (pack_cache cuts it where
# the parts allowed); the files it holds whole are kept, the one the cut fell in is removed
unpack() {
  local names last n
  names=$(mktemp)
  if cat "$@" | xz -dc 2>/dev/null | tar -xvf - -C "$root/build-tune" >"$names" 2>/dev/null; then
    echo "== ${1%.[0-9]}: $(grep -vc "/$" "$names") files unpacked" >&2
  else
    last=$(tail -n 1 "$names")
    case $last in caches-"$card"/*) rm -f "$root/build-tune/$last" ;; esac
    n=$(grep -vc "/$" "$names")
    echo "== ${1%.[0-9]}: cut short, $((n > 0 ? n - 1 : 0)) files unpacked whole (the one cut dropped)" >&2
  fi
  rm -f "$names" "$@"
}
for packed in "$caches.tar.xz" "$caches-clnorm.tar.xz" "$caches-nvidia.tar.xz"; do
  if [ -f "$packed" ]; then unpack "$packed"; fi
done
for part in clnorm nvidia; do
  parts=("$caches-$part.tar.xz".[0-9])
  if [ -f "${parts[0]}" ]; then unpack "${parts[@]}"; fi
done
mkdir -p "$caches/clnorm" "$caches/nvidia"
# normtune keeps candidates out of the binary cache unless CLNORM_NO_BINARY_CACHE is set (to 0)
export CLNORM_NO_BINARY_CACHE=0 CLNORM_BINARY_CACHE_DIR=$caches/clnorm CUDA_CACHE_PATH=$caches/nvidia
export CUDA_CACHE_MAXSIZE=${CUDA_CACHE_MAXSIZE:-4294967296}
echo "== caches $caches: $(find "$caches" -type f | wc -l) files" >&2
echo "== card $card, database $db ($( [ -f "$db" ] && echo resumed || echo new ))" >&2
build_limit=${BUILD_LIMIT:-300}
if [ -n "${CALL_LIMIT:-}" ] && [ "$build_limit" -gt "$(($(time_left) - 60))" ]; then
  build_limit=$(($(time_left) - 60)) # a minute of tuning left at least
fi
if [ -n "${BUILD:-}" ] && [ "$build_limit" -le 0 ]; then
  echo "== build $BUILD: skipped, CALL_LIMIT leaves no time" >&2
elif [ -n "${BUILD:-}" ]; then
  procs=${BUILD_PROCS:-8} start=$SECONDS
  # shellcheck disable=SC2086 # BUILD is a list of options
  built=$(gpu_build_parts "$normtune" "$procs" "$build_limit" --device "$device" $BUILD)
  echo "== build $BUILD: $procs processes in $((SECONDS - start)) s" >&2
  echo "$built" >&2
fi
start=$SECONDS
rc=0
stop=() stop_after=${STOP_AFTER:-}
if [ -n "${CALL_LIMIT:-}" ]; then
  # show, export and the database's gzip take seconds; the tune gets the rest before the packing
  left=$(($(time_left) - 15))
  [ "$left" -ge 1 ] || left=1
  if [ -z "$stop_after" ] || [ "$stop_after" -gt "$left" ]; then stop_after=$left; fi
fi
[ -n "$stop_after" ] && stop=(timeout -s INT "$stop_after")
# every line (normtune prints each evaluation on stdout, progress and summaries on stderr), the
# log's lines led by the seconds since the start (where a call's time went: builds, big shapes)
stamp='import sys, time
t = time.time()
for line in sys.stdin:
    sys.stdout.write("%7.1f %s" % (time.time() - t, line))
    sys.stdout.flush()'
"${stop[@]}" "$normtune" tune --device "$device" --db "$db" "$@" 2>&1 | python3 -u -c "$stamp" |
  tee "$out/tune-$card.log" >&2 ||
  rc=$?
echo "== tune: exit $rc after $((SECONDS - start)) s" >&2
"$normtune" show --device "$device" --db "$db" >"$out/show-$card.txt" 2>&1 || true
"$normtune" export "$out/$card.json" --winners --db "$db" || true
if [ -n "${VERIFY:-}" ]; then
  # shellcheck disable=SC2086 # VERIFY is a list of options
  "$normtune" verify --device "$device" --db "$db" $VERIFY >"$out/verify-$card.txt" 2>&1 || rc=$?
  tail -40 "$out/verify-$card.txt"
fi
gzip -c "$db" >"$out/$card.db.gz"
# pack_cache PART MAXPARTS: build-tune/caches-CARD/PART as $OUT/caches-CARD-PART.tar.xz.N, one
# xz stream of the newest files first, cut after MAXPARTS parts of 15 MiB: the compression stops
# there (what is left out is the oldest files), and unpack keeps the files the cut stream holds
# whole. One pass: the time goes on what comes back.
pack_cache() {
  local part=$1 max=$2 list total size n status
  list=$(mktemp)
  (cd "$root/build-tune" && find "caches-$card/$part" -type f -printf '%T@ %p\n') |
    sort -rn | cut -d' ' -f2- >"$list"
  total=$(wc -l <"$list")
  rm -f "$out/caches-$card-$part.tar.xz".[0-9]
  if [ "$total" -eq 0 ]; then
    echo "== caches, $part: empty" >&2
    rm -f "$list"
    return 0
  fi
  local start=$SECONDS
  tar -C "$root/build-tune" -cf - -T "$list" 2>/dev/null | xz -T0 "-${XZ_LEVEL:-8}" | head -c $((max * 15 * 1048576)) |
    split -b 15M -d -a 1 - "$out/caches-$card-$part.tar.xz." && status=0 || status=$?
  n=$(find "$out" -maxdepth 1 -name "caches-$card-$part.tar.xz.[0-9]" | wc -l)
  size=$(cat "$out/caches-$card-$part.tar.xz".[0-9] | wc -c)
  if [ "$status" -eq 0 ]; then
    echo "== caches, $part: $total files, $((size / 1048576)) MiB packed in $n part(s) in $((SECONDS - start)) s" >&2
  else
    echo "== caches, $part: the newest of $total files, cut at $n part(s) ($((size / 1048576)) MiB) in $((SECONDS - start)) s" >&2
  fi
  rm -f "$list"
}
for spec in ${CACHE_PARTS:-clnorm:1 nvidia:2}; do
  pack_cache "${spec%%:*}" "${spec#*:}"
done
tail -5 "$out/show-$card.txt"
exit "$rc"
