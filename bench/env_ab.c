/* The CPU kernel options against each other, call by call: one clnorm context per setting of
 * the switches below (read when a context is created): every switch on, then each chosen one off
 * in turn. Each call of one context is followed by the same call of the next, in rotating order,
 * on rotating buffer sets of more than 1.5 GiB. Interleaving is what makes the comparison hold on
 * a shared machine, where one minute's bandwidth is not the next one's (docs/DEVICES.md). Prints,
 * per op, dtype and shape, the median GB/s of each setting (x read and y written; x and the
 * residual read for add_layernorm, which writes no sum; dy, x read and dx written for the
 * backward, which computes no weight gradients), timed from the call's first kernel's start to its
 * last kernel's end (clnorm_run_span: no marker's gap, as normtune bench times), and checks that every setting wrote the same bits (the options
 * change how the bytes move, never the values; the values themselves are checked against the
 * float64 reference by the tests and by `normtune bench`).
 *
 *   env_ab [--device NAME] [--rounds N] [--switches pf,st,rb,hh,fg] [--dtypes f32,f16,bf16]
 *          ROWSxCOLS...
 * Exit status: 0, 1 when a call failed or two settings' outputs differ, 2 bad usage. */
#define _POSIX_C_SOURCE 200809L
#include "clnorm.h"
#include "clnorm_variant.h"
#include "tool.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The switches: short name, environment variable, and whether every setting sets it (to 1 but in
 * its own "off" setting). A switch that is on by default only on some devices (fg: the fixed grid,
 * PoCL before 6) is set only where --switches names it, and is left out of the default list. */
enum { SWITCHES = 5, MAX_SETTINGS = SWITCHES + 1, MAX_SETS = 8, MAX_ROUNDS = 1000 };
static const struct {
  const char *name, *env;
  int always;
} switches[SWITCHES] = {{"pf", "CLNORM_PREFETCH", 1},
                        {"st", "CLNORM_STREAM_STORES", 1},
                        {"rb", "CLNORM_ROW_BUFFER", 1},
                        {"hh", "CLNORM_HW_HALF", 1},
                        {"fg", "CLNORM_FIXED_GRID", 0}};

/* Setting k: every switch on (k = 0), or switch off[k] off. */
static void print_setting(FILE *f, const int *off, int k) {
  if (k == 0)
    fprintf(f, "all on");
  else
    fprintf(f, "%s off", switches[off[k]].name);
}

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

static const char *switch_name(int i) { return switches[i].name; }
static const char *dtype_name(int i) { return clnorm_dtype_name((clnorm_dtype)i); }

int main(int argc, char **argv) {
  const char *sel = NULL;
  int rounds = 20, first_shape = argc, lists_ok = 1;
  unsigned switch_mask = 0, dtype_mask = 7u;
  for (int w = 0; w < SWITCHES; w++)
    if (switches[w].always)
      switch_mask |= 1u << w;
  char err[640];
  for (int a = 1; a < argc; a++) {
    if (strcmp(argv[a], "--device") == 0 && a + 1 < argc) {
      sel = argv[++a];
    } else if (strcmp(argv[a], "--rounds") == 0 && a + 1 < argc) {
      rounds = atoi(argv[++a]);
    } else if (strcmp(argv[a], "--switches") == 0 && a + 1 < argc) {
      lists_ok &= tool_parse_names(argv[++a], switch_name, SWITCHES, "--switches", &switch_mask,
                                   err, sizeof err);
    } else if (strcmp(argv[a], "--dtypes") == 0 && a + 1 < argc) {
      lists_ok &= tool_parse_names(argv[++a], dtype_name, 3, "--dtypes", &dtype_mask, err,
                                   sizeof err);
    } else {
      first_shape = a;
      break;
    }
  }
  if (!lists_ok) {
    fprintf(stderr, "env_ab: %s\n", err);
    return 2;
  }
  if (first_shape >= argc || rounds < 1 || rounds > MAX_ROUNDS) {
    fprintf(stderr,
            "usage: env_ab [--device NAME] [--rounds 1..%d] [--switches pf,st,rb,hh,fg] "
            "[--dtypes f32,f16,bf16] ROWSxCOLS...\n",
            MAX_ROUNDS);
    return 2;
  }
  tool_device dev;
  cl_context context;
  cl_command_queue queue;
  if (!tool_open_device("env_ab", sel, &dev, &context, &queue))
    return 1;
  int off[MAX_SETTINGS] = {-1}, settings = 1;
  for (int w = 0; w < SWITCHES; w++)
    if (switch_mask & (1u << w))
      off[settings++] = w;
  clnorm_ctx *ctx[MAX_SETTINGS];
  for (int k = 0; k < settings; k++) {
    for (int w = 0; w < SWITCHES; w++)
      if (switches[w].always || (switch_mask & (1u << w)))
        setenv(switches[w].env, k > 0 && off[k] == w ? "0" : "1", 1);
    if (clnorm_ctx_create(context, dev.device, &ctx[k]) != CLNORM_OK) {
      fprintf(stderr, "env_ab: clnorm_ctx_create failed\n");
      return 1;
    }
  }
  printf("env_ab on %s, %d rounds, median GB/s of each setting (", dev.name, rounds);
  for (int w = 0; w < SWITCHES; w++)
    printf("%s%s: %s", w ? ", " : "", switches[w].name, switches[w].env);
  printf(")\n");
  static const clnorm_op ops[] = {CLNORM_OP_LAYERNORM, CLNORM_OP_RMSNORM,
                                  CLNORM_OP_ADD_LAYERNORM, CLNORM_OP_LAYERNORM_BWD};
  static double times[MAX_SETTINGS][MAX_ROUNDS];
  int status = 0;
  for (int a = first_shape; a < argc; a++) {
    size_t rows, cols;
    if (sscanf(argv[a], "%zux%zu", &rows, &cols) != 2 || rows == 0 || cols == 0) {
      fprintf(stderr, "env_ab: %s is not ROWSxCOLS\n", argv[a]);
      return 2;
    }
    for (int d = 0; d < 3; d++) {
      if (!(dtype_mask & (1u << d)))
        continue;
      const clnorm_dtype dtype = (clnorm_dtype)d;
      sets s;
      if (!make_sets(context, rows, cols, dtype, &s)) {
        fprintf(stderr, "env_ab: %s: could not allocate the buffers\n", argv[a]);
        return 1;
      }
      const size_t bytes = rows * cols * (dtype == CLNORM_F32 ? 4 : 2);
      for (size_t o = 0; o < sizeof ops / sizeof *ops; o++) {
        /* The backward reads the mean and rstd of set 0's forward: made once, before timing */
        const clnorm_call fwd = make_call(CLNORM_OP_LAYERNORM, rows, cols, dtype, &s, 0);
        if (clnorm_run(ctx[0], queue, &fwd, NULL, 0, NULL, NULL) != CLNORM_OK)
          status = 1;
        unsigned char *first = NULL;
        for (int r = -2; r < rounds && status == 0; r++) {
          for (int j = 0; j < settings && status == 0; j++) {
            const int k = (j + r + 2) % settings;
            const size_t set = ((size_t)(r + 2) * (size_t)settings + (size_t)j) % s.n;
            const clnorm_call c = make_call(ops[o], rows, cols, dtype, &s, set);
            cl_event first_ev, ev;
            if (clnorm_run_span(ctx[k], queue, &c, NULL, 0, NULL, &first_ev, &ev) != CLNORM_OK) {
              fprintf(stderr, "env_ab: %s\n", clnorm_ctx_errmsg(ctx[k]));
              status = 1;
              break;
            }
            const double t = tool_call_seconds(first_ev, ev); /* releases both */
            if (!(t > 0)) {
              fprintf(stderr, "env_ab: no profiling time for the call\n");
              status = 1;
            } else if (r >= 0) {
              times[k][r] = t;
            }
          }
        }
        /* the same call on set 0 under every setting: the same bits */
        for (int k = 0; k < settings && status == 0; k++) {
          const clnorm_call c = make_call(ops[o], rows, cols, dtype, &s, 0);
          unsigned char *out = NULL;
          if (clnorm_run(ctx[k], queue, &c, NULL, 0, NULL, NULL) != CLNORM_OK ||
              !read_bytes(queue, s.y[0], bytes, &out)) {
            status = 1;
          } else if (!first) {
            first = out;
            out = NULL;
          } else if (memcmp(first, out, bytes) != 0) {
            fprintf(stderr, "env_ab: %s %s %s: ", clnorm_op_name(ops[o]),
                    clnorm_dtype_name(dtype), argv[a]);
            print_setting(stderr, off, k);
            fprintf(stderr, " wrote other bits than all on\n");
            status = 1;
          }
          free(out);
        }
        free(first);
        if (status)
          break;
        const int three = ops[o] == CLNORM_OP_LAYERNORM_BWD || ops[o] == CLNORM_OP_ADD_LAYERNORM;
        const double moved = (three ? 3.0 : 2.0) * (double)bytes;
        printf("%-13s %-4s %8zu x %-8zu", clnorm_op_name(ops[o]), clnorm_dtype_name(dtype),
               rows, cols);
        for (int k = 0; k < settings; k++) {
          printf("  ");
          print_setting(stdout, off, k);
          printf(" %7.1f", moved / tool_median(times[k], (size_t)rounds) / 1e9);
        }
        printf("  same bits\n");
        fflush(stdout);
      }
      sets_free(&s);
      if (status)
        break;
    }
  }
  for (int k = 0; k < settings; k++)
    clnorm_ctx_destroy(ctx[k]);
  clReleaseCommandQueue(queue);
  clReleaseContext(context);
  return status;
}
