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
# nvidia:2") caps the parts of each, and when they would be more the newest files are packed, as
# many as fit (the programs of the op and dtype the run is on; a finished one's are not built
# again). Put the parts in build-tune/ to resume: they are unpacked from there (the single
# caches-CARD.tar.xz and caches-CARD-PART.tar.xz of before too), and a resumed run skips NVIDIA's
# compiles of the programs an earlier call built. NVIDIA's half matters most: the driver compiles
# PTX to machine code one program at a time (about 4 programs a second on the H200 from 16
# threads, from source or from clnorm's PTX alike; docs/DEVICES.md), so a call that carries
# clnorm's cache alone spends minutes on the programs it resumes with. CUDA_CACHE_MAXSIZE is
# raised to 4 GiB (NVIDIA's cache held 186 MB for 1,379 programs; the default size evicts).
# The database may be carried as build-tune/CARD.db or build-tune/CARD.db.gz (2 MB where the
# database is 12; the carried files may be 64 MiB in all).
# BUILD="normtune build options" (e.g. "--ops layernorm --dtypes bf16"): before the tune, `normtune
# build BUILD --part I/N` in BUILD_PROCS processes at once (default 8), into the caches the run
# uses, for at most BUILD_LIMIT seconds (default 300; what was built is kept): NVIDIA's compiler
# runs one program at a time per process (docs/DEVICES.md); the tune then loads them.
# Exit status: normtune tune's (130: a signal cut it short; 124: STOP_AFTER did; the same call
# resumes).
set -euo pipefail
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
for packed in "$caches.tar.xz" "$caches-clnorm.tar.xz" "$caches-nvidia.tar.xz"; do
  if [ -f "$packed" ]; then
    tar -xJf "$packed" -C "$root/build-tune" && rm -f "$packed" ||
      echo "== $packed: not unpacked" >&2
  fi
done
for part in clnorm nvidia; do
  parts=("$caches-$part.tar.xz".[0-9])
  if [ -f "${parts[0]}" ]; then
    cat "${parts[@]}" | tar -xJf - -C "$root/build-tune" && rm -f "${parts[@]}" ||
      echo "== $caches-$part.tar.xz.*: not unpacked" >&2
  fi
done
mkdir -p "$caches/clnorm" "$caches/nvidia"
# normtune keeps candidates out of the binary cache unless CLNORM_NO_BINARY_CACHE is set (to 0)
export CLNORM_NO_BINARY_CACHE=0 CLNORM_BINARY_CACHE_DIR=$caches/clnorm CUDA_CACHE_PATH=$caches/nvidia
export CUDA_CACHE_MAXSIZE=${CUDA_CACHE_MAXSIZE:-4294967296}
echo "== caches $caches: $(find "$caches" -type f | wc -l) files" >&2
echo "== card $card, database $db ($( [ -f "$db" ] && echo resumed || echo new ))" >&2
if [ -n "${BUILD:-}" ]; then
  procs=${BUILD_PROCS:-8} start=$SECONDS pids=()
  for i in $(seq 1 "$procs"); do
    # shellcheck disable=SC2086 # BUILD is a list of options
    timeout "${BUILD_LIMIT:-300}" "$normtune" build --device "$device" $BUILD --part "$i/$procs" \
      --quiet >"$out/build-$i.txt" 2>&1 &
    pids+=($!)
  done
  for pid in "${pids[@]}"; do
    wait "$pid" || echo "== build: a part exited with status $?" >&2
  done
  echo "== build $BUILD: $procs processes in $((SECONDS - start)) s" >&2
  cat "$out"/build-*.txt >&2
  rm -f "$out"/build-*.txt
fi
start=$SECONDS
rc=0
stop=()
[ -n "${STOP_AFTER:-}" ] && stop=(timeout -s INT "$STOP_AFTER")
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
# pack_cache PART MAXPARTS: build-tune/caches-CARD/PART as $OUT/caches-CARD-PART.tar.xz.N, the
# newest files first, as many as MAXPARTS parts of 15 MiB hold (a second try keeps the share of
# the newest files that the first try's size says fits, with a tenth to spare; a third, half that).
pack_cache() {
  local part=$1 max=$2 list keep total size n try
  list=$(mktemp)
  (cd "$root/build-tune" && find "caches-$card/$part" -type f -printf '%T@ %p\n') |
    sort -rn | cut -d' ' -f2- >"$list"
  total=$(wc -l <"$list")
  if [ "$total" -eq 0 ]; then
    echo "== caches, $part: empty" >&2
    rm -f "$list"
    return 0
  fi
  keep=$total
  for try in 1 2 3; do
    rm -f "$out/caches-$card-$part.tar.xz".[0-9]
    [ "$keep" -gt 0 ] || break
    head -n "$keep" "$list" | tar -C "$root/build-tune" -cf - -T - | xz -T0 -6 |
      split -b 15M -d -a 1 - "$out/caches-$card-$part.tar.xz."
    n=$(find "$out" -maxdepth 1 -name "caches-$card-$part.tar.xz.[0-9]" | wc -l)
    size=$(cat "$out/caches-$card-$part.tar.xz".[0-9] | wc -c)
    if [ "$n" -le "$max" ]; then
      echo "== caches, $part: $keep of $total files, $((size / 1048576)) MiB packed in $n part(s)" >&2
      rm -f "$list"
      return 0
    fi
    keep=$((keep * max * 15 * 1048576 * 9 / (10 * size * try)))
  done
  rm -f "$out/caches-$card-$part.tar.xz".[0-9] "$list"
  echo "== caches, $part: not packed (over $max parts of 15 MiB)" >&2
}
for spec in ${CACHE_PARTS:-clnorm:1 nvidia:2}; do
  pack_cache "${spec%%:*}" "${spec#*:}"
done
tail -5 "$out/show-$card.txt"
exit "$rc"
