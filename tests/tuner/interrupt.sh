#!/usr/bin/env bash
# Ctrl-C keeps every result measured so far (exit status 130), and the same command resumes:
# it measures only what is missing.
source "$(dirname "$0")/common.sh"
DB=$WORK/tuning.db
args=(tune --db "$DB" ${DEVICE_ARGS[@]+"${DEVICE_ARGS[@]}"} --ops layernorm --dtypes f32
      --cols 256 --rows 64 --strategy random --fraction 0.1 --budget 120)
keys() { sed -n 's/^\(layernorm f32 [0-9]*x[0-9]* wg=[^:]*\): .*/\1/p' "$@"; }

step "interrupt a tune run after its third result"
"$NORMTUNE" "${args[@]}" >"$WORK/first.out" 2>"$WORK/first.err" &
pid=$!
for _ in $(seq 3000); do
  [[ $(keys "$WORK/first.out" | wc -l) -ge 3 ]] && break
  kill -0 $pid 2>/dev/null || break
  sleep 0.02
done
kill -INT $pid 2>/dev/null || true
rc=0
wait $pid || rc=$?
[[ $rc -eq 130 ]] || {
  tail -n 20 "$WORK/first.out" "$WORK/first.err" >&2
  fail "the interrupted run exited with status $rc, want 130 (did it finish before Ctrl-C?)"
}
expect_in "$WORK/first.out" 'interrupted; every result measured so far is kept' \
  "the interrupted run says its results are kept"
first=$(keys "$WORK/first.out" | wc -l)
[[ $(results "$DB") -eq $first ]] ||
  fail "the interrupted run printed $first results, the database holds $(results "$DB")"
echo "   interrupted after $first results"

step "the same command resumes"
expect_rc 0 second "$NORMTUNE" "${args[@]}"
expect_in "$WORK/second.out" ' 1 shapes tuned, 0 skipped' "the resumed run tunes the shape"
again=$(sort <(keys "$WORK/first.out") <(keys "$WORK/second.out") | uniq -d)
[[ -z $again ]] || fail "the resumed run measured again what was stored: $again"
second=$(keys "$WORK/second.out" | wc -l)
[[ $second -gt 0 && $(results "$DB") -eq $((first + second)) ]] ||
  fail "stored $first + $second results, the database holds $(results "$DB")"
echo "   resumed: $second more results"
pass
