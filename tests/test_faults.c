/* Faults (issue 7): what a call does when its variant fails to build, fails at launch, or its
 * scratch memory cannot be allocated. The failures are injected with clnorm__fault_inject
 * (src/internal.h; a static link reaches it), each into a fresh context (CLNORM_LOG=info) whose
 * tuned table holds one variant for the call's shape, set through ctx->tables[CLNORM_TABLE_TUNED].
 *
 *   fallback: a build failure, CL_OUT_OF_RESOURCES or CL_INVALID_WORK_GROUP_SIZE at launch of
 *     the tuned variant (forward, f16 RMSNorm, backward first and second kernel): the call
 *     returns CLNORM_OK, its outputs (poisoned with NaN first) match the float64 reference
 *     (tests/op_case.c), stderr has the fallback line with the reason, and a second call does
 *     not try the failed variant again (an injection armed for that variant's program only does
 *     not fire; clnorm_choose no longer offers it).
 *   forced: the same failures of a variant forced through clnorm_run return their error
 *     (CLNORM_E_BUILD, CLNORM_E_OPENCL) with the outputs still NaN, and are not remembered.
 *   not retried: CL_INVALID_MEM_OBJECT and CL_INVALID_COMMAND_QUEUE at launch return
 *     CLNORM_E_OPENCL, outputs still NaN, no fallback, the variant still chosen afterwards.
 *   scratch: the split-row path's clCreateBuffer failing (CL_MEM_OBJECT_ALLOCATION_FAILURE,
 *     CL_OUT_OF_RESOURCES) runs whole rows (CLNORM_OK, checked), forward and backward; its launch
 *     failing marks the split kernels only; the backward scratch failing returns CLNORM_E_NO_MEMORY
 * with dx, dgamma and dbeta still NaN. all fail: every launch failing returns CLNORM_E_OPENCL, and
 * the failures are forgotten. CLNORM_TEST_VERBOSE=1 prints the log of each fallback. */
#define _POSIX_C_SOURCE 200809L
#include "internal.h"
#include "names.h"
#include "op_case.h"

#include <fcntl.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static harness h;
static char tmp_dir[256];
static int case_failures;

#define EXPECT(cond, ...)                                                                          \
  do {                                                                                             \
    if (!(cond)) {                                                                                 \
      case_failures++;                                                                             \
      harness_fail(__VA_ARGS__);                                                                   \
    }                                                                                              \
  } while (0)

/* stderr of the library, captured into a file around one call. */
typedef struct capture {
  int saved, fd;
  char text[16384];
} capture;

static void capture_begin(capture *c) {
  char path[300];
  snprintf(path, sizeof path, "%s/stderr", tmp_dir);
  fflush(stderr);
  c->fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
  c->saved = dup(2);
  if (c->fd < 0 || c->saved < 0 || dup2(c->fd, 2) < 0) {
    printf("test_faults: FAIL: capturing stderr\n");
    exit(1);
  }
}

static const char *capture_end(capture *c) {
  fflush(stderr);
  dup2(c->saved, 2);
  close(c->saved);
  const off_t size = lseek(c->fd, 0, SEEK_END);
  const size_t n =
      size > 0 ? ((size_t)size < sizeof c->text ? (size_t)size : sizeof c->text - 1) : 0;
  ssize_t got = pread(c->fd, c->text, n, 0);
  c->text[got > 0 ? (size_t)got : 0] = '\0';
  close(c->fd);
  return c->text;
}

/* A fresh context (CLNORM_LOG=info; no tuning database) whose tuned table is `v` for the shape
 * of `c`, checked to be what the dispatcher chooses. */
static clnorm_ctx *tuned_ctx(const oc_case *c, const clnorm_variant *v) {
  clnorm_ctx *ctx = NULL;
  capture cap;
  capture_begin(&cap); /* the context's log line on the database */
  const clnorm_status st = clnorm_ctx_create(h.context, h.device, &ctx);
  capture_end(&cap);
  if (st != CLNORM_OK) {
    printf("test_faults: FAIL: clnorm_ctx_create: %s\n", clnorm_ctx_errmsg(NULL));
    exit(1);
  }
  clnorm_tuned *t = malloc(sizeof *t);
  if (!t)
    exit(1);
  /* against not known: used wherever the heuristic's variant is the one at c->rows */
  *t = (clnorm_tuned){
      c->op, c->dtype, c->cols, clnorm__row_class(c->rows),
      *v,    c->rows,  c->rows, {0, 0, 0, 0, CLNORM_REDUCE_LOCAL, CLNORM_STATS_WELFORD},
      0};
  clnorm__mutex_lock(&ctx->lock);
  free(ctx->tables[CLNORM_TABLE_TUNED].rows);
  ctx->tables[CLNORM_TABLE_TUNED].rows = t;
  ctx->tables[CLNORM_TABLE_TUNED].count = 1;
  clnorm__mutex_unlock(&ctx->lock);
  return ctx;
}

/* The public call's description, for clnorm_choose (buffers do not matter to it). */
static clnorm_call shape_of(const oc_case *c) {
  clnorm_call call;
  memset(&call, 0, sizeof call);
  call.op = c->op;
  call.dtype = c->dtype;
  call.rows = c->rows;
  call.cols = c->cols;
  return call;
}

/* What the dispatcher would run for c's shape now. */
static clnorm_choice chosen(clnorm_ctx *ctx, const oc_case *c, clnorm_variant *v) {
  const clnorm_call call = shape_of(c);
  clnorm_choice why = CLNORM_CHOICE_FORCED;
  capture cap; /* its fallback lines */
  capture_begin(&cap);
  const clnorm_status st = clnorm_choose(ctx, &call, v, &why);
  capture_end(&cap);
  EXPECT(st == CLNORM_OK, "clnorm_choose: %s: %s", clnorm_status_string(st),
         clnorm_ctx_errmsg(ctx));
  return why;
}

/* The key of the program that runs variant v on c's shape (src/program.c: the packed variant;
 * the split kernels take hold 0 and Welford statistics and set bit 40). */
static uint64_t program_key(const oc_case *c, const clnorm_variant *v, int split) {
  clnorm_variant k = *v;
  if (split) {
    k.hold = 0;
    k.stats = CLNORM_STATS_WELFORD;
  }
  return clnorm__variant_key(c->op, c->dtype, &k) | (split ? 1ull << 40 : 0);
}

/* Runs case c through the dispatcher on ctx (outputs poisoned, checked against the reference)
 * with stderr captured; returns the checks' verdict. */
static oc_result run_case(clnorm_ctx *ctx, const oc_case *c, capture *cap, char *msg, size_t size) {
  clnorm_ctx *own = h.ctx;
  h.ctx = ctx;
  capture_begin(cap);
  const oc_result r = oc_run(&h, c, NULL, msg, size);
  capture_end(cap);
  h.ctx = own;
  return r;
}

static void expect_log(const char *label, const capture *cap, const char *a, const char *b) {
  EXPECT(strstr(cap->text, a) && (!b || strstr(cap->text, b)),
         "%s: the log lacks \"%s\"%s%s%s; it was:\n%s", label, a, b ? " and \"" : "", b ? b : "",
         b ? "\"" : "", cap->text);
}

/* The fault fires once on the tuned variant v of case c (kind, err; skip: operations of its
 * program let through first); the call must fall back, succeed and say so, and a second call
 * must not try v again. */
static void fallback_case(const char *label, const oc_case *c, const clnorm_variant *v,
                          clnorm_fault_kind kind, cl_int err, unsigned skip, const char *log_a,
                          const char *log_b) {
  const int before = case_failures;
  clnorm_ctx *ctx = tuned_ctx(c, v);
  clnorm_variant got;
  EXPECT(chosen(ctx, c, &got) == CLNORM_CHOICE_TUNED && clnorm__variant_same(&got, v),
         "%s: the tuned variant is not what the dispatcher chooses before the fault", label);
  /* clnorm_choose built it: a build fault needs a context that has not */
  if (kind == CLNORM_FAULT_BUILD) {
    clnorm_ctx_destroy(ctx);
    ctx = tuned_ctx(c, v);
  }
  const uint64_t key = program_key(c, v, 0);
  clnorm__fault_inject(ctx, kind, err, skip, 1, key);
  capture cap;
  char msg[1024];
  oc_result r = run_case(ctx, c, &cap, msg, sizeof msg);
  EXPECT(r == OC_PASS, "%s: first call: %s", label, msg);
  EXPECT(clnorm__fault_fired(ctx, kind) == 1, "%s: the fault did not fire", label);
  expect_log(label, &cap, log_a, log_b);
  if (getenv("CLNORM_TEST_VERBOSE"))
    printf("%s", cap.text);
  /* Armed again for v's program, without limit: a second call that tried v would fire it. */
  clnorm__fault_inject(ctx, kind, err, 0, 1000, key);
  r = run_case(ctx, c, &cap, msg, sizeof msg);
  EXPECT(r == OC_PASS, "%s: second call: %s", label, msg);
  EXPECT(clnorm__fault_fired(ctx, kind) == 0, "%s: the second call tried the failed variant",
         label);
  EXPECT(!strstr(cap.text, "failed at launch,"), "%s: the second call failed at launch again:\n%s",
         label, cap.text);
  clnorm__fault_inject(ctx, kind, CL_SUCCESS, 0, 0, CLNORM_FAULT_ANY);
  EXPECT(chosen(ctx, c, &got) != CLNORM_CHOICE_TUNED || !clnorm__variant_same(&got, v),
         "%s: the dispatcher still offers the failed variant", label);
  clnorm_ctx_destroy(ctx);
  printf("%s: %s\n", case_failures == before ? "ok  " : "FAIL", label);
  fflush(stdout);
}

/* Host data and device buffers of one call whose outputs must stay untouched. */
typedef struct plain {
  cl_mem in[5];  /* x, gamma, beta (forward) or dy, x, gamma, mean, rstd (backward) */
  cl_mem out[3]; /* y, mean, rstd (forward) or dx, dgamma, dbeta (backward) */
  size_t out_bytes[3];
} plain;

/* Buffers for c (f32, dense): inputs random, outputs NaN. */
static void plain_make(plain *p, const oc_case *c) {
  memset(p, 0, sizeof *p);
  const size_t n = c->rows * c->cols;
  float *data = malloc((n > c->cols ? n : c->cols) * sizeof *data);
  if (!data)
    exit(1);
  clnorm_rng rng;
  clnorm_rng_seed(&rng, 99);
  const int bwd = oc_is_bwd(c->op);
  const size_t in_elems[5] = {n, bwd ? n : c->cols, bwd ? c->cols : c->cols, c->rows, c->rows};
  for (int i = 0; i < 5; i++) {
    for (size_t k = 0; k < in_elems[i]; k++)
      data[k] = (float)(i >= 3 ? 0.5 + clnorm_rng_uniform(&rng) : clnorm_rng_normal(&rng));
    p->in[i] = harness_buffer(&h, in_elems[i] * sizeof(float), data);
  }
  const size_t out_elems[3] = {n, bwd ? c->cols : c->rows, bwd ? c->cols : c->rows};
  for (int i = 0; i < 3; i++) {
    p->out_bytes[i] = out_elems[i] * sizeof(float);
    p->out[i] = harness_buffer(&h, p->out_bytes[i], NULL);
    harness_fill(&h, p->out[i], p->out_bytes[i], NAN);
  }
  free(data);
}

static clnorm_call plain_call(const plain *p, const oc_case *c) {
  clnorm_call call = shape_of(c);
  call.eps = 1e-5f;
  if (oc_is_bwd(c->op)) {
    call.dy = (clnorm_rows){p->in[0], 0, 0};
    call.x = (clnorm_rows){p->in[1], 0, 0};
    call.gamma = p->in[2];
    call.mean = p->in[3];
    call.rstd = p->in[4];
    call.y = (clnorm_rows){p->out[0], 0, 0};
    call.dgamma = p->out[1];
    call.dbeta = p->out[2];
  } else {
    call.x = (clnorm_rows){p->in[0], 0, 0};
    call.gamma = p->in[1];
    call.beta = p->in[2];
    call.y = (clnorm_rows){p->out[0], 0, 0};
    call.mean = p->out[1];
    call.rstd = p->out[2];
  }
  return call;
}

/* Every output element still NaN: nothing was written. */
static int plain_untouched(plain *p) {
  clFinish(h.queue);
  int ok = 1;
  for (int i = 0; i < 3; i++) {
    float *v = malloc(p->out_bytes[i]);
    if (!v)
      exit(1);
    harness_read(&h, p->out[i], p->out_bytes[i], v);
    for (size_t k = 0; k < p->out_bytes[i] / sizeof(float) && ok; k++)
      ok = isnan(v[k]);
    free(v);
  }
  return ok;
}

static void plain_free(plain *p) {
  for (int i = 0; i < 5; i++)
    clReleaseMemObject(p->in[i]);
  for (int i = 0; i < 3; i++)
    clReleaseMemObject(p->out[i]);
}

/* One call of c (f32) on ctx, forced to `force` or dispatched, with the fault armed for any
 * program; it must return `want` with every output still NaN. */
static void error_case(const char *label, clnorm_ctx *ctx, const oc_case *c,
                       const clnorm_variant *force, clnorm_fault_kind kind, cl_int err,
                       clnorm_status want, const char *errmsg_has) {
  const int before = case_failures;
  plain p;
  plain_make(&p, c);
  const clnorm_call call = plain_call(&p, c);
  clnorm__fault_inject(ctx, kind, err, 0, 1, CLNORM_FAULT_ANY);
  capture cap;
  capture_begin(&cap);
  cl_event done = NULL;
  const clnorm_status st = clnorm_run(ctx, h.queue, &call, force, 0, NULL, &done);
  capture_end(&cap);
  EXPECT(st == want, "%s: status %s, want %s: %s", label, clnorm_status_string(st),
         clnorm_status_string(want), clnorm_ctx_errmsg(ctx));
  EXPECT(strstr(clnorm_ctx_errmsg(ctx), errmsg_has), "%s: errmsg lacks \"%s\": %s", label,
         errmsg_has, clnorm_ctx_errmsg(ctx));
  EXPECT(done == NULL, "%s: *event written on failure", label);
  if (done)
    clReleaseEvent(done);
  EXPECT(clnorm__fault_fired(ctx, kind) == 1, "%s: the fault did not fire", label);
  EXPECT(!strstr(cap.text, "failed at launch,"), "%s: a fallback was tried:\n%s", label, cap.text);
  EXPECT(plain_untouched(&p), "%s: an output was written", label);
  clnorm__fault_inject(ctx, kind, CL_SUCCESS, 0, 0, CLNORM_FAULT_ANY);
  plain_free(&p);
  printf("%s: %s\n", case_failures == before ? "ok  " : "FAIL", label);
  fflush(stdout);
}

/* The split-row path of case c (forward or backward) under faults: its scratch failing
 * (CL_MEM_OBJECT_ALLOCATION_FAILURE, CL_OUT_OF_RESOURCES) runs whole rows; its launch failing
 * (at `first_kernel`) gives up the split kernels only, for later calls too. */
static void split_cases(const oc_case *split, const clnorm_variant *t_split,
                        const char *first_kernel) {
  const char *op = clnorm_op_name(split->op);
  const cl_int errs[2] = {CL_MEM_OBJECT_ALLOCATION_FAILURE, CL_OUT_OF_RESOURCES};
  for (int i = 0; i < 2; i++) {
    const int before = case_failures;
    clnorm_ctx *ctx = tuned_ctx(split, t_split);
    clnorm__fault_inject(ctx, CLNORM_FAULT_ALLOC, errs[i], 0, 1, CLNORM_FAULT_ANY);
    capture cap;
    char msg[1024];
    const oc_result r = run_case(ctx, split, &cap, msg, sizeof msg);
    EXPECT(r == OC_PASS, "%s split scratch %s: %s", op, clnorm__cl_error_name(errs[i]), msg);
    EXPECT(clnorm__fault_fired(ctx, CLNORM_FAULT_ALLOC) == 1, "%s split scratch: did not fire", op);
    expect_log("split scratch", &cap, "rows run whole", clnorm__cl_error_name(errs[i]));
    clnorm_ctx_destroy(ctx);
    printf("%s: %s split-row scratch fails with %s: rows run whole\n",
           case_failures == before ? "ok  " : "FAIL", op, clnorm__cl_error_name(errs[i]));
  }
  /* A launch failure of the split kernels gives up the split kernels only. */
  const int before = case_failures;
  clnorm_ctx *ctx = tuned_ctx(split, t_split);
  const uint64_t key = program_key(split, t_split, 1);
  clnorm__fault_inject(ctx, CLNORM_FAULT_ENQUEUE, CL_OUT_OF_RESOURCES, 0, 1000, key);
  capture cap;
  char msg[1024];
  oc_result r = run_case(ctx, split, &cap, msg, sizeof msg);
  EXPECT(r == OC_PASS, "%s split launch: %s", op, msg);
  EXPECT(clnorm__fault_fired(ctx, CLNORM_FAULT_ENQUEUE) == 1, "%s split launch: fired %u times", op,
         clnorm__fault_fired(ctx, CLNORM_FAULT_ENQUEUE));
  expect_log("split launch", &cap, "failed at launch, falling back", first_kernel);
  r = run_case(ctx, split, &cap, msg, sizeof msg);
  EXPECT(r == OC_PASS, "%s split launch, second call: %s", op, msg);
  EXPECT(clnorm__fault_fired(ctx, CLNORM_FAULT_ENQUEUE) == 1,
         "%s split launch: the second call tried the split kernels again", op);
  clnorm_variant got;
  clnorm__fault_inject(ctx, CLNORM_FAULT_ENQUEUE, CL_SUCCESS, 0, 0, CLNORM_FAULT_ANY);
  EXPECT(chosen(ctx, split, &got) == CLNORM_CHOICE_TUNED && clnorm__variant_same(&got, t_split),
         "%s split launch: the whole-row form of the variant is no longer chosen", op);
  clnorm_ctx_destroy(ctx);
  printf("%s: %s split-row kernels fail at launch: rows run whole, the variant stays\n",
         case_failures == before ? "ok  " : "FAIL", op);
}

int main(void) {
  const time_t start = time(NULL);
  snprintf(tmp_dir, sizeof tmp_dir, "/tmp/clnorm_faults_XXXXXX");
  if (!mkdtemp(tmp_dir)) {
    printf("test_faults: FAIL: mkdtemp\n");
    return 1;
  }
  char db[300];
  snprintf(db, sizeof db, "%s/none.db", tmp_dir); /* no tuning database: the table is ours */
  setenv("CLNORM_DB", db, 1);
  setenv("CLNORM_NO_BINARY_CACHE", "1", 1);
  setenv("CLNORM_LOG", "info", 1);
  harness_open(&h, "test_faults");

  /* Tuned variants every device runs (work-groups of 64) that differ from the heuristic's. */
  const clnorm_variant t_fwd = {64, 64, 4, 4, CLNORM_REDUCE_LOCAL, CLNORM_STATS_TWOPASS};
  const clnorm_variant t_rms = {64, 16, 8, 0, CLNORM_REDUCE_LOCAL, CLNORM_STATS_WELFORD};
  /* held (hold 4): the whole-row kernels norm_bwd and bwd_reduce on every device (a GPU splits
   * the rows wherever the variant does not hold the row, clnorm__split_count) */
  const clnorm_variant t_bwd = {64, 64, 4, 4, CLNORM_REDUCE_LOCAL, CLNORM_STATS_WELFORD};
  const clnorm_variant t_split = {64, 64, 4, 0, CLNORM_REDUCE_LOCAL, CLNORM_STATS_WELFORD};
  oc_case ln, rms, bwd, rms_bwd, split, split_bwd;
  oc_default(&ln, CLNORM_OP_LAYERNORM, CLNORM_F32, 40, 1000);
  ln.bad_row = 3; /* a NaN row stays NaN through the fallback */
  ln.bad_col = 17;
  oc_default(&rms, CLNORM_OP_RMSNORM, CLNORM_F16, 300, 512);
  oc_default(&bwd, CLNORM_OP_LAYERNORM_BWD, CLNORM_F32, 70, 768);
  oc_default(&rms_bwd, CLNORM_OP_RMSNORM_BWD, CLNORM_BF16, 20, 256);
  /* few long rows: the split-row path (clnorm__split_count; a GPU's forward splits rows of 128 KB
   * or more) */
  oc_default(&split, CLNORM_OP_LAYERNORM, CLNORM_F32, 2, 32768);
  /* a backward call splits where it has enough column tiles (on a CPU, two per compute unit):
   * the narrowest power of two from 16384 columns that does on this device */
  size_t bwd_cols = 16384;
  for (;;) {
    oc_default(&split_bwd, CLNORM_OP_LAYERNORM_BWD, CLNORM_F32, 2, bwd_cols);
    const clnorm_call call_bwd = shape_of(&split_bwd);
    if (clnorm__split_count(&h.ctx->info, &call_bwd, &t_split) > 1 || bwd_cols >= (1u << 22))
      break;
    bwd_cols *= 2;
  }
  {
    const clnorm_call call = shape_of(&split), call_bwd = shape_of(&split_bwd);
    EXPECT(clnorm__split_count(&h.ctx->info, &call, &t_split) > 1,
           "the split case does not split on this device");
    EXPECT(clnorm__split_count(&h.ctx->info, &call_bwd, &t_split) > 1,
           "the backward split case does not split on this device (up to 2 x %zu)", bwd_cols);
  }

  /* A build failure of the tuned variant. */
  fallback_case("build failure: layernorm f32 falls back", &ln, &t_fwd, CLNORM_FAULT_BUILD,
                CL_BUILD_PROGRAM_FAILURE, 0, "the tuned variant cannot run this call, falling back",
                "injected");
  /* Launch failures of the tuned variant. */
  fallback_case("CL_OUT_OF_RESOURCES at launch: layernorm f32 falls back", &ln, &t_fwd,
                CLNORM_FAULT_ENQUEUE, CL_OUT_OF_RESOURCES, 0, "failed at launch, falling back",
                "CL_OUT_OF_RESOURCES");
  fallback_case("CL_INVALID_WORK_GROUP_SIZE at launch: rmsnorm f16 falls back", &rms, &t_rms,
                CLNORM_FAULT_ENQUEUE, CL_INVALID_WORK_GROUP_SIZE, 0,
                "failed at launch, falling back", "CL_INVALID_WORK_GROUP_SIZE");
  fallback_case("CL_OUT_OF_RESOURCES at norm_bwd: layernorm_bwd f32 falls back", &bwd, &t_bwd,
                CLNORM_FAULT_ENQUEUE, CL_OUT_OF_RESOURCES, 0, "failed at launch, falling back",
                "norm_bwd");
  /* The second kernel: the first one (which writes dx) is already enqueued; the retry waits
   * for it and rewrites every output. */
  fallback_case("CL_OUT_OF_RESOURCES at bwd_reduce: layernorm_bwd f32 falls back", &bwd, &t_bwd,
                CLNORM_FAULT_ENQUEUE, CL_OUT_OF_RESOURCES, 1, "failed at launch, falling back",
                "bwd_reduce");
  fallback_case("CL_INVALID_WORK_GROUP_SIZE at bwd_reduce: rmsnorm_bwd bf16 falls back", &rms_bwd,
                &t_bwd, CLNORM_FAULT_ENQUEUE, CL_INVALID_WORK_GROUP_SIZE, 1,
                "failed at launch, falling back", "bwd_reduce");

  /* A forced variant does not fall back, and its failure is not remembered. */
  {
    oc_case c = ln;
    c.bad_row = -1;
    clnorm_ctx *ctx = tuned_ctx(&c, &t_fwd);
    error_case("forced variant, build failure: CLNORM_E_BUILD", ctx, &c, &t_fwd, CLNORM_FAULT_BUILD,
               CL_BUILD_PROGRAM_FAILURE, CLNORM_E_BUILD, "injected");
    clnorm_ctx_destroy(ctx);
    ctx = tuned_ctx(&c, &t_fwd);
    error_case("forced variant, CL_OUT_OF_RESOURCES at launch: CLNORM_E_OPENCL", ctx, &c, &t_fwd,
               CLNORM_FAULT_ENQUEUE, CL_OUT_OF_RESOURCES, CLNORM_E_OPENCL, "CL_OUT_OF_RESOURCES");
    error_case("forced variant, CL_INVALID_WORK_GROUP_SIZE at launch: CLNORM_E_OPENCL", ctx, &c,
               &t_fwd, CLNORM_FAULT_ENQUEUE, CL_INVALID_WORK_GROUP_SIZE, CLNORM_E_OPENCL,
               "CL_INVALID_WORK_GROUP_SIZE");
    clnorm_variant got;
    EXPECT(chosen(ctx, &c, &got) == CLNORM_CHOICE_TUNED && clnorm__variant_same(&got, &t_fwd),
           "a forced variant's launch failure was remembered");
    /* Errors of the caller's making are not retried either. */
    error_case("CL_INVALID_MEM_OBJECT at launch: CLNORM_E_OPENCL, not retried", ctx, &c, NULL,
               CLNORM_FAULT_ENQUEUE, CL_INVALID_MEM_OBJECT, CLNORM_E_OPENCL,
               "CL_INVALID_MEM_OBJECT");
    error_case("CL_INVALID_COMMAND_QUEUE at launch: CLNORM_E_OPENCL, not retried", ctx, &c, NULL,
               CLNORM_FAULT_ENQUEUE, CL_INVALID_COMMAND_QUEUE, CLNORM_E_OPENCL,
               "CL_INVALID_COMMAND_QUEUE");
    EXPECT(chosen(ctx, &c, &got) == CLNORM_CHOICE_TUNED && clnorm__variant_same(&got, &t_fwd),
           "a non-retryable launch failure was remembered");
    clnorm_ctx_destroy(ctx);
  }

  /* Scratch memory. The split-row path runs whole rows when its scratch cannot be had. */
  {
    split_cases(&split, &t_split, "split_stats");
    split_cases(&split_bwd, &t_split, "bwd_sums");
    clnorm_ctx *ctx;
    /* The backward scratch: no variant needs none, so the call fails with nothing enqueued. */
    oc_case c = bwd;
    ctx = tuned_ctx(&c, &t_bwd);
    error_case("backward scratch, CL_MEM_OBJECT_ALLOCATION_FAILURE: CLNORM_E_NO_MEMORY", ctx, &c,
               NULL, CLNORM_FAULT_ALLOC, CL_MEM_OBJECT_ALLOCATION_FAILURE, CLNORM_E_NO_MEMORY,
               "backward scratch");
    error_case("backward scratch, CL_OUT_OF_RESOURCES: CLNORM_E_NO_MEMORY", ctx, &c, NULL,
               CLNORM_FAULT_ALLOC, CL_OUT_OF_RESOURCES, CLNORM_E_NO_MEMORY, "backward scratch");
    clnorm_ctx_destroy(ctx);
  }

  /* Every launch failing: the device, not the variant, is short of resources. */
  {
    const int before = case_failures;
    oc_case c = ln;
    c.bad_row = -1;
    clnorm_ctx *ctx = tuned_ctx(&c, &t_fwd);
    plain p;
    plain_make(&p, &c);
    const clnorm_call call = plain_call(&p, &c);
    clnorm__fault_inject(ctx, CLNORM_FAULT_ENQUEUE, CL_OUT_OF_RESOURCES, 0, 1000, CLNORM_FAULT_ANY);
    capture cap;
    capture_begin(&cap);
    const clnorm_status st = clnorm_run(ctx, h.queue, &call, NULL, 0, NULL, NULL);
    capture_end(&cap);
    EXPECT(st == CLNORM_E_OPENCL, "all fail: status %s: %s", clnorm_status_string(st),
           clnorm_ctx_errmsg(ctx));
    EXPECT(strstr(clnorm_ctx_errmsg(ctx), "CL_OUT_OF_RESOURCES"), "all fail: errmsg: %s",
           clnorm_ctx_errmsg(ctx));
    const unsigned tried = clnorm__fault_fired(ctx, CLNORM_FAULT_ENQUEUE);
    EXPECT(tried >= 2, "all fail: no fallback tried");
    expect_log("all fail", &cap, "not remembered", NULL);
    EXPECT(plain_untouched(&p), "all fail: an output was written");
    clnorm__fault_inject(ctx, CLNORM_FAULT_ENQUEUE, CL_SUCCESS, 0, 0, CLNORM_FAULT_ANY);
    clnorm_variant got;
    EXPECT(chosen(ctx, &c, &got) == CLNORM_CHOICE_TUNED && clnorm__variant_same(&got, &t_fwd),
           "all fail: the failures were remembered");
    plain_free(&p);
    clnorm_ctx_destroy(ctx);
    printf("%s: every launch fails: CLNORM_E_OPENCL, nothing remembered (%u launches tried)\n",
           case_failures == before ? "ok  " : "FAIL", tried);
  }

  harness_close(&h);
  char path[300];
  snprintf(path, sizeof path, "%s/stderr", tmp_dir);
  unlink(path);
  rmdir(tmp_dir);
  printf("test_faults: %s (%d failures, %lds)\n", harness_failures ? "FAIL" : "PASS",
         harness_failures, (long)(time(NULL) - start));
  return harness_failures ? 1 : 0;
}
