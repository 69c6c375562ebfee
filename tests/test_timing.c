/* The one check of kernel times from profiling events (tool_time_plausible, tuner/tool.h) that
 * clnorm_demo and normtune's bench, tune and verify (and report, on stored results) pass every
 * time through, on figures built by hand: no device. tests/tuner/timing.sh drives the tools
 * themselves with CLNORM_TEST_PROFILING; the CI's Rusticl stage runs them on real 1 ns events. */
#include "tool.h"

#include <stdio.h>
#include <string.h>

static int failures;

/* want: 1 plausible, 0 not, with `reason` in the message */
static void expect(int line, double event_s, double wall_s, double bytes, double copy_gbps,
                   int want, const char *reason) {
  char why[256] = "";
  const int got = tool_time_plausible(event_s, wall_s, bytes, copy_gbps, why, sizeof why);
  if (got != want || (!want && !strstr(why, reason))) {
    fprintf(stderr,
            "test_timing: line %d: tool_time_plausible(%g, %g, %g, %g) = %d \"%s\", want %d%s%s\n",
            line, event_s, wall_s, bytes, copy_gbps, got, why, want, want ? "" : " saying ",
            want ? "" : reason);
    failures++;
  }
}

#define PLAUSIBLE(e, w, b, c) expect(__LINE__, e, w, b, c, 1, "")
#define IMPLAUSIBLE(e, w, b, c, reason) expect(__LINE__, e, w, b, c, 0, reason)

int main(void) {
  const double mib64 = 64.0 * 1048576.0;
  /* PoCL on this machine: a 128 MiB copy (read + write) at 25 GB/s */
  PLAUSIBLE(5.4e-3, 5.6e-3, 2 * mib64, 0.0);
  /* an H100: 4096 x 4096 float32 LayerNorm in 51 us, 2,946 GB/s copy, 60 us of wall time */
  PLAUSIBLE(51e-6, 60e-6, 2 * mib64, 2946.0);
  /* a small kernel beside a long launch: 3 us of 2 ms wall (0.15%) */
  PLAUSIBLE(3e-6, 2e-3, 4096.0, 2946.0);
  /* unknown wall time and bytes: only the sign counts */
  PLAUSIBLE(1e-9, 0.0, 0.0, 0.0);
  /* data in cache: up to TOOL_CACHE_MARGIN times the copy bandwidth */
  PLAUSIBLE(1e-3, 0.0, 9.9 * 25e6, 25.0);

  /* missing, zero, not monotonic */
  IMPLAUSIBLE(0.0, 1e-3, 4096.0, 25.0, "zero");
  IMPLAUSIBLE(-1.0, 1e-3, 4096.0, 25.0, "could not be read");
  IMPLAUSIBLE(-2.0, 1e-3, 4096.0, 25.0, "zero");
  IMPLAUSIBLE(-3.0, 1e-3, 4096.0, 25.0, "not monotonic");
  /* Rusticl's 1 ns against milliseconds of wall time */
  IMPLAUSIBLE(1e-9, 3e-3, 4096.0, 0.0, "less than");
  /* longer than the wall time around it */
  IMPLAUSIBLE(10e-3, 1e-3, 4096.0, 25.0, "longer than");
  /* faster than the copy limit: 10 x the copy bandwidth, or any memory's for the copy itself */
  IMPLAUSIBLE(1e-3, 0.0, 11.0 * 25e6, 25.0, "copy limit");
  IMPLAUSIBLE(1e-9, 0.0, 2 * mib64, 0.0, "more than any memory");

  /* the readers' failure codes have their own words */
  if (strcmp(tool_profiling_error(-2.0), tool_profiling_error(-3.0)) == 0) {
    fprintf(stderr, "test_timing: zero and backwards events read alike\n");
    failures++;
  }
  tool_clock clock = {0};
  tool_clock_fall_back(&clock, "first");
  tool_clock_fall_back(&clock, "second");
  if (!clock.wall || strcmp(clock.why, "first") != 0 ||
      strcmp(tool_clock_name(&clock), "wall clock") != 0) {
    fprintf(stderr, "test_timing: the clock's fallback keeps the first reason: \"%s\"\n",
            clock.why);
    failures++;
  }
  printf("test_timing: %s\n", failures ? "FAIL" : "PASS");
  return failures ? 1 : 0;
}
