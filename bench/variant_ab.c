/* Forced variants against each other (and the dispatcher's choice), call by call: one clnorm
 * context, each round runs the call once per variant, in rotating order, on rotating buffer sets
 * of more than 1.5 GiB, and the copy bandwidth is measured in the same process first. As with
 * env_ab, interleaving is what makes the comparison hold on a shared machine (docs/DEVICES.md).
 * Prints the median GB/s of each variant (the bytes of tool_op_bytes, over the time from a marker
 * enqueued just before the call to the end of the call, as `normtune bench` times a call) and its
 * share of the copy, and beside them the same of the time of the call's kernels alone (its
 * event's start to end: the whole call where it enqueued one kernel, without the marker's gap,
 * about 9 us on NVIDIA's OpenCL).
 * The values are not checked here: `normtune bench` and the tests compare every variant with the
 * float64 reference; this only times them.
 *
 *   variant_ab [--device NAME] [--rounds N] OP DTYPE ROWSxCOLS VARIANT...
 * VARIANT: "auto" (the dispatcher's choice), WG,TPR,VEC,HOLD,STATS[,REDUCE] with STATS "welford"
 * or "twopass" and REDUCE "local" (the local-memory tree; the default), "subgroup" or "nvshfl",
 * e.g. 32,1,16,0,twopass or 256,256,4,16,welford,nvshfl; or "copy": the copy kernel that was
 * fastest in the first measurement, run in the same rotation on the same buffers (x to y, the rows'
 * bytes), so that its GB/s is taken at the same moments as the variants'. With "copy" among them,
 * every share is of that interleaved copy's median; without, of the first measurement's. Exit
 * status: 0, 1 when a call failed (the other variants are still timed), 2 bad usage. */
#define _POSIX_C_SOURCE 200809L
#include "tool.h"
#include "tool_access.h" /* the context's stream_stores, as normtune's copy yardstick takes it */

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { MAX_VARIANTS = 16, MAX_SETS = 8, MAX_ROUNDS = 1000 };

static int usage(void) {
  fprintf(stderr,
          "usage: variant_ab [--device NAME] [--rounds 1..%d] OP DTYPE ROWSxCOLS "
          "VARIANT... (VARIANT: auto, copy or "
          "WG,TPR,VEC,HOLD,welford|twopass[,local|subgroup|nvshfl]; at most "
          "%d)\n",
          MAX_ROUNDS, MAX_VARIANTS);
  return 2;
}

/* WG,TPR,VEC,HOLD,STATS[,REDUCE] */
static int parse_variant(const char *s, clnorm_variant *v) {
  char rest[32], reduce[16] = "local";
  if (sscanf(s, "%u,%u,%u,%u,%31s", &v->wg, &v->tpr, &v->vec, &v->hold, rest) != 5)
    return 0;
  char *comma = strchr(rest, ',');
  if (comma) {
    *comma = '\0';
    snprintf(reduce, sizeof reduce, "%s", comma + 1);
  }
  if (strcmp(rest, "welford") == 0)
    v->stats = CLNORM_STATS_WELFORD;
  else if (strcmp(rest, "twopass") == 0)
    v->stats = CLNORM_STATS_TWOPASS;
  else
    return 0;
  if (strcmp(reduce, "local") == 0)
    v->reduce = CLNORM_REDUCE_LOCAL;
  else if (strcmp(reduce, "subgroup") == 0)
    v->reduce = CLNORM_REDUCE_SUBGROUP;
  else if (strcmp(reduce, "nvshfl") == 0)
    v->reduce = CLNORM_REDUCE_NVSHFL;
  else
    return 0;
  return 1;
}

static cl_mem make_buffer(cl_context context, size_t bytes, const void *host, cl_int *e) {
  return clCreateBuffer(context, host ? CL_MEM_COPY_HOST_PTR : CL_MEM_READ_WRITE, bytes,
                        (void *)host, e);
}

int main(int argc, char **argv) {
  const char *sel = NULL;
  int rounds = 20, a = 1;
  for (; a + 1 < argc && strncmp(argv[a], "--", 2) == 0; a += 2) {
    if (strcmp(argv[a], "--device") == 0)
      sel = argv[a + 1];
    else if (strcmp(argv[a], "--rounds") == 0)
      rounds = atoi(argv[a + 1]);
    else
      return usage();
  }
  const int nv = argc - a - 3;
  if (nv < 1 || nv > MAX_VARIANTS || rounds < 1 || rounds > MAX_ROUNDS)
    return usage();
  int op = -1, dtype = -1;
  for (int o = 0; o < CLNORM_OP_COUNT; o++)
    if (strcmp(argv[a], clnorm_op_name((clnorm_op)o)) == 0)
      op = o;
  for (int d = 0; d < 3; d++)
    if (strcmp(argv[a + 1], clnorm_dtype_name((clnorm_dtype)d)) == 0)
      dtype = d;
  size_t rows = 0, cols = 0;
  if (op < 0 || dtype < 0 || sscanf(argv[a + 2], "%zux%zu", &rows, &cols) != 2 || rows == 0 ||
      cols == 0)
    return usage();
  clnorm_variant v[MAX_VARIANTS];
  int forced[MAX_VARIANTS], copy_at = -1;
  for (int k = 0; k < nv; k++) {
    const char *s = argv[a + 3 + k];
    forced[k] = strcmp(s, "auto") != 0;
    if (strcmp(s, "copy") == 0 && copy_at < 0)
      copy_at = k;
    else if (forced[k] && !parse_variant(s, &v[k]))
      return usage();
  }

  tool_device dev;
  cl_context context;
  cl_command_queue queue;
  if (!tool_open_device("variant_ab", sel, &dev, &context, &queue))
    return 1;
  clnorm_ctx *ctx;
  if (clnorm_ctx_create(context, dev.device, &ctx) != CLNORM_OK) {
    fprintf(stderr, "variant_ab: clnorm_ctx_create failed\n");
    return 1;
  }
  const clnorm_dtype dt = (clnorm_dtype)dtype;
  const size_t elem = dt == CLNORM_F32 ? 4 : 2, bytes = rows * cols * elem;
  size_t nsets = (size_t)(1536.0 * 1048576.0 / (3.0 * (double)bytes)) + 1;
  nsets = nsets > MAX_SETS ? MAX_SETS : nsets;
  cl_mem x[MAX_SETS] = {0}, y[MAX_SETS] = {0}, r[MAX_SETS] = {0};
  cl_mem gamma = NULL, beta = NULL, mean = NULL, rstd = NULL, dgamma = NULL, dbeta = NULL;
  cl_int e = CL_SUCCESS;
  void *host = malloc(bytes > cols * elem ? bytes : cols * elem);
  if (!host)
    e = CL_OUT_OF_HOST_MEMORY;
  for (size_t s = 0; s < nsets && e == CL_SUCCESS; s++) {
    tool_fill_random(host, rows * cols, dt, (uint32_t)(2 * s + 1));
    x[s] = make_buffer(context, bytes, host, &e);
    tool_fill_random(host, rows * cols, dt, (uint32_t)(2 * s + 2));
    if (e == CL_SUCCESS)
      r[s] = make_buffer(context, bytes, host, &e); /* residual, or dy for the backward */
    if (e == CL_SUCCESS)
      y[s] = make_buffer(context, bytes, NULL, &e);
  }
  if (e == CL_SUCCESS) {
    tool_fill_random(host, cols, dt, 99);
    gamma = make_buffer(context, cols * elem, host, &e);
  }
  if (e == CL_SUCCESS)
    beta = make_buffer(context, cols * elem, host, &e);
  if (e == CL_SUCCESS)
    mean = make_buffer(context, rows * 4, NULL, &e);
  if (e == CL_SUCCESS)
    rstd = make_buffer(context, rows * 4, NULL, &e);
  if (e == CL_SUCCESS)
    dgamma = make_buffer(context, cols * elem, NULL, &e);
  if (e == CL_SUCCESS)
    dbeta = make_buffer(context, cols * elem, NULL, &e);
  free(host);
  if (e != CL_SUCCESS) {
    fprintf(stderr, "variant_ab: could not allocate the buffers (%d)\n", (int)e);
    return 1;
  }
  const clnorm_op o = (clnorm_op)op;
  const int rms =
      o == CLNORM_OP_RMSNORM || o == CLNORM_OP_ADD_RMSNORM || o == CLNORM_OP_RMSNORM_BWD;
  const int bwd = o == CLNORM_OP_LAYERNORM_BWD || o == CLNORM_OP_RMSNORM_BWD;
  const int add = o == CLNORM_OP_ADD_LAYERNORM || o == CLNORM_OP_ADD_RMSNORM;
  clnorm_call c = {.op = o, .rows = rows, .cols = cols, .dtype = dt, .eps = 1e-5f};
  c.gamma = gamma;
  if (!rms && !bwd)
    c.beta = beta;
  c.rstd = rstd;
  if (!rms)
    c.mean = mean;
  if (bwd) {
    c.dgamma = dgamma;
    c.dbeta = rms ? NULL : dbeta;
    /* the backward reads the statistics of a forward call on set 0 */
    clnorm_call f = {.op = rms ? CLNORM_OP_RMSNORM : CLNORM_OP_LAYERNORM,
                     .rows = rows,
                     .cols = cols,
                     .dtype = dt,
                     .eps = 1e-5f};
    f.x = (clnorm_rows){x[0], 0, 0};
    f.y = (clnorm_rows){y[0], 0, 0};
    f.mean = rms ? NULL : mean;
    f.rstd = rstd;
    if (clnorm_run(ctx, queue, &f, NULL, 0, NULL, NULL) != CLNORM_OK) {
      fprintf(stderr, "variant_ab: the forward call failed: %s\n", clnorm_ctx_errmsg(ctx));
      return 1;
    }
  }
  char err[512];
  tool_copy_kind kind;
  const double copy = tool_copy_gbps(context, queue, dev.device, (size_t)256 << 20,
                                     clnorm__ctx_stream_stores(ctx), &kind, NULL, err, sizeof err);
  if (copy <= 0) {
    fprintf(stderr, "variant_ab: %s\n", err);
    return 1;
  }
  /* "copy": the fastest kind over the rows' bytes, which must be whole vectors of it */
  cl_kernel copy_k = NULL;
  const size_t copy_items = bytes / (4 * kind.width);
  if (copy_at >= 0) {
    if (bytes % (4 * kind.width) != 0) {
      fprintf(stderr, "variant_ab: copy: %zu bytes are not whole %s vectors\n", bytes,
              tool_copy_name(kind));
      return 2;
    }
    copy_k = tool_copy_kernel(context, dev.device, kind, &e);
    if (!copy_k) {
      fprintf(stderr, "variant_ab: the copy kernel failed to build (%d)\n", (int)e);
      return 1;
    }
  }
  static double times[MAX_VARIANTS][MAX_ROUNDS], owns[MAX_VARIANTS][MAX_ROUNDS];
  int failed[MAX_VARIANTS] = {0}, status = 0;
  for (int round = -2; round < rounds; round++) {
    for (int j = 0; j < nv; j++) {
      const int k = (j + round + 2) % nv;
      const size_t s = ((size_t)(round + 2) * (size_t)nv + (size_t)j) % nsets;
      c.x = (clnorm_rows){x[s], 0, 0};
      c.y = (clnorm_rows){y[s], 0, 0};
      if (bwd)
        c.dy = (clnorm_rows){r[s], 0, 0};
      if (add)
        c.residual = (clnorm_rows){r[s], 0, 0};
      /* a call may enqueue several kernels: from a marker before it to the end of its event,
       * and from its first kernel's start to the end (clnorm_run_span) */
      cl_event before, ev, first;
      if (failed[k])
        continue;
      if (clEnqueueMarkerWithWaitList(queue, 0, NULL, &before) != CL_SUCCESS) {
        fprintf(stderr, "variant_ab: clEnqueueMarkerWithWaitList failed\n");
        return 1;
      }
      if (k == copy_at) {
        e = tool_copy_enqueue(queue, copy_k, x[s], y[s], copy_items, &ev);
        if (e != CL_SUCCESS) {
          fprintf(stderr, "variant_ab: the copy kernel failed (%d)\n", (int)e);
          return 1;
        }
        first = ev;
        clRetainEvent(first);
      } else if (clnorm_run_span(ctx, queue, &c, forced[k] ? &v[k] : NULL, 0, NULL, &first, &ev) !=
                 CLNORM_OK) {
        /* the others are still compared; the exit status says one failed */
        fprintf(stderr, "variant_ab: %s: %s\n", argv[a + 3 + k], clnorm_ctx_errmsg(ctx));
        clReleaseEvent(before);
        failed[k] = 1;
        status = 1;
        continue;
      }
      clRetainEvent(ev);
      const double t = tool_span_seconds(before, ev, NULL); /* releases before and ev once */
      const double own = tool_call_seconds(first, ev);      /* releases first and ev */
      if (!(t > 0) || !(own > 0)) {
        fprintf(stderr, "variant_ab: no profiling time for the call\n");
        return 1;
      }
      if (round >= 0) {
        times[k][round] = t;
        owns[k][round] = own;
      }
    }
  }
  const double moved = tool_op_bytes(&c);
  const double copy_here =
      copy_at >= 0 ? 2.0 * (double)bytes / tool_median(times[copy_at], (size_t)rounds) / 1e9 : 0;
  printf("variant_ab on %s, %s %s %zu x %zu, %d rounds, copy %.1f GB/s (same process)%s\n",
         dev.name, argv[a], argv[a + 1], rows, cols, rounds, copy,
         copy_at >= 0 ? "; shares of the interleaved copy" : "");
  const double copy_own =
      copy_at >= 0 ? 2.0 * (double)bytes / tool_median(owns[copy_at], (size_t)rounds) / 1e9 : 0;
  const double yard = copy_at >= 0 ? copy_here : copy;
  const double yard_own = copy_at >= 0 ? copy_own : copy; /* kernels alone against the copy's */
  for (int k = 0; k < nv; k++) {
    if (k == copy_at) {
      printf("  %-5s %-52s %8.1f GB/s  %.2f of copy; kernels alone %8.1f GB/s  %.2f\n", "copy",
             tool_copy_name(kind), copy_here, 1.0, copy_own, 1.0);
      continue;
    }
    if (failed[k]) {
      printf("  %-5s %-52s failed (above)\n", "", argv[a + 3 + k]);
      continue;
    }
    clnorm_variant shown = v[k];
    if (!forced[k] && clnorm_choose(ctx, &c, &shown, NULL) != CLNORM_OK)
      memset(&shown, 0, sizeof shown);
    char name[96];
    clnorm_variant_format(&shown, name, sizeof name);
    const double gbps = moved / tool_median(times[k], (size_t)rounds) / 1e9;
    const double kernel_gbps = moved / tool_median(owns[k], (size_t)rounds) / 1e9;
    printf("  %-5s %-52s %8.1f GB/s  %.2f of copy; kernels alone %8.1f GB/s  %.2f\n",
           forced[k] ? "" : "auto", name, gbps, gbps / yard, kernel_gbps, kernel_gbps / yard_own);
  }
  if (copy_k)
    clReleaseKernel(copy_k);
  for (size_t s = 0; s < nsets; s++) {
    clReleaseMemObject(x[s]);
    clReleaseMemObject(y[s]);
    clReleaseMemObject(r[s]);
  }
  cl_mem rest[] = {gamma, beta, mean, rstd, dgamma, dbeta};
  for (size_t i = 0; i < sizeof rest / sizeof *rest; i++)
    clReleaseMemObject(rest[i]);
  clnorm_ctx_destroy(ctx);
  clReleaseCommandQueue(queue);
  clReleaseContext(context);
  return status;
}
