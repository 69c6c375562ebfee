#!/usr/bin/env bash
# tune --strategy seeded (issue 22): after an edit of the kernels, a shape's search starts from
# the fastest candidates stored under the kernel hash measured there last. An edit is played by
# moving every stored row to another kernel hash (what the database holds after the sources
# change). Checks, each able to fail:
# - the seeded run evaluates exactly the 16 fastest variants stored under the earlier hash, plus
#   the heuristic's (read back from the database: a strategy reading the slowest, or every
#   stored variant, or the wrong hash gives another set), and nothing else; an older hash's rows
#   (measured a day before, fastest in the reverse order) are not the seeds;
# - it stores the shape's A/B under the current hash, and the same command then reads the shape
#   back without measuring;
# - a shape with nothing stored under any other hash is annealed, and the run says so on stderr;
# - --fraction is taken (for such shapes); the earlier rows are left as they were.
source "$(dirname "$0")/common.sh"
DB=$WORK/tuning.db
command -v sqlite3 >/dev/null || fail "the sqlite3 command-line tool is missing (scripts/deps.sh)"
EARLIER=00000000000000aa
OLDER=00000000000000bb

expect_rc 0 version "$NORMTUNE" --version
current=$(sed -n 's/^kernel sources \([0-9a-f]*\) forward, .*/\1/p' "$WORK/version.out")
[[ $current =~ ^[0-9a-f]{16}$ ]] || fail "normtune --version names no forward kernel hash"

# variants HASH [N]: the variants timed under HASH for layernorm f32 x 256 ("ok" fastest first,
# then those cut short as slow), the first N
variants() {
  sqlite3 -readonly "$DB" "SELECT wg || '/' || tpr || '/' || vec || '/' || hold || '/' || reduce
    || '/' || stats FROM results WHERE kernel_hash = '$1' AND op = 'layernorm' AND cols = 256
    AND status IN ('ok', 'slow') AND median_s IS NOT NULL
    ORDER BY status <> 'ok', median_s, min_s, id ${2:+LIMIT $2}"
}

step "tune layernorm f32 64 x 256 (random, 25% of the candidates) under the current kernels"
tune "$DB" first --fraction 0.25
stored=$(variants "$current" | wc -l)
[[ $stored -gt 20 ]] || fail "the first run stored $stored timed results, want more than 20 to seed from"

step "play an edit of the kernels: every row moves to hash $EARLIER"
for table in results heuristic ab; do
  sqlite3 "$DB" "UPDATE $table SET kernel_hash = '$EARLIER'" || fail "cannot update $table"
done
# an older edit's rows too, measured a day before, every one "ok" and in the reverse order of
# speed (so its 16 fastest are the earlier hash's slowest, whatever share of the first run was
# cut short as slow): the seeds come from the hash measured last on the shape, not from the other
sqlite3 "$DB" "INSERT INTO results (device_id, kernel_hash, op, dtype, cols, row_class, wg, tpr,
  vec, hold, reduce, stats, rows, status, median_s, min_s, gbps, max_err, measured_at,
  clnorm_version) SELECT device_id, '$OLDER', op, dtype, cols, row_class, wg, tpr, vec, hold,
  reduce, stats, rows, 'ok', 1e-6 / median_s, 1e-6 / min_s, gbps, max_err, measured_at - 86400,
  clnorm_version FROM results WHERE kernel_hash = '$EARLIER' AND status IN ('ok', 'slow')
  AND median_s IS NOT NULL" || fail "cannot add the older rows"
variants "$EARLIER" 16 | sort >"$WORK/seeds.txt"
[[ $(variants "$OLDER" 16 | sort) != "$(cat "$WORK/seeds.txt")" ]] ||
  fail "the older hash's 16 fastest are the earlier one's: the test cannot tell them apart"
[[ $(wc -l <"$WORK/seeds.txt") -eq 16 ]] || fail "fewer than 16 seeds stored under $EARLIER"
[[ -z $(variants "$current") ]] || fail "rows are left under the current hash"
earlier_rows=$(sqlite3 -readonly "$DB" "SELECT count(*) FROM results WHERE kernel_hash = '$EARLIER'")

step "tune --strategy seeded: the 16 fastest earlier variants and the heuristic's, nothing else"
tune "$DB" seeded --strategy seeded
expect_in "$WORK/seeded.out" '^best layernorm f32 64x256: .*\((1[6-7]) of [0-9]+ evaluated\)' \
  "the seeded run evaluates the 16 seeds (and the heuristic's variant when it is not one)"
if grep -q "no results of earlier kernels" "$WORK/seeded.err"; then
  fail "the seeded run found nothing to seed from: $(cat "$WORK/seeded.err")"
fi
heuristic=$(sqlite3 -readonly "$DB" "SELECT wg || '/' || tpr || '/' || vec || '/' || hold || '/'
  || reduce || '/' || stats FROM heuristic WHERE kernel_hash = '$current' AND op = 'layernorm'
  AND cols = 256")
[[ -n $heuristic ]] || fail "the seeded run stored no measurement of the heuristic's variant"
sort -u "$WORK/seeds.txt" <(echo "$heuristic") >"$WORK/want.txt"
sqlite3 -readonly "$DB" "SELECT wg || '/' || tpr || '/' || vec || '/' || hold || '/' || reduce
  || '/' || stats FROM results WHERE kernel_hash = '$current' AND op = 'layernorm'
  AND cols = 256" | sort -u >"$WORK/got.txt"
diff "$WORK/want.txt" "$WORK/got.txt" >"$WORK/diff.txt" ||
  fail "the seeded run measured other variants than the seeds and the heuristic's:
$(cat "$WORK/diff.txt")"
echo "   $(wc -l <"$WORK/got.txt") variants measured: the 16 seeds and the heuristic's ($heuristic)"
ab=$(sqlite3 -readonly "$DB" "SELECT count(*) FROM ab WHERE kernel_hash = '$current'")
[[ $ab -ge 1 ]] || fail "the seeded run stored no A/B against the heuristic"
now=$(sqlite3 -readonly "$DB" "SELECT count(*) FROM results WHERE kernel_hash = '$EARLIER'")
[[ $now -eq $earlier_rows ]] || fail "the earlier kernels' rows went from $earlier_rows to $now"

step "the same command again: the shape is read back, nothing measured"
tune "$DB" again --strategy seeded
expect_in "$WORK/again.out" '\(shapes: 0 measured by this run, 1 read back from the database\)' \
  "the seeded shape is done once its A/B is stored"

step "a shape with nothing under another hash (128 columns) is annealed, and the run says so"
tune "$DB" fresh --strategy seeded --cols 128 --fraction 0.05 --seed 3
expect_in "$WORK/fresh.err" \
  '^normtune: layernorm f32 64 x 128: no results of earlier kernels to seed from: annealing \(--fraction 0\.05\)' \
  "the run names the shape it anneals"
expect_in "$WORK/fresh.out" '^best layernorm f32 64x128: ' "the annealed shape is tuned"

pass
