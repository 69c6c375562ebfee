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
# are kept in build-tune/caches-CARD/{clnorm,nvidia} and packed into $OUT/caches-CARD-clnorm.tar.xz
# and $OUT/caches-CARD-nvidia.tar.xz, each kept when under the 16 MiB a file that comes back from
# the machine may be (the two in one file were 23 MiB after LayerNorm float32's 76 shapes on the
# H200; put them in build-tune/ to resume), unpacked from build-tune/ when carried (the single
# caches-CARD.tar.xz of before too): a resumed run then skips NVIDIA's compiles of the programs an
# earlier call built (H100: 228 ms a program cold, 88 with clnorm's cache alone, 3.9 with both;
# docs/PERFORMANCE.md, start-up).
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
caches=$root/build-tune/caches-$card
for packed in "$caches.tar.xz" "$caches-clnorm.tar.xz" "$caches-nvidia.tar.xz"; do
  if [ -f "$packed" ]; then
    tar -xJf "$packed" -C "$root/build-tune" && rm -f "$packed" ||
      echo "== $packed: not unpacked" >&2
  fi
done
mkdir -p "$caches/clnorm" "$caches/nvidia"
# normtune keeps candidates out of the binary cache unless CLNORM_NO_BINARY_CACHE is set (to 0)
export CLNORM_NO_BINARY_CACHE=0 CLNORM_BINARY_CACHE_DIR=$caches/clnorm CUDA_CACHE_PATH=$caches/nvidia
export CUDA_CACHE_MAXSIZE=${CUDA_CACHE_MAXSIZE:-4294967296}
echo "== caches $caches: $(find "$caches" -type f | wc -l) files" >&2
echo "== card $card, database $db ($( [ -f "$db" ] && echo resumed || echo new ))" >&2
start=$SECONDS
rc=0
stop=()
[ -n "${STOP_AFTER:-}" ] && stop=(timeout -s INT "$STOP_AFTER")
# every line (normtune prints each evaluation on stdout, progress and summaries on stderr)
"${stop[@]}" "$normtune" tune --device "$device" --db "$db" "$@" 2>&1 | tee "$out/tune-$card.log" >&2 ||
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
for part in clnorm nvidia; do
  packed=$out/caches-$card-$part.tar.xz
  if tar -C "$root/build-tune" -I "xz -T0 -6" -cf "$packed" "caches-$card/$part"; then
    size=$(stat -c %s "$packed")
    echo "== caches, $part: $(find "$caches/$part" -type f | wc -l) files, $((size / 1048576)) MiB packed" >&2
    if [ "$size" -gt $((16 * 1048576)) ]; then
      echo "== caches, $part: over the 16 MiB a file that comes back may be; not kept" >&2
      rm -f "$packed"
    fi
  fi
done
tail -5 "$out/show-$card.txt"
exit "$rc"
