#!/usr/bin/env bash
# export, then import into an empty database: identical results and winners; the library uses
# the imported winners; a damaged export is refused whole.
source "$(dirname "$0")/common.sh"
A=$WORK/a.db
B=$WORK/new/dir/b.db

step "tune"
tune "$A" tune --ops layernorm,rmsnorm
n=$(results "$A")

step "export, import into an empty database"
expect_rc 0 export_a "$NORMTUNE" export "$WORK/a.json" --db "$A"
expect_in "$WORK/a.json" '"format": "clnorm-tuning"' "the export is a clnorm tuning file"
[[ $(grep -c '"status": ' "$WORK/a.json") -eq $n ]] ||
  fail "the export holds $(grep -c '"status": ' "$WORK/a.json") results, the database $n"
expect_rc 0 import_b "$NORMTUNE" import "$WORK/a.json" --db "$B"
expect_in "$WORK/import_b.out" "imported $n results into $B" "import stores every result"
[[ $(results "$B") -eq $n ]] || fail "the new database holds $(results "$B") results, want $n"

step "identical winners and results"
expect_rc 0 show_a "$NORMTUNE" show --db "$A" --json
expect_rc 0 show_b "$NORMTUNE" show --db "$B" --json
[[ $(grep -c '"variant": ' "$WORK/show_a.out") -eq 2 ]] ||
  fail "want 2 winners: $(cat "$WORK/show_a.out")"
diff -u "$WORK/show_a.out" "$WORK/show_b.out" >&2 || fail "show --json differs after import"
expect_rc 0 export_b "$NORMTUNE" export - --db "$B"
diff -u <(grep -v '"exported_at"' "$WORK/a.json") <(grep -v '"exported_at"' "$WORK/export_b.out") \
  >&2 || fail "the export of the imported database differs from the original"
dispatch dispatch tuned "$B" "$WORK/show_b.out"

step "importing the same file again adds nothing; stdin works"
expect_rc 0 again "$NORMTUNE" import - --db "$B" <"$WORK/a.json"
expect_in "$WORK/again.out" "imported 0 results" "a second import stores nothing new"
[[ $(results "$B") -eq $n ]] || fail "a second import changed the row count"

step "a damaged export is refused whole"
head -c "$(($(wc -c <"$WORK/a.json") * 2 / 3))" "$WORK/a.json" >"$WORK/cut.json"
expect_rc 1 cut "$NORMTUNE" import "$WORK/cut.json" --db "$WORK/c.db"
expect_in "$WORK/cut.err" "cut.json: " "import names the damaged file"
sed 's/"cols": 256/"cols": -256/' "$WORK/a.json" >"$WORK/neg.json"
expect_rc 1 neg "$NORMTUNE" import "$WORK/neg.json" --db "$B"
expect_in "$WORK/neg.err" 'results\[[0-9]+\]\.cols' "import names the bad field"
[[ $(results "$B") -eq $n ]] || fail "a refused import changed the database"
pass
