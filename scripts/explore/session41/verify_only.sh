#!/usr/bin/env bash
# normtune verify of build-tune/h200.db (gzipped or not) for several OPS:DTYPES pairs, each the
# shapes tuned then the held-out set (session39/verify_call.sh), one file per pair in $OUT, within
# LIMIT seconds in all (default 240). Carry .device-kit and build-tune. From the repository root:
#   LIMIT=240 bash scripts/explore/session41/verify_only.sh layernorm:bf16 rmsnorm:f16,bf16
set -uo pipefail
out=${OUT:-/tmp/out}
mkdir -p "$out"
db=build-tune/h200.db
[ -f "$db" ] || gunzip -c "$db.gz" >"$db"
end=$((SECONDS + ${LIMIT:-240}))
for pair in "$@"; do
  left=$((end - SECONDS))
  [ "$left" -gt 20 ] || { echo "== $pair: no time left"; continue; }
  ops=${pair%%:*} dtypes=${pair#*:}
  mkdir -p "$out/v"
  OUT=$out/v timeout "$left" bash scripts/explore/session39/verify_call.sh "$ops" "$dtypes"
  cat "$out"/v/verify-tuned.txt "$out"/v/verify-held.txt >"$out/verify-$ops-${dtypes//,/-}.txt" 2>/dev/null
  rm -rf "$out/v"
done
