/* The CPU kernel options against each other, call by call: one clnorm context per setting of
 * CLNORM_PREFETCH, CLNORM_STREAM_STORES and CLNORM_ROW_BUFFER (read when a context is created), each call of one
 * context followed by the same call of the next, in rotating order, on rotating buffer sets of
 * more than 1.5 GiB. Interleaving is what makes the comparison hold on a shared machine, where
 * one minute's bandwidth is not the next one's (docs/DEVICES.md). Prints, per op, dtype and
 * shape, the median GB/s of each setting (x read and y written; x and the residual read for
 * add_layernorm, which writes no sum; dy, x read and dx written for the backward, which computes
 * no weight gradients), and checks that every setting wrote the same bits (the options change how the
 * bytes move, never the values; the values themselves are checked against the float64 reference
 * by the tests and by `normtune bench`).
 *
 *   env_ab [--device NAME] [--rounds N] ROWSxCOLS...
 * Exit status: 0, 1 when a call failed or two settings' outputs differ, 2 bad usage. */
#define _POSIX_C_SOURCE 200809L
#include "clnorm.h"
#include "clnorm_variant.h"
#include "tool.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { SETTINGS = 4, MAX_SETS = 8, MAX_ROUNDS = 1000 };
static const char *const settings[SETTINGS][3] = {
    {"1", "1", "1"}, {"0", "1", "1"}, {"1", "0", "1"}, {"1", "1", "0"}};

typedef struct sets {
  size_t n;
  cl_mem x[MAX_SETS], y[MAX_SETS], dy[MAX_SETS];
  cl_mem gamma, beta, mean, rstd;
} sets;

static void sets_free(sets *s) {
  for (size_t i = 0; i < s->n; i++) {
    clReleaseMemObject(s->x[i]);
    clReleaseMemObject(s->y[i]);
    clReleaseMemObject(s->dy[i]);
  }
  clReleaseMemObject(s->gamma);
  clReleaseMemObject(s->beta);
  clReleaseMemObject(s->mean);
  clReleaseMemObject(s->rstd);
}

static int make_sets(cl_context context, size_t rows, size_t cols, clnorm_dtype dtype, sets *s) {
  const size_t elem = dtype == CLNORM_F32 ? 4 : 2, bytes = rows * cols * elem;
  size_t n = (size_t)(1536.0 * 1048576.0 / (3.0 * (double)bytes)) + 1;
  n = n > MAX_SETS ? MAX_SETS : n;
  void *host = malloc(bytes);
  if (!host)
    return 0;
  cl_int e = CL_SUCCESS;
  memset(s, 0, sizeof *s);
  for (size_t i = 0; i < n && e == CL_SUCCESS; i++) {
    tool_fill_random(host, rows * cols, dtype, (uint32_t)(2 * i + 1));
    s->x[i] = clCreateBuffer(context, CL_MEM_COPY_HOST_PTR, bytes, host, &e);
    tool_fill_random(host, rows * cols, dtype, (uint32_t)(2 * i + 2));
    if (e == CL_SUCCESS)
      s->dy[i] = clCreateBuffer(context, CL_MEM_COPY_HOST_PTR, bytes, host, &e);
    if (e == CL_SUCCESS)
      s->y[i] = clCreateBuffer(context, CL_MEM_READ_WRITE, bytes, NULL, &e);
    s->n = i + 1;
  }
  tool_fill_random(host, cols, dtype, 99);
  if (e == CL_SUCCESS)
    s->gamma = clCreateBuffer(context, CL_MEM_COPY_HOST_PTR, cols * elem, host, &e);
  if (e == CL_SUCCESS)
    s->beta = clCreateBuffer(context, CL_MEM_COPY_HOST_PTR, cols * elem, host, &e);
  if (e == CL_SUCCESS)
    s->mean = clCreateBuffer(context, CL_MEM_READ_WRITE, rows * 4, NULL, &e);
  if (e == CL_SUCCESS)
    s->rstd = clCreateBuffer(context, CL_MEM_READ_WRITE, rows * 4, NULL, &e);
  free(host);
  return e == CL_SUCCESS;
}

/* The call of `op` on set i. LayerNorm writes the mean and rstd its backward reads. */
static clnorm_call make_call(clnorm_op op, size_t rows, size_t cols, clnorm_dtype dtype,
                             const sets *s, size_t i) {
  clnorm_call c = {.op = op, .rows = rows, .cols = cols, .dtype = dtype, .eps = 1e-5f};
  c.x = (clnorm_rows){s->x[i], 0, 0};
  c.y = (clnorm_rows){s->y[i], 0, 0};
  c.gamma = s->gamma;
  if (op == CLNORM_OP_LAYERNORM) {
    c.beta = s->beta;
    c.mean = s->mean;
    c.rstd = s->rstd;
  } else if (op == CLNORM_OP_RMSNORM) {
    c.rstd = s->rstd;
  } else if (op == CLNORM_OP_ADD_LAYERNORM) { /* residual: the dy set */
    c.beta = s->beta;
    c.residual = (clnorm_rows){s->dy[i], 0, 0};
  } else { /* layernorm_bwd: dx into y */
    c.dy = (clnorm_rows){s->dy[i], 0, 0};
    c.mean = s->mean;
    c.rstd = s->rstd;
  }
  return c;
}

static int read_bytes(cl_command_queue queue, cl_mem buf, size_t bytes, unsigned char **out) {
  *out = malloc(bytes);
  return *out && clEnqueueReadBuffer(queue, buf, CL_TRUE, 0, bytes, *out, 0, NULL, NULL) ==
                     CL_SUCCESS;
}

int main(int argc, char **argv) {
  const char *sel = NULL;
  int rounds = 20, first_shape = argc;
  for (int a = 1; a < argc; a++) {
    if (strcmp(argv[a], "--device") == 0 && a + 1 < argc) {
      sel = argv[++a];
    } else if (strcmp(argv[a], "--rounds") == 0 && a + 1 < argc) {
      rounds = atoi(argv[++a]);
    } else {
      first_shape = a;
      break;
    }
  }
  if (first_shape >= argc || rounds < 1 || rounds > MAX_ROUNDS) {
    fprintf(stderr, "usage: env_ab [--device NAME] [--rounds 1..%d] ROWSxCOLS...\n", MAX_ROUNDS);
    return 2;
  }
  char err[512];
  tool_device dev;
  cl_context context;
  cl_command_queue queue;
  if (!tool_pick_device(sel, &dev, err, sizeof err) ||
      !tool_open(&dev, &context, &queue, err, sizeof err)) {
    fprintf(stderr, "env_ab: %s\n", err);
    return 1;
  }
  clnorm_ctx *ctx[SETTINGS];
  for (int k = 0; k < SETTINGS; k++) {
    setenv("CLNORM_PREFETCH", settings[k][0], 1);
    setenv("CLNORM_STREAM_STORES", settings[k][1], 1);
    setenv("CLNORM_ROW_BUFFER", settings[k][2], 1);
    if (clnorm_ctx_create(context, dev.device, &ctx[k]) != CLNORM_OK) {
      fprintf(stderr, "env_ab: clnorm_ctx_create failed\n");
      return 1;
    }
  }
  printf("env_ab on %s, %d rounds, median GB/s of each setting (pf: CLNORM_PREFETCH, st: "
         "CLNORM_STREAM_STORES, rb: CLNORM_ROW_BUFFER)\n",
         dev.name, rounds);
  static const clnorm_op ops[] = {CLNORM_OP_LAYERNORM, CLNORM_OP_RMSNORM,
                                  CLNORM_OP_ADD_LAYERNORM, CLNORM_OP_LAYERNORM_BWD};
  static const clnorm_dtype dtypes[] = {CLNORM_F32, CLNORM_F16, CLNORM_BF16};
  static double times[SETTINGS][MAX_ROUNDS];
  int status = 0;
  for (int a = first_shape; a < argc; a++) {
    size_t rows, cols;
    if (sscanf(argv[a], "%zux%zu", &rows, &cols) != 2 || rows == 0 || cols == 0) {
      fprintf(stderr, "env_ab: %s is not ROWSxCOLS\n", argv[a]);
      return 2;
    }
    for (size_t d = 0; d < sizeof dtypes / sizeof *dtypes; d++) {
      sets s;
      if (!make_sets(context, rows, cols, dtypes[d], &s)) {
        fprintf(stderr, "env_ab: %s: could not allocate the buffers\n", argv[a]);
        return 1;
      }
      const size_t bytes = rows * cols * (dtypes[d] == CLNORM_F32 ? 4 : 2);
      for (size_t o = 0; o < sizeof ops / sizeof *ops; o++) {
        /* The backward reads the mean and rstd of set 0's forward: made once, before timing */
        const clnorm_call fwd = make_call(CLNORM_OP_LAYERNORM, rows, cols, dtypes[d], &s, 0);
        if (clnorm_run(ctx[0], queue, &fwd, NULL, 0, NULL, NULL) != CLNORM_OK)
          status = 1;
        unsigned char *first = NULL;
        for (int r = -2; r < rounds && status == 0; r++) {
          for (int j = 0; j < SETTINGS && status == 0; j++) {
            const int k = (j + r + 2) % SETTINGS;
            const size_t set = ((size_t)(r + 2) * SETTINGS + (size_t)j) % s.n;
            const clnorm_call c = make_call(ops[o], rows, cols, dtypes[d], &s, set);
            cl_event ev;
            if (clnorm_run(ctx[k], queue, &c, NULL, 0, NULL, &ev) != CLNORM_OK) {
              fprintf(stderr, "env_ab: %s\n", clnorm_ctx_errmsg(ctx[k]));
              status = 1;
              break;
            }
            const double t = tool_event_seconds(ev); /* releases ev */
            if (!(t > 0)) {
              fprintf(stderr, "env_ab: no profiling time for the call\n");
              status = 1;
            } else if (r >= 0) {
              times[k][r] = t;
            }
          }
        }
        /* the same call on set 0 under every setting: the same bits */
        for (int k = 0; k < SETTINGS && status == 0; k++) {
          const clnorm_call c = make_call(ops[o], rows, cols, dtypes[d], &s, 0);
          unsigned char *out = NULL;
          if (clnorm_run(ctx[k], queue, &c, NULL, 0, NULL, NULL) != CLNORM_OK ||
              !read_bytes(queue, s.y[0], bytes, &out)) {
            status = 1;
          } else if (!first) {
            first = out;
            out = NULL;
          } else if (memcmp(first, out, bytes) != 0) {
            fprintf(stderr,
                    "env_ab: %s %s %s: pf=%s st=%s rb=%s wrote other bits than pf=%s st=%s rb=%s\n",
                    clnorm_op_name(ops[o]), clnorm_dtype_name(dtypes[d]), argv[a],
                    settings[k][0], settings[k][1], settings[k][2], settings[0][0], settings[0][1],
                    settings[0][2]);
            status = 1;
          }
          free(out);
        }
        free(first);
        if (status)
          break;
        const int three = ops[o] == CLNORM_OP_LAYERNORM_BWD || ops[o] == CLNORM_OP_ADD_LAYERNORM;
        const double moved = (three ? 3.0 : 2.0) * (double)bytes;
        printf("%-13s %-4s %8zu x %-8zu", clnorm_op_name(ops[o]), clnorm_dtype_name(dtypes[d]),
               rows, cols);
        for (int k = 0; k < SETTINGS; k++)
          printf("  pf=%s st=%s rb=%s %7.1f", settings[k][0], settings[k][1], settings[k][2],
                 moved / tool_median(times[k], (size_t)rounds) / 1e9);
        printf("  same bits\n");
        fflush(stdout);
      }
      sets_free(&s);
      if (status)
        break;
    }
  }
  for (int k = 0; k < SETTINGS; k++)
    clnorm_ctx_destroy(ctx[k]);
  clReleaseCommandQueue(queue);
  clReleaseContext(context);
  return status;
}
