/* normtune bench: the dispatcher's choice against the heuristic's variant, per shape, and
 * bench --grid: every shape of a grid, checked and timed. */
#define _POSIX_C_SOURCE 200809L
#include "normtune.h"

/* bench without --grid: each variant timed in BENCH_ROUNDS rounds, the dispatcher's choice and
 * the heuristic's in alternation, so that a busy device slows both alike; the spread of the
 * rounds shows how far one figure can be trusted. */
#define BENCH_ROUNDS 5

typedef struct bench_side {
  double us, us_min, us_max, gbps, ratio; /* NaN: not measured */
  errors e;
  clnorm_status st;
} bench_side;

static void bench_side_finish(bench_side *b, double *times, size_t n, double bytes, double copy) {
  b->us = b->us_min = b->us_max = b->gbps = b->ratio = NAN;
  if (b->st != CLNORM_OK || n == 0)
    return;
  b->us = tool_median(times, n) * 1e6; /* sorts: times[0] is the least */
  b->us_min = times[0] * 1e6;
  b->us_max = times[n - 1] * 1e6;
  b->gbps = bytes / b->us / 1e3;
  b->ratio = b->gbps / copy;
}

/* Half the range of the rounds over their median, in percent. */
static double bench_spread(const bench_side *b) { return 50.0 * (b->us_max - b->us_min) / b->us; }

static void bench_json_side(const char *prefix, const bench_side *b) {
  static const char *const names[] = {"us", "us_min", "us_max", "gbps", "ratio"};
  const double values[] = {b->us, b->us_min, b->us_max, b->gbps, b->ratio};
  static const char *const formats[] = {"%.3f", "%.3f", "%.3f", "%.1f", "%.3f"};
  for (size_t i = 0; i < 5; i++) {
    printf(", \"%s%s\": ", prefix, names[i]);
    json_number(formats[i], values[i]);
  }
  printf(", \"%smax_err\": ", prefix);
  json_number("%.3g", b->st == CLNORM_OK ? b->e.rel : NAN);
}

/* The dispatcher's choice (tuned when the database has it) against the heuristic's variant on
 * every op x dtype x cols x rows. */
static int bench_pairs(const options *o, session *s, double copy, const char *copy_kernel) {
  static const size_t bench_cols[] = {4096, 65536};
  static const size_t bench_rows[] = {256};
  selection sel;
  select_shapes(o, NORM_OPS, 1u << CLNORM_F32, bench_cols, 2, bench_rows, 1, &sel);
  int failed = 0;
  if (!o->json) {
    printf("normtune bench on %s (%s); copy bandwidth %.1f GB/s (%s, same run)\n", s->dev.name,
           s->dev.platform_name, copy, copy_kernel);
    printf("GB/s: median of %d rounds, the chosen variant and the heuristic's in alternation; "
           "+-: half the range of the rounds, in %% of the median\n\n",
           BENCH_ROUNDS);
    printf("%-13s %-5s %6s %6s | %9s %5s %6s %-9s | %9s %5s %6s | %s\n", "op", "dtype", "rows",
           "cols", "chosen", "+-%", "/copy", "why", "heuristic", "+-%", "/copy", "chosen variant");
  }
  for (size_t a = 0; a < sel.nops; a++)
    for (size_t d = 0; d < sel.ndtypes; d++)
      for (size_t ci = 0; ci < sel.ncols; ci++)
        for (size_t ri = 0; ri < sel.nrows; ri++) {
          shape sh;
          char why[512];
          if (!shape_init(s, &sh, sel.ops[a], sel.dtypes[d], sel.rows[ri], sel.cols[ci], NULL, 1,
                          why, sizeof why)) {
            fprintf(stderr, "normtune: skipped %s\n", why);
            continue;
          }
          const clnorm_call call = shape_call(&sh, 0);
          clnorm_variant chosen, heur;
          clnorm_choice reason = CLNORM_CHOICE_HEURISTIC;
          memset(&chosen, 0, sizeof chosen);
          memset(&heur, 0, sizeof heur);
          bench_side c, h;
          memset(&c, 0, sizeof c);
          c.st = clnorm_choose(s->ctx, &call, &chosen, &reason);
          clnorm_heuristic(s->ctx, &call, &heur);
          /* the same variant twice would only measure noise: it is timed once, for both */
          const int same = differences(&chosen, &heur) == 0;
          /* The variant chosen at the shape's rows, forced on the verification set: through the
           * dispatcher its fewer rows may choose another (a CPU's rows per group follow the
           * rows, and a tuned winner stands only where its A/B ran), and the check would pass a
           * variant that is not the one timed. */
          if (c.st == CLNORM_OK)
            c.st = verify(s, &sh, &chosen, &c.e);
          h = c;
          if (!same)
            h.st = verify(s, &sh, &heur, &h.e);
          double tc[BENCH_ROUNDS], th[BENCH_ROUNDS];
          size_t nc = 0, nh = 0;
          for (int r = 0; r < BENCH_ROUNDS && (c.st == CLNORM_OK || h.st == CLNORM_OK); r++) {
            timing t;
            if (c.st == CLNORM_OK && (c.st = time_variant(s, &sh, NULL, 0, &t)) == CLNORM_OK)
              tc[nc++] = t.median;
            if (!same && h.st == CLNORM_OK &&
                (h.st = time_variant(s, &sh, &heur, 0, &t)) == CLNORM_OK)
              th[nh++] = t.median;
          }
          const double bytes = tool_op_bytes(&call);
          bench_side_finish(&c, tc, nc, bytes, copy);
          if (same)
            h = c;
          else
            bench_side_finish(&h, th, nh, bytes, copy);
          const int ok =
              c.st == CLNORM_OK && h.st == CLNORM_OK && c.e.scaled <= 1.0 && h.e.scaled <= 1.0;
          failed |= !ok;
          char text[128], heur_text[128], reason_text[600] = "";
          clnorm_variant_format(&chosen, text, sizeof text);
          clnorm_variant_format(&heur, heur_text, sizeof heur_text);
          if (c.st != CLNORM_OK || h.st != CLNORM_OK)
            snprintf(reason_text, sizeof reason_text, "%s: %s",
                     clnorm_status_string(c.st != CLNORM_OK ? c.st : h.st),
                     clnorm_ctx_errmsg(s->ctx));
          else if (!ok)
            snprintf(reason_text, sizeof reason_text, "%s: error %.3g of its tolerance",
                     c.e.scaled > 1.0 ? c.e.what : h.e.what,
                     c.e.scaled > 1.0 ? c.e.scaled : h.e.scaled);
          if (o->json) {
            printf("{\"device\": ");
            tool_json_string(s->dev.name);
            printf(", \"op\": \"%s\", \"dtype\": \"%s\", \"rows\": %zu, \"cols\": %zu, "
                   "\"copy_gbps\": %.1f, \"bytes\": %.0f, \"rounds\": %d, \"clock\": \"%s\"",
                   op_name(sel.ops[a]), dtype_name(sel.dtypes[d]), sel.rows[ri], sel.cols[ci], copy,
                   bytes, BENCH_ROUNDS, tool_clock_name(&s->clock));
            bench_json_side("", &c);
            printf(", \"variant\": \"%s\", \"why\": \"%s\"", text, clnorm_choice_string(reason));
            bench_json_side("heuristic_", &h);
            printf(", \"heuristic_variant\": \"%s\", \"heuristic_same\": %s, \"check\": \"%s\", "
                   "\"reason\": ",
                   heur_text, same ? "true" : "false", ok ? "pass" : "FAIL");
            tool_json_string(reason_text);
            printf("}\n");
          } else {
            char heur_cols[64];
            if (same)
              snprintf(heur_cols, sizeof heur_cols, "%9s %5s %6s", "same", "", "");
            else
              snprintf(heur_cols, sizeof heur_cols, "%9.1f %5.1f %6.2f", h.gbps, bench_spread(&h),
                       h.ratio);
            printf("%-13s %-5s %6zu %6zu | %9.1f %5.1f %6.2f %-9s | %s | %s%s%s%s\n",
                   op_name(sel.ops[a]), dtype_name(sel.dtypes[d]), sel.rows[ri], sel.cols[ci],
                   c.gbps, bench_spread(&c), c.ratio, clnorm_choice_string(reason), heur_cols, text,
                   same ? " (the heuristic's own variant)" : "",
                   ok ? "" : "  CHECK FAILED: ", reason_text);
          }
          fflush(stdout);
          shape_free(&sh);
        }
  return failed;
}

#define CHECK_SAMPLE 64              /* rows checked of a large matrix */
#define CHECK_ALL ((size_t)1 << 22)  /* matrices up to this many elements: every row */
#define WALL_BELOW ((size_t)1 << 20) /* shapes below this many elements: wall time too */
#define WALL_CALLS 200

/* The rows a grid run checks: all (NULL) when rows <= CHECK_SAMPLE or rows x cols <= CHECK_ALL,
 * else CHECK_SAMPLE rows spread evenly, the first and the last included. */
static const size_t *sample_rows(size_t rows, size_t cols, size_t idx[CHECK_SAMPLE], size_t *n) {
  if (rows <= CHECK_SAMPLE || rows * cols <= CHECK_ALL) {
    *n = rows;
    return NULL;
  }
  for (size_t k = 0; k < CHECK_SAMPLE; k++)
    idx[k] = (size_t)((double)k * (double)(rows - 1) / (double)(CHECK_SAMPLE - 1) + 0.5);
  *n = CHECK_SAMPLE;
  return idx;
}

/* One line of the grid's output. */
typedef struct grid_row {
  clnorm_op op;
  clnorm_dtype dtype;
  size_t rows, cols, rows_checked;
  const char *check; /* "pass", "FAIL" or "skipped" */
  char reason[512];  /* why, when not "pass" */
  double us, event_us, gbps, ratio, bytes, wall_us, max_err, err_tol; /* NaN: none */
  const char *why, *worst;
  char variant[128];
} grid_row;

static void grid_print(const options *o, const session *s, const grid_row *g, double copy) {
  if (o->json) {
    printf("{\"device\": ");
    tool_json_string(s->dev.name);
    printf(", \"op\": \"%s\", \"dtype\": \"%s\", \"rows\": %zu, \"cols\": %zu", op_name(g->op),
           dtype_name(g->dtype), g->rows, g->cols);
    const json_field fields[] = {{"us", "%.3f", g->us, NULL},
                                 {"event_us", "%.3f", g->event_us, NULL},
                                 {"gbps", "%.1f", g->gbps, NULL},
                                 {"copy_gbps", "%.1f", copy, NULL},
                                 {"ratio", "%.3f", g->ratio, NULL},
                                 {"bytes", "%.0f", g->bytes, NULL},
                                 {"wall_us", "%.3f", g->wall_us, NULL},
                                 {"variant", NULL, 0.0, g->variant},
                                 {"why", NULL, 0.0, g->why ? g->why : ""},
                                 {"max_err", "%.3g", g->max_err, NULL},
                                 {"err_tol", "%.3g", g->err_tol, NULL},
                                 {"worst", NULL, 0.0, g->worst ? g->worst : ""}};
    json_fields(fields, sizeof fields / sizeof fields[0]);
    printf(", \"clock\": \"%s\", \"rows_checked\": %zu, \"check\": \"%s\", \"reason\": ",
           tool_clock_name(&s->clock), g->rows_checked, g->check);
    tool_json_string(g->reason);
    printf("}\n");
  } else if (strcmp(g->check, "skipped") == 0) {
    printf("%-13s %-4s %6zu %8zu  skipped: %s\n", op_name(g->op), dtype_name(g->dtype), g->rows,
           g->cols, g->reason);
  } else {
    char wall[32] = "-";
    if (isfinite(g->wall_us))
      snprintf(wall, sizeof wall, "%.2f", g->wall_us);
    printf("%-13s %-4s %6zu %8zu %10.2f %8.1f %5.2f %9s %9.2e %7.3f %-4s %-9s %s%s%s\n",
           op_name(g->op), dtype_name(g->dtype), g->rows, g->cols, g->us, g->gbps, g->ratio, wall,
           g->max_err, g->err_tol, g->check, g->why ? g->why : "-", g->variant,
           g->reason[0] ? "  " : "", g->reason);
  }
  fflush(stdout);
}

/* One op on one shape and dtype of the grid: choose, check, time. */
static void grid_item(session *s, host_data *data, clnorm_op op, double copy, grid_row *g) {
  memset(g, 0, sizeof *g);
  g->op = op;
  g->dtype = data->dtype;
  g->rows = data->rows;
  g->cols = data->cols;
  g->us = g->event_us = g->gbps = g->ratio = g->bytes = g->wall_us = NAN;
  g->max_err = g->err_tol = NAN;
  g->check = "FAIL";
  shape sh;
  if (!shape_init(s, &sh, op, data->dtype, data->rows, data->cols, data, 0, g->reason,
                  sizeof g->reason)) {
    g->check = "skipped";
    return;
  }
  const clnorm_call call = shape_call(&sh, 0);
  g->bytes = tool_op_bytes(&call);
  clnorm_variant chosen;
  clnorm_choice why = CLNORM_CHOICE_HEURISTIC;
  clnorm_status st = clnorm_choose(s->ctx, &call, &chosen, &why);
  if (st == CLNORM_OK) {
    clnorm_variant_format(&chosen, g->variant, sizeof g->variant);
    g->why = clnorm_choice_string(why);
  }
  size_t idx_buf[CHECK_SAMPLE];
  const size_t *idx = sample_rows(data->rows, data->cols, idx_buf, &g->rows_checked);
  errors e;
  if (st == CLNORM_OK)
    st = run_checked(s, &sh, &sh.tset[0], NULL, data, idx, g->rows_checked, 0, &e);
  timing t;
  if (st == CLNORM_OK) {
    g->max_err = e.rel;
    g->err_tol = e.scaled;
    g->worst = e.what;
    st = time_variant(s, &sh, NULL, 0, &t);
  }
  if (st == CLNORM_OK) {
    g->us = t.median * 1e6;
    g->event_us = t.own * 1e6;
    g->gbps = g->bytes / t.median / 1e9;
    g->ratio = g->gbps / copy;
    if (data->rows * data->cols < WALL_BELOW) {
      const double wall = wall_per_call(s, &sh, WALL_CALLS);
      if (wall > 0)
        g->wall_us = wall * 1e6;
      else
        snprintf(g->reason, sizeof g->reason, "the back-to-back loop failed: %s",
                 clnorm_ctx_errmsg(s->ctx));
    }
    if (e.scaled <= 1.0 && !g->reason[0])
      g->check = "pass";
    else if (!g->reason[0])
      snprintf(g->reason, sizeof g->reason, "%s: error %.3g of its tolerance", e.what, e.scaled);
  } else {
    snprintf(g->reason, sizeof g->reason, "%s: %s", clnorm_status_string(st),
             clnorm_ctx_errmsg(s->ctx));
  }
  shape_free(&sh);
}

static void grid_prebuild(session *s, const options *o, const clnorm_op *ops, size_t nops,
                          const clnorm_dtype *dtypes, size_t ndtypes) {
  const size_t count = o->ngrid * ndtypes * nops;
  clnorm_call *calls = calloc(count, sizeof *calls);
  cl_mem dummy = make_buffer(s, 64, NULL); /* the vector width depends on which matrices exist */
  if (!calls || !dummy) {
    free(calls);
    release(dummy);
    return;
  }
  size_t k = 0;
  for (size_t g = 0; g < o->ngrid; g++)
    for (size_t d = 0; d < ndtypes; d++)
      for (size_t a = 0; a < nops; a++, k++) {
        shape sh;
        operands ops_dummy;
        memset(&sh, 0, sizeof sh);
        memset(&ops_dummy, 0, sizeof ops_dummy);
        sh.op = ops[a];
        sh.dtype = dtypes[d];
        sh.cols = o->grid_cols[g];
        sh.gamma = dummy;
        sh.beta = dummy;
        ops_dummy.rows = o->grid_rows[g];
        for (int m = 0; m < MATS; m++)
          ops_dummy.mat[m] = uses_matrix(ops[a], m) ? dummy : NULL;
        ops_dummy.mean = has_mean(ops[a]) ? dummy : NULL;
        ops_dummy.rstd = dummy;
        ops_dummy.dgamma = clnorm__op_backward(ops[a]) ? dummy : NULL;
        ops_dummy.dbeta = clnorm__op_backward(ops[a]) && has_mean(ops[a]) ? dummy : NULL;
        calls[k] = call_of(&sh, &ops_dummy);
      }
  const double start = tool_now();
  if (!o->quiet)
    fprintf(stderr, "normtune: building the kernels the dispatcher chooses for %zu calls\n", count);
  build_all(s->ctx, calls, 1, NULL, count, NULL);
  if (!o->quiet)
    fprintf(stderr, "normtune: built in %.1f s\n", tool_now() - start);
  release(dummy);
  free(calls);
}

static int bench_grid(const options *o, session *s, double copy, const char *copy_kernel) {
  selection sel;
  select_shapes(o, ALL_OPS, ALL_DTYPES, NULL, 0, NULL, 0, &sel);
  const size_t count = o->ngrid * sel.ndtypes * sel.nops;
  int want_res = 0, want_dy = 0;
  for (size_t a = 0; a < sel.nops; a++) {
    want_res |= clnorm__op_add(sel.ops[a]);
    want_dy |= clnorm__op_backward(sel.ops[a]);
  }
  grid_prebuild(s, o, sel.ops, sel.nops, sel.dtypes, sel.ndtypes);
  static const char check_note[] =
      "outputs poisoned with NaN, one run through the dispatcher, compared with the float64 "
      "reference: every row when rows <= 64 or rows x cols <= 4M elements, else 64 rows spread "
      "evenly (first and last included); dgamma/dbeta over all rows. max_err: |got - ref| over "
      "the row's largest |ref| (dx: over max(that, rstd * max |gamma * dy|)); err/tol <= 1 "
      "passes: f32 1e-5 (backward 1e-4) of that, f16/bf16 1 ulp of the dtype more; mean, rstd "
      "1e-5; sum_out bit-exact";
  static const char timing_note[] =
      "median kernel time from OpenCL profiling events after 2 warm-up runs (10 to 200 runs, "
      "until the median settles or about 1 s), rotating buffer sets to exceed 4x the device "
      "cache; a run lasts from the call's first kernel's start to its last kernel's end "
      "(clnorm_run_span: no marker's gap; event_us: the last kernel's own start to end); "
      "GB/s: each input read once, each output written once; wall: 200 calls back to back on "
      "a queue without profiling, then clFinish, per call (shapes below 1M elements)";
  if (o->json) {
    printf("{\"header\": \"normtune bench --grid\", \"device\": ");
    tool_json_string(s->dev.name);
    printf(", \"platform\": ");
    tool_json_string(s->dev.platform_name);
    printf(", \"grid\": ");
    tool_json_string(o->grid);
    printf(", \"copy_gbps\": %.1f, \"copy_kernel\": ", copy);
    tool_json_string(copy_kernel);
    printf(", \"check\": ");
    tool_json_string(check_note);
    printf(", \"timing\": ");
    tool_json_string(timing_note);
    printf("}\n");
  } else {
    printf("normtune bench --grid %s on %s (%s)\n", o->grid, s->dev.name, s->dev.platform_name);
    printf("copy bandwidth %.1f GB/s (%s; 256 MiB, same run)\n", copy, copy_kernel);
    printf("check: %s\n", check_note);
    printf("timing: %s\n\n", timing_note);
    printf("%-13s %-4s %6s %8s %10s %8s %5s %9s %9s %7s %-4s %-9s %s\n", "op", "dtype", "rows",
           "cols", "median_us", "GB/s", "/copy", "wall_us", "max_err", "err/tol", "check", "why",
           "variant");
  }
  fflush(stdout);
  size_t done = 0, failed = 0, skipped = 0;
  const double start = tool_now();
  for (size_t gi = 0; gi < o->ngrid; gi++)
    for (size_t d = 0; d < sel.ndtypes; d++) {
      const size_t rows = o->grid_rows[gi], cols = o->grid_cols[gi];
      /* host data only when at least one op fits the device */
      int any = 0;
      char why[512];
      for (size_t a = 0; a < sel.nops && !any; a++)
        any = shape_fits(s, sel.ops[a], sel.dtypes[d], rows, cols, why, sizeof why);
      host_data data;
      memset(&data, 0, sizeof data);
      const int made = any && host_data_make(&data, sel.dtypes[d], rows, cols, want_res, want_dy,
                                             0x9e1d0000u + gi * 8 + d, 0, 0);
      for (size_t a = 0; a < sel.nops; a++) {
        grid_row g;
        if (made) {
          grid_item(s, &data, sel.ops[a], copy, &g);
        } else {
          memset(&g, 0, sizeof g);
          g.op = sel.ops[a];
          g.dtype = sel.dtypes[d];
          g.rows = rows;
          g.cols = cols;
          g.us = g.event_us = g.gbps = g.ratio = g.bytes = g.wall_us = NAN;
          g.max_err = g.err_tol = NAN;
          g.check = "skipped";
          if (any)
            snprintf(g.reason, sizeof g.reason,
                     "%s %s %zu x %zu: out of host memory for its inputs", op_name(sel.ops[a]),
                     dtype_name(sel.dtypes[d]), rows, cols);
          else
            shape_fits(s, sel.ops[a], sel.dtypes[d], rows, cols, g.reason, sizeof g.reason);
        }
        done++;
        failed += strcmp(g.check, "FAIL") == 0;
        skipped += strcmp(g.check, "skipped") == 0;
        grid_print(o, s, &g, copy);
        if (!o->quiet) {
          if (strcmp(g.check, "skipped") == 0)
            fprintf(stderr, "normtune: [%zu/%zu] skipped: %s\n", done, count, g.reason);
          else
            fprintf(stderr,
                    "normtune: [%zu/%zu] %s %s %zux%zu: %.1f GB/s (%.2f of copy), %s%s%s "
                    "(%.0f s)\n",
                    done, count, op_name(g.op), dtype_name(g.dtype), rows, cols, g.gbps, g.ratio,
                    g.check, g.reason[0] ? ": " : "", g.reason, tool_now() - start);
        }
      }
      host_data_free(&data);
    }
  if (!o->json)
    printf("\n%zu results: %zu passed, %zu FAILED, %zu skipped (each with its reason)\n", done,
           done - failed - skipped, failed, skipped);
  if (!o->quiet)
    fprintf(stderr, "normtune: %zu results, %zu failed, %zu skipped, in %.0f s\n", done, failed,
            skipped, tool_now() - start);
  return failed > 0;
}

int cmd_bench(const options *o) {
  session s;
  session_open(o, &s);
  session_load_tuning(o, &s, "benchmarking");
  char err[512];
  tool_copy_kind kind;
  tool_clock clock = {0};
  const double copy =
      tool_copy_gbps(s.context, s.queue, s.dev.device, (size_t)256 << 20,
                     clnorm__ctx_stream_stores(s.ctx), &kind, &clock, err, sizeof err);
  if (copy <= 0)
    die(1, "%s", err);
  if (clock.wall)
    session_fall_back(&s, clock.why);
  s.copy_gbps = copy;
  char copy_kernel[96];
  snprintf(copy_kernel, sizeof copy_kernel, "%s, the fastest of %d copy kernels",
           tool_copy_name(kind), clnorm__ctx_stream_stores(s.ctx) ? 4 : 2);
  const int failed =
      o->ngrid ? bench_grid(o, &s, copy, copy_kernel) : bench_pairs(o, &s, copy, copy_kernel);
  if (!o->json && s.clock.wall)
    printf("timed by the wall clock: the profiling events of this device cannot be believed: "
           "%s\n",
           s.clock.why);
  session_close(&s);
  return failed ? 1 : 0;
}
