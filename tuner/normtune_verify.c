/* normtune verify: does the tuning database make calls faster? Per shape, the dispatcher's
 * choice with the database against the heuristic's variant, timed in interleaved rounds in one
 * run, and their ratio; then the geometric mean. */
#define _POSIX_C_SOURCE 200809L
#include "normtune.h"

typedef struct verify_shape {
  clnorm_op op;
  clnorm_dtype dtype;
  size_t rows, cols;
} verify_shape;

typedef struct verify_list {
  verify_shape *items;
  size_t count, cap;
  unsigned ops, dtypes; /* filters: bit 1 << value */
} verify_list;

static void add_shape(verify_list *l, clnorm_op op, clnorm_dtype dtype, size_t rows, size_t cols) {
  for (size_t i = 0; i < l->count; i++)
    if (l->items[i].op == op && l->items[i].dtype == dtype && l->items[i].rows == rows &&
        l->items[i].cols == cols)
      return;
  if (l->count == l->cap) {
    l->cap = l->cap ? 2 * l->cap : 32;
    l->items = realloc(l->items, l->cap * sizeof *l->items);
    if (!l->items)
      die(1, "out of memory");
  }
  l->items[l->count++] = (verify_shape){op, dtype, rows, cols};
}

/* Without shape options: every shape this device has a winner for, at the rows it was tuned. */
static int add_winner(void *user, const clnorm_device_identity *dev, const clnorm_result *r,
                      int winner) {
  (void)dev;
  (void)winner;
  verify_list *l = user;
  if (l->ops & (1u << r->op) && l->dtypes & (1u << r->dtype))
    add_shape(l, r->op, r->dtype, (size_t)r->rows, (size_t)r->cols);
  return 0;
}

static void shapes_of(const options *o, session *s, verify_list *l) {
  l->ops = o->ops ? o->ops : ALL_OPS;
  l->dtypes = o->dtypes ? o->dtypes : ALL_DTYPES;
  if (o->ngrid) {
    selection sel;
    select_shapes(o, NORM_OPS, 1u << CLNORM_F32, NULL, 0, NULL, 0, &sel);
    for (size_t g = 0; g < o->ngrid; g++)
      for (size_t a = 0; a < sel.nops; a++)
        for (size_t d = 0; d < sel.ndtypes; d++)
          add_shape(l, sel.ops[a], sel.dtypes[d], o->grid_rows[g], o->grid_cols[g]);
    return;
  }
  if (o->ncols || o->nrows) {
    static const size_t cols[] = {4096, 65536}, rows[] = {256};
    selection sel;
    select_shapes(o, NORM_OPS, 1u << CLNORM_F32, cols, 2, rows, 1, &sel);
    for (size_t a = 0; a < sel.nops; a++)
      for (size_t d = 0; d < sel.ndtypes; d++)
        for (size_t ci = 0; ci < sel.ncols; ci++)
          for (size_t ri = 0; ri < sel.nrows; ri++)
            add_shape(l, sel.ops[a], sel.dtypes[d], sel.rows[ri], sel.cols[ci]);
    return;
  }
  char err[1024];
  clnorm_db *db =
      open_db_read(o,
                   " (run `normtune tune` first, or give the shapes: --cols and --rows, or "
                   "--grid)",
                   NULL);
  if (clnorm__db_list(db, &s->identity, &s->hashes, 1, add_winner, l, err, sizeof err) != CLNORM_OK)
    die(1, "%s", err);
  clnorm__db_close(db);
  if (l->count == 0)
    die(1,
        "the database holds no winner of %s with these kernels (and these --ops and "
        "--dtypes): give the shapes (--cols and --rows, or --grid), or tune first",
        s->dev.name);
}

/* One shape: the choice and the heuristic checked, then AB_ROUNDS rounds in turn. Returns the
 * speed-up (heuristic time over the choice's; NaN when a check failed) and prints the line. */
static double verify_one(const options *o, session *s, const verify_shape *v, int *failed) {
  shape sh;
  char why[512];
  if (!shape_init(s, &sh, v->op, v->dtype, v->rows, v->cols, NULL, 1, why, sizeof why)) {
    fprintf(stderr, "normtune: skipped %s\n", why);
    return NAN;
  }
  const clnorm_call call = shape_call(&sh, 0);
  clnorm_variant chosen, heur;
  clnorm_choice reason = CLNORM_CHOICE_HEURISTIC;
  memset(&chosen, 0, sizeof chosen);
  clnorm_choose(s->ctx, &call, &chosen, &reason);
  clnorm_heuristic(s->ctx, &call, &heur);
  const int same = differences(&chosen, &heur) == 0;
  errors ec, eh;
  clnorm_status st = verify(s, &sh, NULL, &ec);
  eh = ec;
  if (st == CLNORM_OK && !same)
    st = verify(s, &sh, &heur, &eh);
  const int checked = st == CLNORM_OK && ec.scaled <= 1.0 && eh.scaled <= 1.0;
  double tc[AB_ROUNDS], th[AB_ROUNDS];
  size_t n = 0;
  for (; checked && n < AB_ROUNDS && !interrupted; n++) {
    timing t;
    if ((st = time_variant(s, &sh, NULL, 0, &t)) != CLNORM_OK)
      break;
    tc[n] = t.median;
    if (!same && (st = time_variant(s, &sh, &heur, 0, &t)) != CLNORM_OK)
      break;
    th[n] = same ? tc[n] : t.median;
  }
  clnorm_ab ab;
  memset(&ab, 0, sizeof ab);
  ab.candidate_s = ab.heuristic_s = ab.noise = NAN;
  const int ok = checked && st == CLNORM_OK && n > 0;
  if (ok)
    ab_decide(tc, th, n, &ab);
  const double speedup = ok ? ab.heuristic_s / ab.candidate_s : NAN;
  *failed |= !ok;
  char text[128], heur_text[128], fail_text[600] = "";
  clnorm_variant_format(&chosen, text, sizeof text);
  clnorm_variant_format(&heur, heur_text, sizeof heur_text);
  if (st != CLNORM_OK)
    snprintf(fail_text, sizeof fail_text, "%s: %s", clnorm_status_string(st),
             clnorm_ctx_errmsg(s->ctx));
  else if (!checked)
    snprintf(fail_text, sizeof fail_text, "%s: error %.3g of its tolerance",
             ec.scaled > 1.0 ? ec.what : eh.what, ec.scaled > 1.0 ? ec.scaled : eh.scaled);
  if (o->json) {
    printf("{\"device\": ");
    tool_json_string(s->dev.name);
    printf(", \"op\": \"%s\", \"dtype\": \"%s\", \"rows\": %zu, \"cols\": %zu, \"rounds\": %zu",
           op_name(v->op), dtype_name(v->dtype), v->rows, v->cols, n);
    const json_field fields[] = {{"heuristic_us", "%.3f", ab.heuristic_s * 1e6, NULL},
                                 {"tuned_us", "%.3f", ab.candidate_s * 1e6, NULL},
                                 {"speedup", "%.4f", speedup, NULL},
                                 {"noise", "%.4f", ab.noise, NULL},
                                 {"why", NULL, 0.0, clnorm_choice_string(reason)},
                                 {"variant", NULL, 0.0, text},
                                 {"heuristic_variant", NULL, 0.0, heur_text},
                                 {"check", NULL, 0.0, ok ? "pass" : "FAIL"},
                                 {"reason", NULL, 0.0, fail_text}};
    json_fields(fields, sizeof fields / sizeof fields[0]);
    printf(", \"same\": %s}\n", same ? "true" : "false");
  } else {
    printf("%-13s %-5s %6zu %6zu | %12.2f %10.2f %8.3fx %6.1f | %-9s %s%s%s%s\n", op_name(v->op),
           dtype_name(v->dtype), v->rows, v->cols, ab.heuristic_s * 1e6, ab.candidate_s * 1e6,
           speedup, 100.0 * ab.noise, clnorm_choice_string(reason), text,
           same ? " (the heuristic's own variant)" : "", ok ? "" : "  CHECK FAILED: ", fail_text);
  }
  fflush(stdout);
  shape_free(&sh);
  return speedup;
}

int cmd_verify(const options *o) {
  session s;
  session_open(o, &s);
  session_load_tuning(o, &s, "verifying");
  char path[4096]; /* named in the header */
  db_path(o, path, sizeof path);
  verify_list l;
  memset(&l, 0, sizeof l);
  shapes_of(o, &s, &l);
  signal(SIGINT, on_sigint);
  if (o->json) {
    printf("{\"header\": \"normtune verify\", \"device\": ");
    tool_json_string(s.dev.name);
    printf(", \"db\": ");
    tool_json_string(path);
    printf(", \"rounds\": %d}\n", AB_ROUNDS);
  } else {
    printf("normtune verify on %s (%s), database %s\n", s.dev.name, s.dev.platform_name, path);
    printf("us per call: median of %d rounds, the dispatcher's choice and the heuristic's "
           "variant in turn, each round a median of back-to-back calls timed from the first "
           "kernel's start to the last one's end; speed-up: heuristic us / tuned us; +-%%: half "
           "the range of the rounds' ratios\n\n",
           AB_ROUNDS);
    printf("%-13s %-5s %6s %6s | %12s %10s %9s %6s | %-9s %s\n", "op", "dtype", "rows", "cols",
           "heuristic_us", "tuned_us", "speed-up", "+-%", "why", "tuned variant");
  }
  int failed = 0;
  double log_sum = 0.0, worst = INFINITY;
  size_t counted = 0;
  for (size_t i = 0; i < l.count && !interrupted; i++) {
    const double speedup = verify_one(o, &s, &l.items[i], &failed);
    if (speedup > 0) {
      log_sum += log(speedup);
      worst = fmin(worst, speedup);
      counted++;
    }
  }
  const double geomean = counted ? exp(log_sum / (double)counted) : NAN;
  if (o->json) {
    printf("{\"summary\": \"normtune verify\", \"shapes\": %zu, \"timed\": %zu, ", l.count,
           counted);
    printf("\"geomean_speedup\": ");
    json_number("%.4f", geomean);
    printf(", \"worst_speedup\": ");
    json_number("%.4f", counted ? worst : NAN);
    printf(", \"clock\": \"%s\", \"failed\": %s}\n", tool_clock_name(&s.clock),
           failed ? "true" : "false");
  } else {
    printf("\n%zu shapes, %zu timed: geometric mean speed-up %.3fx, worst %.3fx%s\n", l.count,
           counted, geomean, counted ? worst : NAN, failed ? "; a check FAILED" : "");
    if (s.clock.wall)
      printf("timed by the wall clock: the profiling events of this device cannot be believed: "
             "%s\n",
             s.clock.why);
  }
  free(l.items);
  session_close(&s);
  if (interrupted)
    return EXIT_INTERRUPTED;
  return failed ? 1 : 0;
}
