#!/usr/bin/env bash
# normtune build: tune's candidate programs into the program binary cache, a share per process.
# - two parts of forty build disjoint sets of programs, and store each program they compile;
# - built again, every program loads from the cache (nothing compiled): the library's own load,
#   the one tune's candidates take with CLNORM_NO_BINARY_CACHE=0 (tests/test_bincache.c);
# - interrupted (SIGINT) once it has stored a program, build stops, says how many programs it
#   stored, and the cache holds those: exit status 130;
# - a bad --part is a usage error; with the cache off, build fails and says so.
source "$(dirname "$0")/common.sh"
export CLNORM_BINARY_CACHE_DIR=$WORK/cache CLNORM_NO_BINARY_CACHE=0
build=("$NORMTUNE" build ${DEVICE_ARGS[@]+"${DEVICE_ARGS[@]}"} --ops rmsnorm --dtypes f32 --cols 256)

# built COUNT_NAME FILE: a count from build's summary line
built() {
  sed -n "s/.* \([0-9]*\) $1.*/\1/p" "$2" | head -1
}

step "part 1 of 40, then part 2 of 40: disjoint programs, each compiled one stored"
expect_rc 0 part1 "${build[@]}" --part 1/40
expect_in "$WORK/part1.out" '^normtune: built [1-9][0-9]* variants \(part 1 of 40\) .* 0 failed; [1-9][0-9]* programs compiled and stored, 0 loaded' \
  "build says what it compiled"
n1=$(built 'programs compiled and stored' "$WORK/part1.out")
files1=$(find "$WORK/cache" -type f -name '*.bin' | sort)
[[ $(wc -l <<<"$files1") -eq $n1 ]] || fail "part 1 compiled $n1 programs, the cache holds $(wc -l <<<"$files1")"
expect_rc 0 part2 "${build[@]}" --part 2/40
n2=$(built 'programs compiled and stored' "$WORK/part2.out")
[[ $n2 -ge 1 ]] || fail "part 2 compiled nothing: $(cat "$WORK/part2.out")"
files2=$(find "$WORK/cache" -type f -name '*.bin' | sort)
[[ $(wc -l <<<"$files2") -eq $((n1 + n2)) ]] ||
  fail "parts 1 and 2 compiled $n1 + $n2 programs, the cache holds $(wc -l <<<"$files2"): they overlap"
echo "   part 1: $n1 programs, part 2: $n2, the cache: $(wc -l <<<"$files2")"

step "part 1 again: every program loaded from the cache"
expect_rc 0 again "${build[@]}" --part 1/40
expect_in "$WORK/again.out" "; 0 programs compiled and stored, $n1 loaded from the binary cache" \
  "build loads what it built before"

step "interrupted: what was built is kept and counted"
export CLNORM_BINARY_CACHE_DIR=$WORK/cache2
"$NORMTUNE" build ${DEVICE_ARGS[@]+"${DEVICE_ARGS[@]}"} --ops all --dtypes all \
  >"$WORK/int.out" 2>"$WORK/int.err" &
pid=$!
for _ in $(seq 1 600); do
  [[ -n $(find "$WORK/cache2" -type f -name '*.bin' 2>/dev/null | head -1) ]] && break
  kill -0 "$pid" 2>/dev/null || break
  sleep 0.1
done
kill -INT "$pid" 2>/dev/null || fail "build of every op and dtype ended before it was interrupted"
rc=0
wait "$pid" || rc=$?
[[ $rc -eq 130 ]] || fail "interrupted build exited with status $rc, want 130: $(cat "$WORK/int.out" "$WORK/int.err")"
expect_in "$WORK/int.out" '^normtune: interrupted after .* [1-9][0-9]* programs compiled and stored, .* the same command builds the rest' \
  "build says it was interrupted and what it stored"
ni=$(built 'programs compiled and stored' "$WORK/int.out")
nf=$(find "$WORK/cache2" -type f -name '*.bin' | wc -l)
[[ $nf -eq $ni ]] || fail "interrupted build says $ni programs stored, the cache holds $nf"
echo "   interrupted after $ni programs stored"
export CLNORM_BINARY_CACHE_DIR=$WORK/cache

step "bad usage and the cache off"
expect_rc 2 badpart "$NORMTUNE" build --part 3/2
expect_in "$WORK/badpart.err" '--part: "3/2" is not I/N' "a part past N is refused"
expect_rc 2 rows "$NORMTUNE" build --rows 8
expect_in "$WORK/rows.err" 'build does not take --rows' "build takes no rows"
CLNORM_NO_BINARY_CACHE=1 expect_rc 1 off "${build[@]}" --part 1/40
expect_in "$WORK/off.err" 'build fills the program binary cache, which is off' "build says the cache is off"
pass
