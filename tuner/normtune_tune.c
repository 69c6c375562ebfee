/* normtune tune and normtune strategies: the shapes a run covers, and replaying stored times
 * through every strategy. */
#define _POSIX_C_SOURCE 200809L
#include "normtune.h"

static const size_t default_cols[] = {64,    128,   256,   512,   768,  1024, 1536,
                                      2048,  2560,  3072,  4096,  5120, 6144, 8192,
                                      12288, 14336, 16384, 32768, 65536};
/* A representative row count of each row class (see clnorm__row_class). */
static const size_t class_rows[] = {8, 128, 2048, 16384};

void select_shapes(const options *o, unsigned ops, unsigned dtypes, const size_t *cols,
                   size_t ncols, const size_t *rows, size_t nrows, selection *sel) {
  const unsigned op_mask = o->ops ? o->ops : ops, dtype_mask = o->dtypes ? o->dtypes : dtypes;
  sel->nops = sel->ndtypes = 0;
  for (int i = 0; i < CLNORM_OP_COUNT; i++)
    if (op_mask & (1u << i))
      sel->ops[sel->nops++] = (clnorm_op)i;
  for (int i = 0; i < DTYPE_COUNT; i++)
    if (dtype_mask & (1u << i))
      sel->dtypes[sel->ndtypes++] = (clnorm_dtype)i;
  sel->cols = o->ncols ? o->cols : cols;
  sel->ncols = o->ncols ? o->ncols : ncols;
  sel->rows = o->nrows ? o->rows : rows;
  sel->nrows = o->nrows ? o->nrows : nrows;
}

/* defaults: LayerNorm and RMSNorm forward in float32, the tuning time of earlier releases */
void tune_selection(const options *o, selection *sel) {
  select_shapes(o, NORM_OPS, 1u << CLNORM_F32, default_cols,
                sizeof default_cols / sizeof default_cols[0], class_rows,
                sizeof class_rows / sizeof class_rows[0], sel);
}

/* Candidates stay out of the program-binary cache (hundreds of programs, some 60 KB each on
 * PoCL); the winners enter it when an application first builds them. CLNORM_NO_BINARY_CACHE set
 * by the user (0 included) is left as it is. */
static void no_candidate_cache(void) {
  if (!getenv("CLNORM_NO_BINARY_CACHE"))
    clnorm__setenv("CLNORM_NO_BINARY_CACHE", "1");
}

/* random and anneal build a candidate when they first measure it, one at a time. On a GPU with
 * a host of 8 cores or more, every candidate is built first on all of them (prebuild_all, as
 * exhaustive does): NVIDIA's OpenCL takes 0.2-5 s a program (docs/PERFORMANCE.md, start-up;
 * docs/DEVICES.md), so all n on 16 threads cost less wall time than the 30% measured, one by one
 * (n / 16 against 0.3 n), and the programs stay in the context for the next shapes (a program
 * does not depend on the shape). Not with --budget, whose share a shape would spend building,
 * nor on a CPU device, whose compiles take the cores its kernels run on. */
static int prebuild_sampled(const session *s, const options *o) {
  cl_device_type type = 0;
  if (clGetDeviceInfo(s->dev.device, CL_DEVICE_TYPE, sizeof type, &type, NULL) != CL_SUCCESS)
    return 0;
  return (type & CL_DEVICE_TYPE_GPU) != 0 && clnorm__cpu_count() >= 8 && o->budget <= 0;
}

int cmd_tune(const options *o) {
  session s;
  no_candidate_cache();
  session_open(o, &s);
  s.events_only = 1; /* implausible profiling events: refused (session_fall_back) */
  char path[4096], err[1024];
  db_path(o, path, sizeof path);
  clnorm_db *db = open_db_write(path);
  writing_db = db;
  clnorm_db_stale stale;
  if (clnorm__db_stale(db, &s.identity, &s.hashes, &stale, err, sizeof err) == CLNORM_OK &&
      (stale.driver_changed || stale.kernels_changed))
    fprintf(stderr,
            "normtune: %llu stored results of this device are stale (%llu from another driver "
            "version, %llu from other kernel sources): they are not used; this run replaces "
            "them\n",
            (unsigned long long)(stale.driver_changed + stale.kernels_changed),
            (unsigned long long)stale.driver_changed, (unsigned long long)stale.kernels_changed);

  selection sel;
  tune_selection(o, &sel);

  signal(SIGINT, on_sigint);
  const size_t nvar = variant_capacity(s.ctx);
  clnorm_variant *all = malloc((nvar ? nvar : 1) * sizeof *all);
  candidate *cand = malloc((nvar ? nvar : 1) * sizeof *cand);
  if (!all || !cand)
    die(1, "out of memory");
  search se;
  memset(&se, 0, sizeof se);
  se.s = &s;
  se.db = db;
  se.o = o;
  se.tty = isatty(STDERR_FILENO) && !o->quiet;
  se.shape_count = sel.nops * sel.ndtypes * sel.ncols * sel.nrows;
  se.run_start = tool_now();
  se.deadline = o->budget > 0 ? se.run_start + o->budget : 0.0;
  clnorm_rng rng;
  clnorm_rng_seed(&rng, o->seed);
  printf("normtune: tuning %s (%s) into %s: %zu shapes, strategy %s%s\n", s.dev.name,
         s.dev.platform_name, path, se.shape_count, o->strategy,
         o->budget > 0 ? ", with a time budget" : "");
  const double copy_start = tool_now();
  const double copy_gbps = record_copy(&s, db, 0.0);
  const double copy_seconds = tool_now() - copy_start;
  /* resumed: shapes whose every candidate was read back from the database */
  size_t tuned = 0, skipped = 0, resumed = 0;
  int budget_out = 0;
  for (size_t a = 0; a < sel.nops; a++)
    for (size_t d = 0; d < sel.ndtypes; d++)
      for (size_t ci = 0; ci < sel.ncols; ci++)
        for (size_t ri = 0; ri < sel.nrows; ri++, se.shape_index++) {
          if (out_of_time(&se)) {
            budget_out = !interrupted;
            goto done;
          }
          shape sh;
          char why[512];
          /* planned only, loaded (search_load) when something must be measured: a finished
           * shape is read back without its data */
          if (!shape_plan(&s, &sh, sel.ops[a], sel.dtypes[d], sel.rows[ri], sel.cols[ci], why,
                          sizeof why)) {
            fprintf(stderr, "%snormtune: skipped %s\n", se.tty ? "\n" : "", why);
            skipped++;
            continue;
          }
          const clnorm_call call = shape_call(&sh, 0);
          const size_t nv = clnorm_variant_list(s.ctx, sel.ops[a], sel.dtypes[d], all, nvar);
          se.n = 0;
          for (size_t i = 0; i < nv && i < nvar; i++) {
            /* the call-level check (the row must fit a held variant) without building */
            if (!clnorm__variant_call_ok(&all[i], call.cols, NULL, 0))
              continue;
            cand[se.n].v = all[i];
            cand[se.n].evaluated = 0;
            cand[se.n].median = INFINITY;
            se.n++;
          }
          if (se.n == 0) {
            fprintf(stderr,
                    "%snormtune: skipped %s %s %zu x %zu: no variant of it runs on this "
                    "device\n",
                    se.tty ? "\n" : "", op_name(sel.ops[a]), dtype_name(sel.dtypes[d]),
                    sel.rows[ri], sel.cols[ci]);
            skipped++;
            shape_free(&sh);
            continue;
          }
          se.c = cand;
          se.sh = &sh;
          se.evaluated = 0;
          se.measured = 0;
          se.best = 0;
          se.best_time = INFINITY;
          clnorm_variant h;
          clnorm_heuristic(s.ctx, &call, &h);
          size_t start = find_candidate(&se, &h);
          /* the budget left is shared evenly by the shapes left */
          const double shape_deadline_save = se.deadline;
          if (se.deadline > 0)
            se.deadline =
                tool_now() + (se.deadline - tool_now()) / (double)(se.shape_count - se.shape_index);
          const size_t limit = (size_t)ceil(o->fraction * (double)se.n);
          const strategy *strat = find_strategy(o->strategy);
          if (!resume_shape(&se, strat->sampled ? limit : strat->seeded ? 1 : se.n)) {
            if (!search_load(&se)) {
              skipped++;
              se.deadline = shape_deadline_save;
              shape_free(&sh);
              continue;
            }
            if (strat->prebuild || (strat->sampled && prebuild_sampled(&s, o)))
              prebuild_all(&se, &call);
            strat->run(&se, start, limit, &rng);
          }
          se.deadline = shape_deadline_save;
          evaluate_class_winner(&se);
          confirm(&se, start); /* against the whole run's deadline: the search used the shape's */
          const double heuristic_time = record_heuristic(&se, &h, start);
          /* the winner: what the A/B against the heuristic decided, else the faster of the two */
          clnorm_ab ab;
          int kept = ab_test(&se, &h, &ab);
          /* the candidate won here: it must also win at the row class's edges */
          clnorm_ab edge;
          const int edge_kept = kept == 0 ? ab_edges(&se, &ab, &edge) : -1;
          if (edge_kept == 1)
            kept = 1;
          if (se.best_time < INFINITY || heuristic_time < INFINITY) {
            const int heuristic_best = kept >= 0 ? kept : heuristic_time < se.best_time;
            const double winner_time = kept == 1        ? ab.heuristic_s
                                       : kept == 0      ? ab.candidate_s
                                       : heuristic_best ? heuristic_time
                                                        : se.best_time;
            char text[128], line[1600], note[1200] = "";
            clnorm_variant_format(heuristic_best ? &h : &se.c[se.best].v, text, sizeof text);
            if (kept >= 0)
              ab_note(&ab, note, sizeof note / 2);
            if (edge_kept >= 0) {
              const size_t used = strlen(note);
              snprintf(note + used, sizeof note - used, "; ");
              ab_note(&edge, note + used + 2, sizeof note - used - 2);
            }
            snprintf(line, sizeof line,
                     "best %s %s %zux%zu: %s %.1f GB/s (%zu of %zu evaluated)%s%s", op_name(sh.op),
                     dtype_name(sh.dtype), sh.rows, sh.cols, text,
                     tool_op_bytes(&call) / winner_time / 1e9, se.evaluated, se.n,
                     note[0] ? "; " : "", note);
            if (se.tty)
              fprintf(stderr, "\r\033[K%s\n", line);
            else if (!o->quiet)
              printf("%s\n", line);
            tuned++;
            resumed += se.measured == 0;
          }
          shape_free(&sh);
        }
done:
  if (!interrupted)
    record_copy(&s, db, copy_gbps);
  if (se.tty)
    fprintf(stderr, "\n");
  printf("normtune: %zu shapes tuned, %zu skipped, %zu evaluations in %.1f s (shapes: %zu "
         "measured by this run, %zu read back from the database); results in %s\n",
         tuned, skipped, se.total_evals, tool_now() - se.run_start, tuned - resumed, resumed, path);
  if (budget_out && tuned == resumed)
    printf("normtune: the --budget of %g s ran out before this run measured anything (%zu of "
           "%zu shapes not reached; the copy bandwidth took %.1f s of it): give a larger "
           "--budget\n",
           o->budget, se.shape_count - se.shape_index, se.shape_count, copy_seconds);
  else if (budget_out)
    printf("normtune: the --budget of %g s ran out with %zu of %zu shapes not reached: the same "
           "command goes on from the results stored\n",
           o->budget, se.shape_count - se.shape_index, se.shape_count);
  free(all);
  free(cand);
  writing_db = NULL;
  clnorm__db_close(db);
  session_close(&s);
  if (interrupted) {
    printf("normtune: interrupted; every result measured so far is kept: run the same command "
           "again to resume\n");
    return EXIT_INTERRUPTED;
  }
  return 0;
}
/* Replays the search strategies over shapes tuned exhaustively: every candidate's time is
 * already stored, so each strategy is run many times (seeds) with the stored times as the
 * objective, and its best is compared with the true optimum. */
typedef struct replay_group {
  clnorm_op op;
  clnorm_dtype dtype;
  uint64_t cols, rows;
  unsigned row_class;
  clnorm_variant *v;
  double *t;
  size_t n, cap;
} replay_group;

typedef struct replay_state {
  replay_group *g;
  size_t n, cap;
} replay_state;

static int replay_row(void *user, const clnorm_device_identity *dev, const clnorm_result *r,
                      int winner) {
  (void)dev;
  (void)winner;
  replay_state *st = user;
  replay_group *g = st->n ? &st->g[st->n - 1] : NULL;
  if (!g || g->op != r->op || g->dtype != r->dtype || g->cols != r->cols ||
      g->row_class != r->row_class) {
    if (st->n == st->cap) {
      st->cap = st->cap ? 2 * st->cap : 16;
      st->g = realloc(st->g, st->cap * sizeof *st->g);
      if (!st->g)
        die(1, "out of memory");
    }
    g = &st->g[st->n++];
    memset(g, 0, sizeof *g);
    g->op = r->op;
    g->dtype = r->dtype;
    g->cols = r->cols;
    g->rows = r->rows;
    g->row_class = r->row_class;
  }
  if (g->n == g->cap) {
    g->cap = g->cap ? 2 * g->cap : 64;
    g->v = realloc(g->v, g->cap * sizeof *g->v);
    g->t = realloc(g->t, g->cap * sizeof *g->t);
    if (!g->v || !g->t)
      die(1, "out of memory");
  }
  g->v[g->n] = r->variant;
  g->t[g->n] = r->outcome == CLNORM_OUTCOME_OK ? r->median_s : INFINITY;
  g->n++;
  return 0;
}

int cmd_strategies(const options *o) {
  session s;
  no_candidate_cache();
  session_open(o, &s);
  char err[1024];
  clnorm_db *db = open_db_read(o, "", NULL);
  replay_state st;
  memset(&st, 0, sizeof st);
  if (clnorm__db_list(db, &s.identity, &s.hashes, 0, replay_row, &st, err, sizeof err) != CLNORM_OK)
    die(1, "%s", err);
  clnorm__db_close(db);
  const size_t nvar = variant_capacity(s.ctx);
  clnorm_variant *all = malloc(nvar * sizeof *all);
  candidate *cand = malloc(nvar * sizeof *cand);
  double *times = malloc(nvar * sizeof *times);
  if (!all || !cand || !times)
    die(1, "out of memory");
  static const double fractions[] = {0.05, 0.1, 0.2, 0.3};
  const int seeds = 100;
  printf("strategy replay on %s over shapes tuned exhaustively (%d seeds each)\n", s.dev.name,
         seeds);
  printf("%-13s %-5s %7s %6s %5s | %-8s %5s %6s | %10s %10s %12s\n", "op", "dtype", "rows", "cols",
         "cand", "strategy", "frac", "evals", "mean gap", "p90 gap", "within 3%");
  size_t used = 0;
  const unsigned ops = o->ops ? o->ops : ALL_OPS, dtypes = o->dtypes ? o->dtypes : ALL_DTYPES;
  for (size_t gi = 0; gi < st.n; gi++) {
    replay_group *g = &st.g[gi];
    if (!(ops & (1u << g->op)) || !(dtypes & (1u << g->dtype)))
      continue;
    clnorm_call call;
    memset(&call, 0, sizeof call);
    call.op = g->op;
    call.dtype = g->dtype;
    call.cols = (size_t)g->cols;
    call.rows = (size_t)g->rows;
    const size_t nv = clnorm_variant_list(s.ctx, g->op, g->dtype, all, nvar);
    size_t n = 0, missing = 0;
    double optimum = INFINITY;
    for (size_t i = 0; i < nv; i++) {
      if (!clnorm__variant_call_ok(&all[i], call.cols, NULL, 0))
        continue;
      size_t k = 0;
      while (k < g->n && !clnorm__variant_same(&g->v[k], &all[i]))
        k++;
      if (k == g->n) {
        missing++;
        continue;
      }
      cand[n].v = all[i];
      times[n] = g->t[k];
      optimum = times[n] < optimum ? times[n] : optimum;
      n++;
    }
    /* Slow candidates were cut short, so their stored time is a lower bound: fine for ranking. */
    if (missing > 0 || n < 10 || !isfinite(optimum))
      continue;
    used++;
    clnorm_variant h;
    clnorm_heuristic(s.ctx, &call, &h);
    for (const strategy *strat = strategies; strat < strategies + STRATEGIES; strat++)
      for (size_t f = 0; strat->sampled && f < sizeof fractions / sizeof fractions[0]; f++) {
        double gaps[100];
        int within = 0;
        size_t limit = (size_t)ceil(fractions[f] * (double)n);
        for (int seed = 0; seed < seeds; seed++) {
          search se;
          memset(&se, 0, sizeof se);
          se.s = &s;
          se.o = o;
          se.c = cand;
          se.n = n;
          se.replay = times;
          se.best_time = INFINITY;
          for (size_t i = 0; i < n; i++)
            cand[i].evaluated = 0;
          clnorm_rng rng;
          clnorm_rng_seed(&rng, (uint64_t)seed + 1);
          const size_t start = find_candidate(&se, &h);
          strat->run(&se, start, limit, &rng);
          gaps[seed] = se.best_time / optimum - 1.0;
          within += gaps[seed] <= 0.03;
        }
        double mean = 0.0;
        for (int k = 0; k < seeds; k++)
          mean += gaps[k] / seeds;
        const double p90 = (tool_median(gaps, seeds), gaps[(seeds * 9) / 10]);
        printf("%-13s %-5s %7llu %6llu %5zu | %-8s %5.2f %6zu | %9.2f%% %9.2f%% %11d%%\n",
               op_name(g->op), dtype_name(g->dtype), (unsigned long long)g->rows,
               (unsigned long long)g->cols, n, strat->name, fractions[f], limit, 100.0 * mean,
               100.0 * p90, within * 100 / seeds);
      }
  }
  if (used == 0)
    printf("no shape of this device was tuned exhaustively: run `normtune tune --strategy "
           "exhaustive` on a few shapes first\n");
  for (size_t gi = 0; gi < st.n; gi++) {
    free(st.g[gi].v);
    free(st.g[gi].t);
  }
  free(st.g);
  free(all);
  free(cand);
  free(times);
  session_close(&s);
  return 0;
}
