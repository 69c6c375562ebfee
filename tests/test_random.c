/* Differential testing: seeded random cases of every op against the float64 reference.
 *
 * Each case draws, from (seed, case number) alone: the op and dtype; a forced variant from a
 * pool of that op's and dtype's clnorm_variant_list (one in five cases: the dispatcher); rows
 * and cols (1, primes, powers of two and their neighbours, uniform and log-uniform sizes; a
 * held-row variant gets cols that fit it); each matrix's offset (0, odd, multiples of 16) and
 * stride (0, cols, odd and aligned paddings); in place (y == x; add ops: y == x or residual,
 * sum_out == residual or x; backward: dx == dy or x); outputs sharing an input's buffer
 * (interleaved rows, or after it, through the root buffer or a sub-buffer); sub-buffers;
 * gamma, beta, mean, rstd, sum_out, dgamma, dbeta given or NULL; eps; the data (normal, 1e4 +
 * N(0,1), 1e-20 and 1e15 magnitudes) and sometimes a row holding a NaN or an Inf. Checks and
 * tolerances: tests/op_case.h (those of tests/test_ops.c).
 *
 * The pool: --pool K variants per op and dtype (half of them holding the row), drawn from the
 * seed, bounds the programs PoCL compiles (each variant at each vector width the layouts give is
 * one); --pool 0 takes every listed variant.
 *
 *   test_random [--seed S] [--cases N] [--pool K]   N cases (default 3000), seed 1, pool 4
 *   test_random --seed S --pool K --case N          exactly case N, printed in full
 * A failure prints the seed, the whole case and the command that reruns it. */
#define _POSIX_C_SOURCE 200809L
#include "op_case.h"

#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define MAX_COLS 8192
#define MAX_ELEMS ((size_t)1 << 15) /* rows * cols of one case, for time */
#define MAX_ROWS 256
#define MAX_PRINTED 20

static harness h;
static clnorm_variant *pool[CLNORM_OP_COUNT][3];
static size_t pool_size[CLNORM_OP_COUNT][3];

/* The case being run, for a crash or an exit inside the harness (which exits on OpenCL
 * errors): printed by the handlers below. */
static char current[2048];
static volatile sig_atomic_t running;

static void print_current(void) {
  if (running) {
    const char head[] = "\ntest_random: died while running ";
    if (write(STDOUT_FILENO, head, sizeof head - 1) < 0 ||
        write(STDOUT_FILENO, current, strlen(current)) < 0)
      return;
  }
}

static void on_signal(int sig) {
  print_current();
  running = 0;
  signal(sig, SIG_DFL);
  raise(sig);
}

static uint64_t mix(uint64_t a, uint64_t b) {
  clnorm_rng r;
  clnorm_rng_seed(&r, a * 0x9E3779B97F4A7C15ull + b);
  clnorm_rng_next(&r);
  return clnorm_rng_next(&r);
}

static size_t pick(clnorm_rng *rng, size_t n) { return n ? (size_t)(clnorm_rng_next(rng) % n) : 0; }

static int chance(clnorm_rng *rng, double p) { return clnorm_rng_uniform(rng) < p; }

static size_t log_uniform(clnorm_rng *rng, size_t lo, size_t hi) {
  const double v = exp(log((double)lo) + clnorm_rng_uniform(rng) * (log((double)hi + 1.0) -
                                                                     log((double)lo)));
  size_t r = (size_t)v;
  return r < lo ? lo : r > hi ? hi : r;
}

/* The pool of (op, dtype): K variants drawn from the seed, half of them holding the row. */
static void make_pools(uint64_t seed, size_t k) {
  for (int op = 0; op < CLNORM_OP_COUNT; op++)
    for (int d = 0; d < 3; d++) {
      const size_t nv = clnorm_variant_list(h.ctx, (clnorm_op)op, (clnorm_dtype)d, NULL, 0);
      clnorm_variant *all = malloc((nv ? nv : 1) * sizeof *all);
      clnorm_variant_list(h.ctx, (clnorm_op)op, (clnorm_dtype)d, all, nv);
      if (nv == 0)
        harness_fail("%s %s: no variants listed", clnorm_op_name((clnorm_op)op),
                     clnorm_dtype_name((clnorm_dtype)d));
      if (k == 0 || k >= nv) {
        pool[op][d] = all;
        pool_size[op][d] = nv;
        continue;
      }
      clnorm_rng rng;
      clnorm_rng_seed(&rng, mix(seed, 1000u + (uint64_t)op * 3 + (uint64_t)d));
      clnorm_variant *chosen = malloc(k * sizeof *chosen);
      size_t n = 0;
      for (size_t tries = 0; n < k && tries < 100 * k; tries++) {
        const clnorm_variant *v = &all[pick(&rng, nv)];
        if ((v->hold > 0) != (n % 2 == 1)) /* alternate: re-read, held */
          continue;
        int dup = 0;
        for (size_t i = 0; i < n; i++)
          dup |= memcmp(&chosen[i], v, sizeof *v) == 0;
        if (!dup)
          chosen[n++] = *v;
      }
      free(all);
      pool[op][d] = chosen;
      pool_size[op][d] = n;
    }
}

static const size_t special_cols[] = {1,    2,    3,    4,    5,    7,    8,    11,   13,   16,
                                      17,   31,   32,   33,   61,   64,   67,   97,   127,  128,
                                      130,  131,  251,  256,  257,  509,  512,  769,  1021, 1024,
                                      1031, 2039, 2048, 2053, 4093, 4096, 4099, 8191};

static void draw_place(clnorm_rng *rng, oc_place *p, size_t cols, int buffer) {
  p->buffer = buffer;
  p->sub = 0;
  switch (pick(rng, 4)) {
  case 0:
  case 1:
    p->offset = 0;
    break;
  case 2:
    p->offset = 1 + pick(rng, 37);
    break;
  default:
    p->offset = 16 * pick(rng, 5);
    break;
  }
  switch (pick(rng, 5)) {
  case 0:
  case 1:
    p->stride = 0;
    break;
  case 2:
    p->stride = cols;
    break;
  case 3:
    p->stride = cols + 1 + pick(rng, 20);
    break;
  default:
    p->stride = (cols + 15) / 16 * 16 + 16 * pick(rng, 3);
    break;
  }
}

static size_t stride_of(const oc_case *c, int r) { return c->m[r].stride ? c->m[r].stride : c->cols; }

/* Output `out` in input `in`'s buffer: rows interleaved, or after the input's last element
 * (through the root buffer, or a sub-buffer of its own). */
static void share(clnorm_rng *rng, oc_case *c, int out, int in, size_t unit) {
  oc_place *o = &c->m[out], *i = &c->m[in];
  const size_t cols = c->cols;
  o->buffer = i->buffer;
  if (chance(rng, 0.5)) {
    const size_t s = 2 * cols + pick(rng, 8);
    i->sub = o->sub = 0;
    i->offset = pick(rng, 5);
    i->stride = o->stride = s;
    o->offset = i->offset + cols + pick(rng, s - 2 * cols + 1);
  } else {
    const size_t end = i->sub + i->offset + (c->rows - 1) * stride_of(c, in) + cols;
    if (chance(rng, 0.5)) {
      o->sub = (end + pick(rng, 3) + unit - 1) / unit * unit;
      o->offset = pick(rng, 4);
    } else {
      o->sub = 0;
      o->offset = end + pick(rng, 5);
    }
  }
}

static int alone(const oc_case *c, int role) {
  for (int r = 0; r < OC_MATRICES; r++)
    if (r != role && oc_uses_matrix(c->op, r) && c->m[r].buffer == c->m[role].buffer)
      return 0;
  return 1;
}

static void draw_case(oc_case *c, uint64_t seed, uint64_t index) {
  clnorm_rng rng;
  clnorm_rng_seed(&rng, mix(seed, index));
  const clnorm_op op = (clnorm_op)pick(&rng, CLNORM_OP_COUNT);
  const clnorm_dtype dtype = (clnorm_dtype)pick(&rng, 3);
  oc_default(c, op, dtype, 1, 1);
  c->data_seed = mix(seed ^ 0x5eedull, index);
  const size_t np = pool_size[op][dtype];
  c->forced = np > 0 && chance(&rng, 0.8);
  size_t limit = MAX_COLS;
  if (c->forced) {
    c->variant = pool[op][dtype][pick(&rng, np)];
    if (c->variant.hold) {
      const size_t cap = (size_t)c->variant.tpr * c->variant.vec * c->variant.hold;
      limit = cap < limit ? cap : limit;
    }
  }
  size_t cols;
  switch (pick(&rng, 3)) {
  case 0: {
    size_t fit = 0;
    while (fit < sizeof special_cols / sizeof special_cols[0] && special_cols[fit] <= limit)
      fit++;
    cols = special_cols[pick(&rng, fit)];
    break;
  }
  case 1:
    cols = 1 + pick(&rng, limit < 300 ? limit : 300);
    break;
  default:
    cols = log_uniform(&rng, 1, limit);
    break;
  }
  const size_t max_rows = MAX_ELEMS / cols < MAX_ROWS ? MAX_ELEMS / cols : MAX_ROWS;
  size_t rows;
  switch (pick(&rng, 4)) {
  case 0:
    rows = 1;
    break;
  case 1:
    rows = 2 + pick(&rng, 7);
    break;
  default:
    rows = log_uniform(&rng, 1, max_rows);
    break;
  }
  rows = rows > max_rows ? (max_rows ? max_rows : 1) : rows;
  c->rows = rows;
  c->cols = cols;
  c->eps = chance(&rng, 0.7) ? 1e-5f : (float[]){1e-6f, 1e-3f, 0.25f}[pick(&rng, 3)];
  c->tail = (size_t[]){0, 1, 3, 17}[pick(&rng, 4)];

  /* placement: each matrix in its own buffer, then outputs sharing or aliasing inputs */
  const size_t unit = oc_sub_unit(&h, dtype);
  for (int r = 0; r < OC_MATRICES; r++)
    draw_place(&rng, &c->m[r], cols, r);
  if (oc_is_add(op) && chance(&rng, 0.25))
    c->absent |= OC_ABSENT_SUM;
  const int has_sum = oc_is_add(op) && !(c->absent & OC_ABSENT_SUM);
  const int in_y = oc_is_bwd(op) ? (chance(&rng, 0.5) ? OC_DY : OC_X)
                                 : (oc_is_add(op) && chance(&rng, 0.35) ? OC_RES : OC_X);
  const int in_sum = in_y == OC_RES ? OC_X : OC_RES;
  int y_aliased = 0;
  if (chance(&rng, 0.1))
    share(&rng, c, OC_Y, in_y, unit);
  else if ((y_aliased = chance(&rng, 0.3)) != 0)
    oc_alias(c, OC_Y, in_y);
  if (has_sum) {
    /* sum_out shares or aliases the input y does not alias; sharing needs that input alone */
    if (chance(&rng, 0.1) && alone(c, in_sum))
      share(&rng, c, OC_SUM, in_sum, unit);
    else if (chance(&rng, y_aliased ? 0.4 : 0.25))
      oc_alias(c, OC_SUM, in_sum);
  }
  /* sub-buffers for matrices alone in their buffer, or an in-place pair */
  for (int r = 0; r < OC_MATRICES; r++) {
    if (!oc_uses_matrix(op, r) || c->m[r].sub || !chance(&rng, 0.08))
      continue;
    int others = 0, same = 1;
    for (int q = 0; q < OC_MATRICES; q++)
      if (q != r && oc_uses_matrix(op, q) && c->m[q].buffer == c->m[r].buffer) {
        others++;
        same &= memcmp(&c->m[q], &c->m[r], sizeof c->m[r]) == 0;
      }
    if (others && !same)
      continue;
    const size_t sub = unit * (1 + pick(&rng, 2));
    for (int q = 0; q < OC_MATRICES; q++)
      if (q != r && oc_uses_matrix(op, q) && c->m[q].buffer == c->m[r].buffer)
        c->m[q].sub = sub;
    c->m[r].sub = sub;
  }

  /* optional operands */
  const double p_absent[OC_VECTORS] = {0.2, 0.2, 0.25, 0.25, 0.25, 0.25};
  for (int v = 0; v < OC_VECTORS; v++)
    if (chance(&rng, p_absent[v]))
      c->absent |= 1u << v;

  /* data */
  const double u = clnorm_rng_uniform(&rng);
  c->data = u < 0.55 ? OC_NORMAL : u < 0.7 ? OC_LARGE_MEAN : u < 0.85 ? OC_TINY : OC_HUGE;
  if (chance(&rng, 0.1)) {
    c->bad_row = (long)pick(&rng, rows);
    c->bad_col = pick(&rng, cols);
    c->bad_kind = (int)pick(&rng, 3);
    c->bad_in_res = oc_is_add(op) && chance(&rng, 0.5);
  }
}

static void usage(void) {
  printf("usage: test_random [--seed S] [--cases N] [--pool K] [--case N] [--verbose]\n");
}

int main(int argc, char **argv) {
  uint64_t seed = 1;
  size_t cases = 3000, pool_k = 4;
  long only = -1;
  int verbose = 0;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    if (strcmp(a, "--verbose") == 0) {
      verbose = 1;
      continue;
    }
    if (i + 1 >= argc) {
      usage();
      return 2;
    }
    char *end;
    const unsigned long long v = strtoull(argv[++i], &end, 0);
    if (*end) {
      usage();
      return 2;
    }
    if (strcmp(a, "--seed") == 0)
      seed = v;
    else if (strcmp(a, "--cases") == 0)
      cases = (size_t)v;
    else if (strcmp(a, "--pool") == 0)
      pool_k = (size_t)v;
    else if (strcmp(a, "--case") == 0)
      only = (long)v;
    else {
      usage();
      return 2;
    }
  }
  harness_open(&h, "test_random");
  signal(SIGSEGV, on_signal);
  signal(SIGBUS, on_signal);
  signal(SIGFPE, on_signal);
  signal(SIGABRT, on_signal);
  atexit(print_current);
  make_pools(seed, pool_k);
  struct timespec t0, t1;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  const size_t first = only >= 0 ? (size_t)only : 0, last = only >= 0 ? (size_t)only + 1 : cases;
  size_t run = 0, forced = 0, refused = 0, failed = 0, per_op[CLNORM_OP_COUNT] = {0};
  size_t in_place = 0, bad_rows = 0;
  double worst[5] = {0};
  char worst_case[5][64] = {"", "", "", "", ""};
  for (size_t k = first; k < last; k++) {
    oc_case c;
    draw_case(&c, seed, k);
    char text[1400], msg[1024];
    oc_format(&c, text, sizeof text);
    snprintf(current, sizeof current,
             "case %zu: %s\n  rerun: test_random --seed %llu --pool %zu --case %zu\n", k, text,
             (unsigned long long)seed, pool_k, k);
    if (verbose || only >= 0) {
      printf("case %zu: %s\n", k, text);
      fflush(stdout);
    }
    running = 1;
    oc_errors e;
    oc_result r = oc_run(&h, &c, &e, msg, sizeof msg);
    if (r == OC_UNSUPPORTED) {
      /* the built kernel refuses the variant (its CL_KERNEL_WORK_GROUP_SIZE): the dispatcher
       * runs the case instead */
      refused++;
      if (verbose || only >= 0)
        printf("  forced variant refused (%s): the dispatcher runs the case\n", msg);
      c.forced = 0;
      r = oc_run(&h, &c, &e, msg, sizeof msg);
    }
    running = 0;
    run++;
    forced += (size_t)c.forced;
    per_op[c.op]++;
    in_place += memcmp(&c.m[OC_Y], &c.m[OC_X], sizeof c.m[OC_X]) == 0 ||
                (oc_is_add(c.op) && memcmp(&c.m[OC_Y], &c.m[OC_RES], sizeof c.m[0]) == 0) ||
                (oc_is_bwd(c.op) && memcmp(&c.m[OC_Y], &c.m[OC_DY], sizeof c.m[0]) == 0);
    bad_rows += c.bad_row >= 0;
    const double got[5] = {e.y, e.mean, e.rstd, e.dgamma, e.dbeta};
    for (int m = 0; m < 5; m++)
      if (got[m] > worst[m]) {
        worst[m] = got[m];
        snprintf(worst_case[m], sizeof worst_case[m], "case %zu", k);
      }
    if (r != OC_PASS) {
      failed++;
      if (failed <= MAX_PRINTED)
        printf("FAIL: seed %llu %s  %s\n", (unsigned long long)seed, current, msg);
      harness_failures++;
    }
    if (only < 0 && (k + 1) % 500 == 0) {
      clock_gettime(CLOCK_MONOTONIC, &t1);
      printf("  %zu cases, %zu failed, %.0f s\n", k + 1, failed,
             (double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec));
      fflush(stdout);
    }
  }
  clock_gettime(CLOCK_MONOTONIC, &t1);
  const double secs = (double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec);
  printf("test_random: seed %llu, pool %zu: %zu cases (%zu forced, %zu dispatcher, %zu forced "
         "variants refused by the device and run by the dispatcher; %zu in place, %zu with a "
         "NaN/Inf row) in %.1f s\n",
         (unsigned long long)seed, pool_k, run, forced, run - forced, refused, in_place, bad_rows,
         secs);
  printf("  per op:");
  for (int op = 0; op < CLNORM_OP_COUNT; op++)
    printf(" %s %zu", clnorm_op_name((clnorm_op)op), per_op[op]);
  printf("\n  worst errors (of the allowance): y/dx %.3g (%s), mean %.3g (%s), rstd %.3g (%s), "
         "dgamma %.3g (%s), dbeta %.3g (%s)\n",
         worst[0], worst_case[0], worst[1], worst_case[1], worst[2], worst_case[2], worst[3],
         worst_case[3], worst[4], worst_case[4]);
  harness_close(&h);
  for (int op = 0; op < CLNORM_OP_COUNT; op++)
    for (int d = 0; d < 3; d++)
      free(pool[op][d]);
  printf("test_random: %s (%zu of %zu cases failed)\n", failed || harness_failures ? "FAIL" : "PASS",
         failed, run);
  return failed || harness_failures ? 1 : 0;
}
