#!/usr/bin/env bash
# One device call of issue 22's tuning run (stop 40): optionally normtune verify of OPS DTYPES
# from build-tune/h200.db (the shapes tuned, then the held-out set) into one file, then the run
# resumed for STOP_AFTER seconds (scripts/tune_gpu.sh through session39/tune_call.sh). At most 8
# files come back: the database, show, the two logs, the cache parts (1 + 2) and the verify file;
# the winners' export is left out (`normtune export --winners --db` here gives it). From the
# repository root, carrying .device-kit and build-tune (h200.db.gz and the cache parts in it):
#   STOP_AFTER=420 bash scripts/explore/session40/verify_tune_call.sh [--verify OPS DTYPES] [tune options]
set -uo pipefail
out=${OUT:-/tmp/out}
mkdir -p "$out"
db=build-tune/h200.db
if [ ! -f "$db" ] && [ -f "$db.gz" ]; then
  gunzip -c "$db.gz" >"$db" && rm -f "$db.gz"
fi
if [ "${1:-}" = --verify ]; then
  ops=$2 dtypes=$3
  shift 3
  mkdir -p "$out/verify"
  OUT=$out/verify bash scripts/explore/session39/verify_call.sh "$ops" "$dtypes"
  cat "$out"/verify/verify-tuned.txt "$out"/verify/verify-held.txt >"$out/verify-$ops-$dtypes.txt"
  rm -rf "$out/verify"
fi
bash scripts/explore/session39/tune_call.sh "$@"
rm -f "$out"/*.json
