#!/usr/bin/env bash
# Issue 22's last check before a table ships (stop 42): a table (TABLE=FILE, `normtune builtin`
# of a database with the unverified ops' rows deleted; default the shipped src/builtin_table.h)
# built into the library in place of src/builtin_table.h (on the device's copy of the tree
# only), then session39/verify_call.sh with an empty database, so that the dispatcher's choice
# is the table's: the default grid's shapes (the shapes tuned), then its held-out set. Carry
# .device-kit. From the repository root, on the GPU machine:
#   TABLE=docs/wip/issue22/table-next.h OPS=add_layernorm bash scripts/explore/session42/verify_builtin.sh
# Files in $OUT: verify-builtin-tuned.txt, verify-builtin-held.txt, build.txt.
set -uo pipefail
out=${OUT:-/tmp/out}
mkdir -p "$out"
# TABLE: a generated table to check in place of the shipped one (default: the shipped one)
[[ -z ${TABLE:-} ]] || cp "$TABLE" src/builtin_table.h
unset CLNORM_NO_BUILTIN CLNORM_DB
none=$(mktemp -d)/none.db
cols=64,128,256,512,768,1024,1536,2048,2560,3072,4096,5120,6144,8192,12288,14336,16384,32768,65536
DB=$none TUNED="--cols $cols --rows 8,128,2048,16384" OUT=$out \
  bash scripts/explore/session39/verify_call.sh "${OPS:-layernorm,rmsnorm}" "${DTYPES:-f32,f16,bf16}"
for f in tuned held; do
  mv "$out/verify-$f.txt" "$out/verify-builtin-$f.txt"
  # the rows' sources (the `why` column: builtin, builtin (sibling), heuristic, ...): with no
  # database, none may say tuned
  echo "== $f, rows by source:"
  awk -F'|' 'NF == 3 { split($3, w, " "); n[w[1]]++ } END { for (k in n) print "  " k, n[k] }' \
    "$out/verify-builtin-$f.txt"
done
exit 0
