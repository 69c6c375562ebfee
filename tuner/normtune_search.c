/* The search over one shape's candidates: the strategies (picked from a table by name), the
 * confirmation of the winner against the heuristic, and what a run records besides. */
#define _POSIX_C_SOURCE 200809L
#include "normtune.h"

void progress(search *se, const char *last) {
  if (se->o->quiet)
    return;
  char best[160] = "none yet";
  if (se->best_time < INFINITY) {
    const clnorm_call call = shape_call(se->sh, 0);
    char text[128];
    clnorm_variant_format(&se->c[se->best].v, text, sizeof text);
    snprintf(best, sizeof best, "%.1f GB/s (%s)", tool_op_bytes(&call) / se->best_time / 1e9, text);
  }
  if (se->tty) {
    const double elapsed = tool_now() - se->run_start;
    const double per_shape = se->shape_index > 0 ? elapsed / (double)se->shape_index : 0.0;
    double eta = per_shape * (double)(se->shape_count - se->shape_index);
    if (se->deadline > 0 && se->deadline - tool_now() < eta)
      eta = se->deadline - tool_now();
    const int width = 24;
    const int filled = (int)((double)width * (double)se->shape_index / (double)se->shape_count);
    fprintf(stderr, "\r\033[K[%.*s%*s] shape %zu/%zu %s %s %zux%zu cand %zu/%zu best %s ETA %.0fs",
            filled, "########################", width - filled, "", se->shape_index + 1,
            se->shape_count, op_name(se->sh->op), dtype_name(se->sh->dtype), se->sh->rows,
            se->sh->cols, se->evaluated, se->n, best, eta > 0 ? eta : 0.0);
    fflush(stderr);
  } else if (last) {
    printf("%s\n", last);
    fflush(stdout);
  }
}

/* The key of variant v on the search's shape in r, every measure NaN. */
static void result_key(const search *se, const clnorm_variant *v, clnorm_result *r) {
  memset(r, 0, sizeof *r);
  r->kernel_hash = clnorm__kernel_hash_of(&se->s->hashes, se->sh->op);
  r->op = se->sh->op;
  r->dtype = se->sh->dtype;
  r->cols = se->sh->cols;
  r->rows = se->sh->rows;
  r->row_class = clnorm__row_class(se->sh->rows);
  r->variant = *v;
  r->median_s = r->min_s = r->gbps = r->max_err = NAN;
}

void measure(search *se, clnorm_result *r, double best, errors *e) {
  const clnorm_status st = verify(se->s, se->sh, &r->variant, e);
  timing t = {NAN, NAN, NAN, 0};
  if (st == CLNORM_E_BUILD)
    r->outcome = CLNORM_OUTCOME_BUILD_FAILED;
  else if (st != CLNORM_OK)
    r->outcome = CLNORM_OUTCOME_UNSUPPORTED;
  else if (!(e->scaled <= 1.0))
    r->outcome = CLNORM_OUTCOME_WRONG;
  else if (time_variant(se->s, se->sh, &r->variant, best, &t) != CLNORM_OK)
    r->outcome = CLNORM_OUTCOME_UNSUPPORTED;
  else
    r->outcome = t.slow ? CLNORM_OUTCOME_SLOW : CLNORM_OUTCOME_OK;
  r->max_err = st == CLNORM_OK && isfinite(e->rel) ? e->rel : NAN;
  r->median_s = t.median;
  r->min_s = t.min;
  const clnorm_call call = shape_call(se->sh, 0);
  r->gbps = r->outcome == CLNORM_OUTCOME_OK ? tool_op_bytes(&call) / t.median / 1e9 : NAN;
}

/* Whether the database holds a result of v on the search's shape (this device and kernels);
 * copies it to *stored. */
static int stored_result(const search *se, const clnorm_variant *v, clnorm_result *stored) {
  clnorm_result r;
  char err[256];
  int found = 0;
  result_key(se, v, &r);
  return clnorm__db_get(se->db, &se->s->identity, &r, stored, &found, err, sizeof err) ==
             CLNORM_OK &&
         found;
}

/* Whether a result stored as unsupported at its check (no error measured: the variant was
 * refused when built, or its check's run failed) is of a variant the library now runs: until
 * 28e6d20 clnorm refused every variant of 512 and 1024 work-items on NVIDIA's platform, whose
 * driver reports 256 as every kernel's limit, and it runs them since (docs/DEVICES.md). Builds
 * the variant for the shape's call (clnorm_variant_check: no data needed; a program built before
 * comes from the binary cache). */
static int refusal_lifted(const search *se, const clnorm_result *stored) {
  if (stored->outcome != CLNORM_OUTCOME_UNSUPPORTED || !isnan(stored->max_err))
    return 0;
  const clnorm_call call = shape_call(se->sh, 0);
  return clnorm_variant_check(se->s->ctx, &call, &stored->variant) == CLNORM_OK;
}

double evaluate(search *se, size_t i) {
  candidate *c = &se->c[i];
  if (c->evaluated)
    return c->median;
  c->evaluated = 1;
  se->evaluated++;
  se->total_evals++;
  if (se->replay) {
    c->median = se->replay[i];
    if (c->median < se->best_time) {
      se->best_time = c->median;
      se->best = i;
    }
    return c->median;
  }
  clnorm_result r;
  result_key(se, &c->v, &r);
  char err[1024];
  clnorm_result stored;
  if (stored_result(se, &c->v, &stored)) {
    c->median = stored.outcome == CLNORM_OUTCOME_OK ? stored.median_s : INFINITY;
  } else {
    errors e;
    measure(se, &r, se->best_time < INFINITY ? se->best_time : 0, &e);
    se->measured++;
    const timing t = {r.median_s, r.min_s, NAN, 0};
    if (r.outcome == CLNORM_OUTCOME_WRONG) {
      char text[128];
      clnorm_variant_format(&c->v, text, sizeof text);
      fprintf(stderr,
              "%snormtune: %s gave a wrong result (%s: %.3g of its tolerance) on %s %s "
              "%zu x %zu: recorded, never chosen\n",
              se->tty ? "\n" : "", text, e.what, e.scaled, op_name(se->sh->op),
              dtype_name(se->sh->dtype), se->sh->vset.rows, se->sh->cols);
    }
    if (clnorm__db_put(se->db, &se->s->identity, &r, err, sizeof err) != CLNORM_OK)
      die(EXIT_DB, "storing a result: %s; the same command resumes from what the database holds",
          err);
    c->median = r.outcome == CLNORM_OUTCOME_OK ? t.median : INFINITY;
    if (!se->tty) {
      char text[128], line[400];
      clnorm_variant_format(&c->v, text, sizeof text);
      snprintf(line, sizeof line, "%s %s %zux%zu %s: %s%s%.1f GB/s", op_name(se->sh->op),
               dtype_name(se->sh->dtype), se->sh->rows, se->sh->cols, text,
               clnorm__outcome_name(r.outcome), r.outcome == CLNORM_OUTCOME_OK ? " " : " (",
               r.outcome == CLNORM_OUTCOME_OK ? r.gbps : 0.0);
      if (r.outcome != CLNORM_OUTCOME_OK)
        snprintf(line, sizeof line, "%s %s %zux%zu %s: %s", op_name(se->sh->op),
                 dtype_name(se->sh->dtype), se->sh->rows, se->sh->cols, text,
                 clnorm__outcome_name(r.outcome));
      progress(se, line);
    }
  }
  if (c->median < se->best_time) {
    se->best_time = c->median;
    se->best = i;
  }
  if (se->tty)
    progress(se, NULL);
  return c->median;
}

int search_load(search *se) {
  if (se->sh->loaded)
    return 1;
  char why[512];
  if (shape_load(se->s, se->sh, NULL, 1, why, sizeof why))
    return 1;
  fprintf(stderr, "%snormtune: skipped %s\n", se->tty ? "\n" : "", why);
  return 0;
}

int out_of_time(const search *se) {
  return interrupted || (se->deadline > 0 && tool_now() > se->deadline);
}

size_t find_candidate(const search *se, const clnorm_variant *v) {
  for (size_t i = 0; i < se->n; i++)
    if (clnorm__variant_same(&se->c[i].v, v))
      return i;
  return se->n;
}

unsigned differences(const clnorm_variant *a, const clnorm_variant *b) {
  unsigned n = 0;
  for (int i = 0; i < CLNORM_VARIANT_PARAMS; i++)
    n += clnorm__variant_param(a, i) != clnorm__variant_param(b, i);
  return n;
}

/* Build failures are simply remembered by the context and reported when evaluated. Candidates
 * the database holds a result for are read back, never measured (evaluate): not built. */
void prebuild_all(search *se, const clnorm_call *call) {
  clnorm_variant *v = malloc((se->n ? se->n : 1) * sizeof *v);
  if (!v)
    die(1, "out of memory");
  size_t m = 0;
  for (size_t i = 0; i < se->n; i++) {
    clnorm_result stored;
    if (!stored_result(se, &se->c[i].v, &stored))
      v[m++] = se->c[i].v;
  }
  build_all(se->s->ctx, call, 0, v, m, NULL);
  free(v);
}

typedef struct ab_find {
  const clnorm_ab *key;
  clnorm_ab found;
  int hit;
} ab_find;

/* Whether an A/B of the search's shape at its rows is stored (clnorm__db_ab_same_shape). */
static int find_ab_of_shape(void *user, const clnorm_ab *ab) {
  ab_find *f = user;
  f->hit = clnorm__db_ab_same_shape(ab, f->key);
  return f->hit;
}

int resume_shape(search *se, size_t limit) {
  char err[256];
  size_t *stored_at = malloc((se->n ? se->n : 1) * sizeof *stored_at), count = 0;
  clnorm_result *refusals = malloc((se->n ? se->n : 1) * sizeof *refusals);
  if (!stored_at || !refusals)
    die(1, "out of memory");
  size_t lifted = 0;
  for (size_t i = 0; i < se->n; i++) {
    clnorm_result stored;
    if (!stored_result(se, &se->c[i].v, &stored))
      continue;
    if (refusal_lifted(se, &stored))
      refusals[lifted++] = stored;
    else
      stored_at[count++] = i;
  }
  /* A refusal lifted since (refusal_lifted) is forgotten before any search of the shape: the
   * candidate is then unmeasured, measured where the search reaches it, and one the search does
   * not reach cannot send every later run into the shape again; a shape with any is searched. */
  if (lifted) {
    fprintf(stderr,
            "%snormtune: %s %s %zu x %zu: %zu candidates stored as unsupported run now: the "
            "shape is searched again\n",
            se->tty ? "\n" : "", op_name(se->sh->op), dtype_name(se->sh->dtype), se->sh->rows,
            se->sh->cols, lifted);
    if (clnorm__db_forget_refusals(se->db, &se->s->identity, refusals, lifted, err, sizeof err) !=
        CLNORM_OK)
      die(EXIT_DB,
          "forgetting the refusals lifted since: %s; the same command resumes from what "
          "the database holds",
          err);
  }
  free(refusals);
  clnorm_ab key;
  memset(&key, 0, sizeof key);
  key.op = se->sh->op;
  key.dtype = se->sh->dtype;
  key.cols = se->sh->cols;
  key.rows = se->sh->rows;
  key.row_class = clnorm__row_class(se->sh->rows);
  ab_find f = {&key, key, 0};
  /* fewer than this search evaluates: a larger --fraction than the run that finished it */
  const int completed = lifted == 0 && count >= limit &&
                        clnorm__db_list_ab(se->db, &se->s->identity, &se->s->hashes,
                                           find_ab_of_shape, &f, err, sizeof err) == CLNORM_OK &&
                        f.hit;
  for (size_t k = 0; completed && k < count; k++)
    evaluate(se, stored_at[k]); /* read back: nothing is measured */
  free(stored_at);
  return completed;
}

static void run_exhaustive(search *se, size_t start, size_t limit, clnorm_rng *rng) {
  (void)limit;
  (void)rng;
  if (start < se->n)
    evaluate(se, start);
  for (size_t i = 0; i < se->n && !out_of_time(se); i++)
    evaluate(se, i);
}

static void shuffle(size_t *idx, size_t n, clnorm_rng *rng) {
  for (size_t i = n; i > 1; i--) {
    const size_t j = (size_t)(clnorm_rng_uniform(rng) * (double)i);
    const size_t t = idx[i - 1];
    idx[i - 1] = idx[j];
    idx[j] = t;
  }
}

static void run_random(search *se, size_t start, size_t limit, clnorm_rng *rng) {
  size_t *idx = malloc(se->n * sizeof *idx);
  if (!idx)
    die(1, "out of memory");
  for (size_t i = 0; i < se->n; i++)
    idx[i] = i;
  shuffle(idx, se->n, rng);
  if (start < se->n)
    evaluate(se, start);
  for (size_t k = 0; k < se->n && se->evaluated < limit && !out_of_time(se); k++)
    evaluate(se, idx[k]);
  free(idx);
}

static void run_anneal(search *se, size_t start, size_t limit, clnorm_rng *rng) {
  size_t *nb = malloc(se->n * sizeof *nb);
  if (!nb)
    die(1, "out of memory");
  size_t cur = start < se->n ? start : (size_t)(clnorm_rng_uniform(rng) * (double)se->n);
  double cur_t = evaluate(se, cur);
  while (se->evaluated < limit && se->evaluated < se->n && !out_of_time(se)) {
    size_t m = 0;
    for (size_t i = 0; i < se->n; i++)
      if (!se->c[i].evaluated && differences(&se->c[i].v, &se->c[cur].v) == 1)
        nb[m++] = i;
    if (m == 0) {
      for (size_t i = 0; i < se->n; i++)
        if (!se->c[i].evaluated)
          nb[m++] = i;
      if (m == 0)
        break;
    }
    const size_t next = nb[(size_t)(clnorm_rng_uniform(rng) * (double)m)];
    const double t = evaluate(se, next);
    const double progress_share = (double)se->evaluated / (double)(limit ? limit : 1);
    const double temperature = 0.2 * pow(0.025, progress_share);
    if (t < cur_t ||
        (isfinite(t) && clnorm_rng_uniform(rng) < exp(-(t / cur_t - 1.0) / temperature))) {
      cur = next;
      cur_t = t;
    }
    if (!isfinite(cur_t) && se->best_time < INFINITY) {
      cur = se->best;
      cur_t = se->best_time;
    }
  }
  free(nb);
}

/* limit: anneal's, for a shape with nothing to seed from (the run's --fraction of the candidates) */
static void run_seeded(search *se, size_t start, size_t limit, clnorm_rng *rng) {
  if (se->n == 0)
    return;
  if (start < se->n)
    evaluate(se, start);
  clnorm_result key, earlier[SEEDED_TOP];
  result_key(se, &se->c[start < se->n ? start : 0].v, &key);
  size_t count = 0;
  char err[1024];
  const clnorm_status st = clnorm__db_earlier(se->db, &se->s->identity, &key, SEEDED_TOP, earlier,
                                              &count, err, sizeof err);
  if (st != CLNORM_OK)
    die(EXIT_DB, "reading the earlier kernels' results of %s %s %zu x %zu: %s", op_name(se->sh->op),
        dtype_name(se->sh->dtype), se->sh->rows, se->sh->cols, err);
  size_t seeds = 0;
  for (size_t k = 0; k < count && !out_of_time(se); k++) {
    const size_t i = find_candidate(se, &earlier[k].variant);
    if (i < se->n) { /* a variant the space no longer holds is passed over */
      evaluate(se, i);
      seeds++;
    }
  }
  if (seeds > 0)
    return;
  fprintf(stderr,
          "%snormtune: %s %s %zu x %zu: no results of earlier kernels to seed from: annealing "
          "(--fraction %g)\n",
          se->tty ? "\r\033[K" : "", op_name(se->sh->op), dtype_name(se->sh->dtype), se->sh->rows,
          se->sh->cols, se->o->fraction);
  run_anneal(se, start, limit, rng);
}

const strategy strategies[STRATEGIES] = {{"exhaustive", run_exhaustive, 1, 0, 0},
                                         {"random", run_random, 0, 1, 0},
                                         {"anneal", run_anneal, 0, 1, 0},
                                         {"seeded", run_seeded, 0, 0, 1}};

const strategy *find_strategy(const char *name) {
  for (int i = 0; i < STRATEGIES; i++)
    if (strcmp(strategies[i].name, name) == 0)
      return &strategies[i];
  return NULL;
}

void evaluate_class_winner(search *se) {
  if (se->replay || interrupted)
    return;
  clnorm_result *w = NULL;
  size_t n = 0;
  char err[1024];
  if (clnorm__db_winners(se->db, &se->s->identity, &se->s->hashes, &w, &n, err, sizeof err) !=
      CLNORM_OK)
    return;
  const unsigned row_class = clnorm__row_class(se->sh->rows);
  for (size_t i = 0; i < n; i++)
    if (w[i].op == se->sh->op && w[i].dtype == se->sh->dtype && w[i].cols == se->sh->cols &&
        w[i].row_class == row_class) {
      const size_t k = find_candidate(se, &w[i].variant);
      if (k < se->n)
        evaluate(se, k); /* read back: stored, so nothing is measured */
    }
  free(w);
}

#define CONFIRM_TOP 3    /* the fastest candidates timed again, with the heuristic's */
#define CONFIRM_ROUNDS 2 /* rounds over them, interleaved */

void confirm(search *se, size_t h) {
  if (se->measured == 0 || se->replay || interrupted)
    return;
  size_t pick[CONFIRM_TOP + 1], n = 0;
  for (size_t i = 0; i < se->n; i++) {
    if (!(se->c[i].median < INFINITY))
      continue;
    if (n < CONFIRM_TOP) {
      pick[n++] = i;
    } else if (se->c[i].median < se->c[pick[n - 1]].median) {
      pick[n - 1] = i;
    } else {
      continue;
    }
    for (size_t k = n - 1; k > 0 && se->c[pick[k]].median < se->c[pick[k - 1]].median; k--) {
      const size_t t = pick[k];
      pick[k] = pick[k - 1];
      pick[k - 1] = t;
    }
  }
  if (h < se->n && se->c[h].median < INFINITY) {
    int in = 0;
    for (size_t k = 0; k < n; k++)
      in |= pick[k] == h;
    if (!in)
      pick[n++] = h;
  }
  if (n < 2)
    return;
  double times[CONFIRM_TOP + 1][CONFIRM_ROUNDS + 1];
  for (size_t k = 0; k < n; k++)
    times[k][0] = se->c[pick[k]].median;
  size_t rounds = 0;
  for (; rounds < CONFIRM_ROUNDS && !interrupted; rounds++)
    for (size_t k = 0; k < n; k++) {
      timing t;
      if (time_variant(se->s, se->sh, &se->c[pick[k]].v, 0, &t) != CLNORM_OK || !(t.median > 0))
        return; /* leave every first result as it was */
      times[k][rounds + 1] = t.median;
    }
  if (rounds == 0)
    return;
  char err[1024];
  const clnorm_call call = shape_call(se->sh, 0);
  for (size_t k = 0; k < n; k++) {
    double *v = times[k];
    const double median = tool_median(v, rounds + 1); /* sorts v: v[0] is the fastest */
    clnorm_result r, stored;
    int found = 0;
    result_key(se, &se->c[pick[k]].v, &r);
    if (clnorm__db_get(se->db, &se->s->identity, &r, &stored, &found, err, sizeof err) !=
            CLNORM_OK ||
        !found || stored.outcome != CLNORM_OUTCOME_OK)
      continue;
    stored.median_s = median;
    stored.min_s = fmin(stored.min_s, v[0]);
    stored.gbps = tool_op_bytes(&call) / median / 1e9;
    if (clnorm__db_put(se->db, &se->s->identity, &stored, err, sizeof err) != CLNORM_OK)
      die(EXIT_DB, "storing a result: %s; the same command resumes from what the database holds",
          err);
    se->c[pick[k]].median = median;
  }
  se->best_time = INFINITY;
  for (size_t k = 0; k < n; k++)
    if (se->c[pick[k]].median < se->best_time) {
      se->best_time = se->c[pick[k]].median;
      se->best = pick[k];
    }
}

void ab_decide(const double *cand_s, const double *heur_s, size_t n, clnorm_ab *ab) {
  double c[AB_ROUNDS], h[AB_ROUNDS], ratio[AB_ROUNDS];
  n = n > AB_ROUNDS ? AB_ROUNDS : n;
  for (size_t i = 0; i < n; i++) {
    c[i] = cand_s[i];
    h[i] = heur_s[i];
    ratio[i] = heur_s[i] / cand_s[i];
  }
  ab->candidate_s = tool_median(c, n);
  ab->heuristic_s = tool_median(h, n);
  const double mid = tool_median(ratio, n); /* sorts: ratio[0] is the least */
  ab->noise = n > 1 ? 0.5 * (ratio[n - 1] - ratio[0]) / mid : 0.0;
  ab->rounds = (unsigned)n;
  ab->kept_heuristic = !ab_beats(ab);
}

int ab_beats(const clnorm_ab *ab) {
  const double gain = ab->heuristic_s / ab->candidate_s - 1.0;
  return gain > ab->noise && gain > AB_MARGIN;
}

void ab_decide_edge(clnorm_ab *ab) {
  if (ab->rounds == 0)
    return;
  ab->kept_heuristic = ab->heuristic_s / ab->candidate_s - 1.0 < -AB_EDGE_LOSS;
}

void ab_note(const clnorm_ab *ab, char *buf, size_t size) {
  char cand[128], heur[128];
  clnorm_variant_format(&ab->candidate, cand, sizeof cand);
  clnorm_variant_format(&ab->heuristic, heur, sizeof heur);
  const double gain = 100.0 * (ab->heuristic_s / ab->candidate_s - 1.0);
  if (ab->rounds == 0 && differences(&ab->candidate, &ab->heuristic) != 0)
    snprintf(buf, size, "heuristic kept at %llu rows: best candidate %s gives wrong outputs there",
             (unsigned long long)ab->rows, cand);
  else if (ab->rounds == 0)
    snprintf(buf, size, "heuristic kept at %llu rows: its variant %s is the fastest candidate",
             (unsigned long long)ab->rows, heur);
  else if (ab->kept_heuristic)
    snprintf(buf, size,
             "heuristic kept at %llu rows: best candidate %s was only %.1f%% %s than the "
             "heuristic's %s, noise %.1f%% (%u rounds; a winner needs more than the noise and "
             "%.0f%% at the rows tuned, and to be at most %.0f%% slower at half and twice them)",
             (unsigned long long)ab->rows, cand, fabs(gain), gain >= 0 ? "faster" : "slower", heur,
             100.0 * ab->noise, ab->rounds, 100.0 * AB_MARGIN, 100.0 * AB_EDGE_LOSS);
  else if (!ab_beats(ab)) /* stands by the edge's rule alone (ab_decide_edge) */
    snprintf(buf, size,
             "stands at %llu rows: %s is %.1f%% %s than the heuristic's %s, noise %.1f%% (%u "
             "rounds; at half and twice the rows tuned a winner stands unless more than %.0f%% "
             "slower)",
             (unsigned long long)ab->rows, cand, fabs(gain), gain >= 0 ? "faster" : "slower", heur,
             100.0 * ab->noise, ab->rounds, 100.0 * AB_EDGE_LOSS);
  else
    snprintf(buf, size,
             "tuned at %llu rows: %s is %.1f%% faster than the heuristic's %s, noise %.1f%% (%u "
             "rounds)",
             (unsigned long long)ab->rows, cand, gain, heur, 100.0 * ab->noise, ab->rounds);
}

static int find_ab(void *user, const clnorm_ab *ab) {
  ab_find *f = user;
  const clnorm_ab *k = f->key;
  if (clnorm__db_ab_same_shape(ab, k) && differences(&ab->candidate, &k->candidate) == 0 &&
      differences(&ab->heuristic, &k->heuristic) == 0) {
    f->found = *ab;
    f->hit = 1;
    return 1;
  }
  return 0;
}

/* ab's candidate and heuristic timed in turn on sh, AB_ROUNDS rounds, decided by ab_decide.
 * 0 when a timing failed or Ctrl-C came. */
static int ab_rounds(session *s, shape *sh, clnorm_ab *ab) {
  double tc[AB_ROUNDS], th[AB_ROUNDS];
  for (size_t r = 0; r < AB_ROUNDS; r++) {
    timing t;
    if (interrupted || time_variant(s, sh, &ab->candidate, 0, &t) != CLNORM_OK ||
        !(t.median > 0))
      return 0;
    tc[r] = t.median;
    if (time_variant(s, sh, &ab->heuristic, 0, &t) != CLNORM_OK || !(t.median > 0))
      return 0;
    th[r] = t.median;
  }
  ab_decide(tc, th, AB_ROUNDS, ab);
  return 1;
}

/* A heuristic kept by an A/B whose result at the rows tuned (hr) the search cut short (slow): its
 * A/B time there (heuristic_s) makes it "ok", so that the winners query can choose it. */
static void heuristic_ok(search *se, clnorm_result *hr, double heuristic_s) {
  if (hr->outcome != CLNORM_OUTCOME_SLOW)
    return;
  char err[1024];
  const clnorm_call call = shape_call(se->sh, 0);
  hr->outcome = CLNORM_OUTCOME_OK;
  hr->median_s = heuristic_s;
  hr->min_s = fmin(hr->min_s, heuristic_s);
  hr->gbps = tool_op_bytes(&call) / heuristic_s / 1e9;
  if (clnorm__db_put(se->db, &se->s->identity, hr, err, sizeof err) != CLNORM_OK)
    die(EXIT_DB, "storing a result: %s; the same command resumes from what the database holds",
        err);
}

int ab_test(search *se, const clnorm_variant *h, clnorm_ab *out) {
  if (se->replay || interrupted || !(se->best_time < INFINITY))
    return -1;
  char err[1024];
  int found = 0;
  clnorm_result hr;
  result_key(se, h, &hr);
  /* a heuristic that failed (wrong, not built, not run) cannot be kept: the candidate wins */
  if (clnorm__db_get(se->db, &se->s->identity, &hr, &hr, &found, err, sizeof err) != CLNORM_OK ||
      !found || (hr.outcome != CLNORM_OUTCOME_OK && hr.outcome != CLNORM_OUTCOME_SLOW))
    return -1;
  clnorm_ab ab;
  memset(&ab, 0, sizeof ab);
  ab.kernel_hash = clnorm__kernel_hash_of(&se->s->hashes, se->sh->op);
  ab.op = se->sh->op;
  ab.dtype = se->sh->dtype;
  ab.cols = se->sh->cols;
  ab.row_class = clnorm__row_class(se->sh->rows);
  ab.rows = se->sh->rows;
  ab.candidate = se->c[se->best].v;
  ab.heuristic = *h;
  /* resumed: these two were compared at this row count already */
  ab_find f = {&ab, ab, 0};
  if (clnorm__db_list_ab(se->db, &se->s->identity, &se->s->hashes, find_ab, &f, err, sizeof err) ==
          CLNORM_OK &&
      f.hit) {
    *out = f.found;
    return out->kept_heuristic;
  }
  if (differences(&ab.candidate, h) == 0) {
    ab.candidate_s = ab.heuristic_s = hr.median_s;
    ab.kept_heuristic = 1; /* rounds 0: nothing to compare */
  } else if (!search_load(se) || !ab_rounds(se->s, se->sh, &ab)) {
    return -1;
  }
  if (ab.kept_heuristic)
    heuristic_ok(se, &hr, ab.heuristic_s);
  if (clnorm__db_put_ab(se->db, &se->s->identity, &ab, err, sizeof err) != CLNORM_OK)
    die(EXIT_DB,
        "storing the A/B result: %s; the same command resumes from what the database "
        "holds",
        err);
  *out = ab;
  return ab.kept_heuristic;
}

double record_heuristic(search *se, const clnorm_variant *h, size_t start) {
  clnorm_result r;
  char err[1024];
  int found = 0;
  result_key(se, h, &r);
  if (start < se->n && !se->c[start].evaluated)
    return INFINITY;
  if (start < se->n) {
    if (clnorm__db_get(se->db, &se->s->identity, &r, &r, &found, err, sizeof err) != CLNORM_OK ||
        !found)
      return INFINITY;
  } else {
    if (interrupted)
      return INFINITY;
    if (clnorm__db_get(se->db, &se->s->identity, &r, &r, &found, err, sizeof err) != CLNORM_OK ||
        !found) {
      if (!search_load(se))
        return INFINITY;
      errors e;
      measure(se, &r, 0, &e);
      if (clnorm__db_put(se->db, &se->s->identity, &r, err, sizeof err) != CLNORM_OK)
        die(EXIT_DB, "storing the heuristic's result: %s", err);
      if (!se->tty) {
        char text[128];
        clnorm_variant_format(h, text, sizeof text);
        printf("%s %s %zux%zu %s: %s %.1f GB/s (the heuristic's variant)\n", op_name(se->sh->op),
               dtype_name(se->sh->dtype), se->sh->rows, se->sh->cols, text,
               clnorm__outcome_name(r.outcome), r.outcome == CLNORM_OUTCOME_OK ? r.gbps : 0.0);
      }
    }
  }
  if (clnorm__db_put_heuristic(se->db, &se->s->identity, &r, err, sizeof err) != CLNORM_OK)
    die(EXIT_DB, "storing the heuristic's result: %s", err);
  return start >= se->n && r.outcome == CLNORM_OUTCOME_OK ? r.median_s : INFINITY;
}

double record_copy(session *s, clnorm_db *db, double before) {
  char err[1024];
  double bytes = fmax(64.0 * 1048576.0, 4.0 * (double)s->cache);
  bytes = fmin(bytes, 256.0 * 1048576.0);
  bytes = fmin(bytes, (double)s->max_alloc / 2.0);
  const size_t size = (size_t)bytes & ~(size_t)15;
  tool_clock clock = {0};
  clock.events_only = s->events_only;
  const double gbps =
      tool_copy_gbps(s->context, s->queue, s->dev.device, size, clnorm__ctx_stream_stores(s->ctx),
                     NULL, &clock, err, sizeof err);
  if (clock.wall)
    session_fall_back(s, clock.why); /* tune (events_only) stops here */
  if (!(gbps > 0)) {
    if (before == 0)
      fprintf(stderr,
              "normtune: the copy bandwidth was not measured (%s): `normtune report` will "
              "draw no copy line for this device\n",
              err);
    return before;
  }
  s->copy_gbps = fmax(s->copy_gbps, gbps);
  if (gbps <= before || clock.wall)
    return before;
  if (clnorm__db_put_copy(db, &s->identity, gbps, size, err, sizeof err) != CLNORM_OK)
    die(EXIT_DB, "storing the copy bandwidth: %s", err);
  return gbps;
}

/* The A/B of `won` (a candidate that beat the heuristic at its rows) at one more row count of its
 * class: -1 nothing compared (the shape does not fit, a check failed to run, Ctrl-C), else as
 * ab_test. A candidate whose outputs are wrong at these rows loses, said on stderr (stored with
 * rounds 0 and the heuristic's time for both). */
static int ab_at_rows(search *se, const clnorm_ab *won, size_t rows, clnorm_ab *out) {
  session *s = se->s;
  clnorm_ab ab = *won;
  ab.rows = rows;
  ab.rounds = 0;
  ab.noise = 0.0;
  const clnorm_call call = {.op = won->op, .dtype = won->dtype, .rows = rows, .cols = won->cols};
  clnorm_heuristic(s->ctx, &call, &ab.heuristic);
  /* Compared only where the heuristic runs the variant it runs at the rows tuned (a GPU's, which
   * does not change with the rows). A CPU's changes with the rows: there an A/B that kept the
   * heuristic would make the class's winner a variant measured at no row count of the class,
   * which the database has no result of. Nothing to compare either where the heuristic's variant
   * is the candidate. */
  if (differences(&ab.heuristic, &won->heuristic) != 0 ||
      differences(&ab.candidate, &ab.heuristic) == 0)
    return -1;
  char err[1024], why[512];
  ab_find f = {&ab, ab, 0};
  if (clnorm__db_list_ab(se->db, &s->identity, &s->hashes, find_ab, &f, err, sizeof err) ==
          CLNORM_OK &&
      f.hit) {
    *out = f.found;
    /* stored by an older rule (a win by the noise and AB_MARGIN): decided again from its medians,
     * nothing timed, and stored with its time of measurement */
    const int stored = out->kept_heuristic;
    ab_decide_edge(out);
    if (out->kept_heuristic != stored &&
        clnorm__db_put_ab(se->db, &s->identity, out, err, sizeof err) != CLNORM_OK)
      die(EXIT_DB, "storing the A/B result: %s", err);
    return out->kept_heuristic;
  }
  shape sh;
  if (!shape_init(s, &sh, won->op, won->dtype, rows, (size_t)won->cols, NULL, 1, why,
                  sizeof why))
    return -1;
  errors ec, eh;
  const clnorm_status sc = verify(s, &sh, &ab.candidate, &ec);
  const clnorm_status shs = verify(s, &sh, &ab.heuristic, &eh);
  int decided = 1;
  if (interrupted || shs != CLNORM_OK || !(eh.scaled <= 1.0)) {
    decided = 0; /* no sound heuristic to compare with */
  } else if (sc != CLNORM_OK || !(ec.scaled <= 1.0)) {
    char text[128];
    clnorm_variant_format(&ab.candidate, text, sizeof text);
    fprintf(stderr,
            "%snormtune: %s %s %zux%llu: %s, the winner at %llu rows, %s here: the heuristic "
            "is kept for the row class\n",
            se->tty ? "\n" : "", op_name(ab.op), dtype_name(ab.dtype), rows,
            (unsigned long long)ab.cols, text, (unsigned long long)won->rows,
            sc != CLNORM_OK ? clnorm_status_string(sc) : "gives wrong outputs");
    timing t;
    decided = time_variant(s, &sh, &ab.heuristic, 0, &t) == CLNORM_OK && t.median > 0;
    ab.kept_heuristic = 1;
    ab.candidate_s = ab.heuristic_s = t.median;
  } else {
    decided = ab_rounds(s, &sh, &ab);
    ab_decide_edge(&ab);
  }
  shape_free(&sh);
  if (!decided)
    return -1;
  if (ab.kept_heuristic) { /* the class's winner is the heuristic's result at the rows tuned */
    clnorm_result hr;
    int found = 0;
    result_key(se, &won->heuristic, &hr);
    if (clnorm__db_get(se->db, &s->identity, &hr, &hr, &found, err, sizeof err) == CLNORM_OK &&
        found)
      heuristic_ok(se, &hr, won->heuristic_s);
  }
  ab.measured_at = 0; /* now */
  if (clnorm__db_put_ab(se->db, &s->identity, &ab, err, sizeof err) != CLNORM_OK)
    die(EXIT_DB,
        "storing the A/B result: %s; the same command resumes from what the database "
        "holds",
        err);
  *out = ab;
  return ab.kept_heuristic;
}

int ab_edges(search *se, const clnorm_ab *won, clnorm_ab *out) {
  const unsigned c = won->row_class;
  const size_t first = clnorm__row_class_first(c), next = clnorm__row_class_first(c + 1);
  /* where the dispatcher would use it: within CLNORM_ROWS_NEAR_RATIO of the rows tuned, inside
   * the class (the last class has no end: no A/B above) */
  const size_t rows = (size_t)won->rows, ratio = CLNORM_ROWS_NEAR_RATIO;
  const size_t below = (rows + ratio - 1) / ratio;
  const size_t above = rows <= SIZE_MAX / ratio ? rows * ratio : SIZE_MAX;
  const size_t edges[2] = {below > first ? below : first,
                           next ? (above < next - 1 ? above : next - 1) : 0};
  int compared = 0;
  for (size_t i = 0; i < 2; i++) {
    if (!edges[i] || edges[i] == won->rows || (i == 1 && edges[1] == edges[0]))
      continue;
    clnorm_ab ab;
    const int kept = ab_at_rows(se, won, edges[i], &ab);
    if (kept < 0)
      continue;
    compared = 1;
    *out = ab;
    if (kept)
      return 1;
  }
  return compared ? 0 : -1;
}
