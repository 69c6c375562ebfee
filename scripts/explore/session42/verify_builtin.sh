#!/usr/bin/env bash
# Issue 22's last check before a table ships (stop 42): a table (TABLE=FILE, `normtune builtin`
# of a database with the unverified ops' rows deleted; default the shipped src/builtin_table.h)
# built into the library in place of src/builtin_table.h (on the device's copy of the tree
# only), then `normtune verify` with an empty database, so that the dispatcher's choice
# is the table's: the default grid's shapes (the shapes tuned), then the held-out set of
# session39/verify_call.sh. Carry .device-kit. From the repository root, on the GPU machine:
#   TABLE=docs/wip/issue22/table-next.h OPS=add_layernorm bash scripts/explore/session42/verify_builtin.sh
# Files in $OUT: verify-builtin-tuned.txt, verify-builtin-held.txt, build.txt.
set -uo pipefail
source .device-kit/setup.sh
out=${OUT:-/tmp/out}
mkdir -p "$out"
# TABLE: a generated table to check in place of the shipped one (default: the shipped one)
[[ -z ${TABLE:-} ]] || cp "$TABLE" src/builtin_table.h
root=$PWD
# shellcheck source=scripts/gpu_build.sh
source scripts/gpu_build.sh
gpu_build build-bench normtune >"$out/build.txt" 2>&1 || { tail -20 "$out/build.txt"; exit 1; }
unset CLNORM_NO_BUILTIN CLNORM_DB
none=$(mktemp -d)/none.db
ops=${OPS:-layernorm,rmsnorm} dtypes=${DTYPES:-f32,f16,bf16}
cols=64,128,256,512,768,1024,1536,2048,2560,3072,4096,5120,6144,8192,12288,14336,16384,32768,65536
held=4x96,48x300,200x700,1000x1000,3000x2000,6000x3000,100x5000,9000x6000,32x10000,24576x768,700x13000,64x20000,200x40000,30000x512,12x24576,5000x1536
start=$SECONDS
build-bench/normtune verify --device NVIDIA --db "$none" --ops "$ops" --dtypes "$dtypes" \
  --cols "$cols" --rows 8,128,2048,16384 >"$out/verify-builtin-tuned.txt" 2>&1
echo "== verify, the shapes tuned: exit $? after $((SECONDS - start)) s"
start=$SECONDS
build-bench/normtune verify --device NVIDIA --db "$none" --ops "$ops" --dtypes "$dtypes" \
  --grid "$held" >"$out/verify-builtin-held.txt" 2>&1
echo "== verify, held-out: exit $? after $((SECONDS - start)) s"
# the rows' sources (the `why` column: builtin, builtin (sibling), heuristic, ...): with no
# database, none may say tuned
for f in tuned held; do
  head -4 "$out/verify-builtin-$f.txt"
  tail -8 "$out/verify-builtin-$f.txt"
  echo "== $f, rows by source:"
  awk -F'|' 'NF == 3 { split($3, w, " "); n[w[1]]++ } END { for (k in n) print "  " k, n[k] }' \
    "$out/verify-builtin-$f.txt"
done
exit 0
