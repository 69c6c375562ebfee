#!/usr/bin/env bash
# Two `normtune tune` processes writing one database at once, created by neither beforehand:
# both finish, and no row is lost. A tunes cols 128 then 256, B cols 128 then 512, with the same
# seed: on the shared shape they measure and store the same candidates at the same time. A second
# round goes on with more candidates (a larger --fraction continues the same random order).
source "$(dirname "$0")/common.sh"
DB=$WORK/shared.db

# round N FRACTION: A and B at once; both must finish with every shape tuned
round() {
  local n=$1 pid_a pid_b rc_a=0 rc_b=0
  tune "$DB" "a$n" --cols 128,256 --fraction "$2" &
  pid_a=$!
  tune "$DB" "b$n" --cols 128,512 --fraction "$2" &
  pid_b=$!
  wait $pid_a || rc_a=$?
  wait $pid_b || rc_b=$?
  [[ $rc_a -eq 0 && $rc_b -eq 0 ]] || fail "round $n: a tune process failed (A: $rc_a, B: $rc_b)"
  for p in "a$n" "b$n"; do
    expect_in "$WORK/$p.out" ' 2 shapes tuned, 0 skipped' "process $p tuned both its shapes"
    if grep -Ei 'locked|busy|error' "$WORK/$p.err"; then
      fail "process $p reported a database problem"
    fi
  done
}
step "two tune processes on one new database"
round 1 0.03
step "two tune processes on the same database again, more candidates"
round 2 0.05

step "every measured result is stored"
# Each line "OP f32 ROWSxCOLS VARIANT: OUTCOME ..." is one result stored by that process; where
# both measured the same candidate, the later replaced the earlier: one row.
keys() { sed -n 's/^\(\(layernorm\|rmsnorm\) f32 [0-9]*x[0-9]* wg=[^:]*\): .*/\1/p' "$@"; }
per_a=$(keys "$WORK/a1.out" "$WORK/a2.out" | wc -l)
per_b=$(keys "$WORK/b1.out" "$WORK/b2.out" | wc -l)
want=$(keys "$WORK"/[ab][12].out | sort -u | wc -l)
got=$(results "$DB")
echo "   A stored $per_a results, B $per_b, $want distinct; the database holds $got"
[[ $per_a -gt 0 && $per_b -gt 0 ]] || fail "a process stored nothing (A: $per_a, B: $per_b)"
[[ $got -eq $want ]] || fail "the database holds $got results, the two runs stored $want"
counts=$("$TESTBIN" count "$DB")
[[ $counts == "results $got winners 3" ]] ||
  fail "want a winner for each of the 3 shapes: $counts"

step "the database is sound and usable"
expect_rc 0 show "$NORMTUNE" show --db "$DB"
for cols in 128 256 512; do
  expect_in "$WORK/show.out" "^ +layernorm +f32 +$cols +17-256 +64 " "show lists cols $cols"
done
# opening for writing checks the database's integrity; everything asked for is stored already
tune "$DB" again --cols 128,256
if keys "$WORK/again.out" | grep -q .; then
  fail "a third run measured again what the first two stored: $(keys "$WORK/again.out")"
fi
dispatch dispatch tuned "$DB"
pass
