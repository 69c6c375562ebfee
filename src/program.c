/* Programs built from the embedded sources, one per options string, kept for the context's
 * life. A failed build is kept too, so it is reported again rather than retried. The table is
 * keyed by the packed variant, which maps one to one onto the canonical options string (the
 * options that are not the variant's, such as -DSTREAM, are the same for the whole context). */
#include "db.h"
#include "internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The program's kernels: the op's own, and for backward ops the weight-gradient reduction; the
 * split-row programs' two kernels (cl/split.cl, and the end of cl/backward.cl); the backward's
 * column-strip program's two (split 2: cl/strip.cl). */
static const char *kernel_name(clnorm_op op, int split, int which) {
  if (split == 2)
    return which == 0 ? "strip_sums" : "bwd_strip";
  if (split && clnorm__op_backward(op))
    return which == 0 ? "bwd_sums" : "bwd_split";
  if (split)
    return which == 0 ? "split_stats" : "split_norm";
  if (clnorm__op_backward(op))
    return which == 0 ? "norm_bwd" : "bwd_reduce";
  return clnorm__op_rms(op) ? "rmsnorm_fwd" : "layernorm_fwd";
}

unsigned clnorm__row_buffer(const clnorm_device_info *info, unsigned wg) {
  size_t floats = info->rbuf_bytes / (sizeof(float) * (wg ? wg : 1)) / 16 * 16;
  if (floats > CLNORM_ROW_BUFFER_SIZE)
    floats = CLNORM_ROW_BUFFER_SIZE;
  return floats < 256 ? 0 : (unsigned)floats;
}

/* The canonical options string: options in a fixed, sorted order. */
void clnorm__options_string(const clnorm_device_info *info, clnorm_op op, clnorm_dtype dtype,
                            const clnorm_variant *v, int split, char *buf, size_t size) {
  /* Sub-group built-ins are OpenCL C 2.0 features; everything else is OpenCL C 1.2. */
  const char *std = v->reduce == CLNORM_REDUCE_SUBGROUP ? info->subgroup_std : "CL1.2";
  const int add = op == CLNORM_OP_ADD_LAYERNORM || op == CLNORM_OP_ADD_RMSNORM;
  /* only where it is on, so that every other program's options (its cache key) stay as they were */
  const char *pf = clnorm__op_backward(op) && info->bwd_prefetch ? " -DBWD_PF=1" : "";
  char cap[40] = "";
  if (info->nv_maxrreg)
    snprintf(cap, sizeof cap, " -cl-nv-maxrregcount=%u", info->nv_maxrreg);
  snprintf(buf, size,
           "-cl-std=%s -DADD=%d -DDTYPE=%u -DHOLD=%u -DHWHALF=%d -DPREFETCH=%d -DPTX=%u -DRAW16=%d "
           "-DRBUF=%u "
           "-DREDUCE=%u -DRMS=%d -DRVEC=%u -DSPLIT=%d -DSTATS=%u -DSTREAM=%d -DTPR=%u "
           "-DUNALIGNED=%d -DVEC=%u -DWG=%u%s%s%s",
           std, add, (unsigned)dtype, v->hold, info->hw_half, info->prefetch, info->ptx_sm,
           info->raw16, clnorm__row_buffer(info, v->wg), (unsigned)v->reduce, clnorm__op_rms(op),
           info->reduce_vec, split, (unsigned)v->stats, info->stream_stores, v->tpr,
           info->unaligned, v->vec, v->wg, info->no_warnings ? " -w" : "", pf, cap);
}

static uint64_t hash_byte(uint64_t h, unsigned char c) { return clnorm__fnv1a(h, &c, 1); }

/* FNV-1a over what the compiler sees of a source, so that an edit of comments or of spacing
 * leaves tuned results valid: each comment is one space, as the C preprocessor has it (a `//`
 * comment goes on past a backslash at the end of its line), and runs of spaces and tabs are one
 * space; line ends (which end a directive) are kept, as are backslash-newlines (which do not),
 * while blank lines and spaces at a line's ends count for nothing. String and character literals
 * count as they are. */
uint64_t clnorm__source_hash(uint64_t h, const char *src, size_t len) {
  int space = 0, line_start = 1;
  for (size_t i = 0; i < len; i++) {
    const char c = src[i];
    if (c == '/' && i + 1 < len && src[i + 1] == '*') {
      const char *end = NULL;
      for (size_t j = i + 2; j + 1 < len; j++)
        if (src[j] == '*' && src[j + 1] == '/') {
          end = src + j + 2;
          break;
        }
      i = end ? (size_t)(end - src) - 1 : len;
      space = 1;
      continue;
    }
    if (c == '/' && i + 1 < len && src[i + 1] == '/') {
      size_t j = i + 2;
      while (j < len && !(src[j] == '\n' && src[j - 1] != '\\'))
        j++;
      i = j - 1; /* the line end itself is taken next */
      space = 1;
      continue;
    }
    if (c == ' ' || c == '\t' || c == '\r') {
      space = 1;
      continue;
    }
    if (c == '\n') {
      if (!line_start)
        h = hash_byte(h, '\n');
      line_start = 1;
      space = 0;
      continue;
    }
    if (space && !line_start)
      h = hash_byte(h, ' ');
    space = 0;
    line_start = 0;
    h = hash_byte(h, (unsigned char)c);
    if (c == '"' || c == '\'') /* a literal (inline PTX, #error), as it is, to its closing quote */
      for (i++; i < len; i++) {
        h = hash_byte(h, (unsigned char)src[i]);
        if (src[i] == '\\' && i + 1 < len)
          h = hash_byte(h, (unsigned char)src[++i]);
        else if (src[i] == c)
          break;
      }
  }
  return h;
}

/* A family's sources as its programs are built from them (build, below): cl/common.cl, then
 * the backward ops' backward.cl and strip.cl (a backward op of wide rows may run the column
 * strips) or the forward ops' forward.cl and split.cl (a forward op may run either). An edit of
 * one family's own file leaves the other's tuned results current. */
static uint64_t family_hash(int backward) {
  const char *parts[] = {clnorm__src_common, clnorm__src_forward, clnorm__src_split};
  size_t lengths[] = {clnorm__src_common_len, clnorm__src_forward_len, clnorm__src_split_len};
  if (backward) {
    parts[1] = clnorm__src_backward;
    lengths[1] = clnorm__src_backward_len;
    parts[2] = clnorm__src_strip;
    lengths[2] = clnorm__src_strip_len;
  }
  uint64_t h = CLNORM_FNV_BASIS;
  for (size_t i = 0; i < sizeof parts / sizeof parts[0]; i++) {
    h = clnorm__source_hash(h, parts[i], lengths[i]);
    h = hash_byte(h, '\n'); /* a file ends a line */
  }
  return h;
}

clnorm_kernel_hashes clnorm__kernel_hashes(void) {
  const clnorm_kernel_hashes hashes = {family_hash(0), family_hash(1)};
  return hashes;
}

uint64_t clnorm__kernel_hash_of(const clnorm_kernel_hashes *hashes, clnorm_op op) {
  return clnorm__op_backward(op) ? hashes->backward : hashes->forward;
}

static clnorm_program *find(clnorm_ctx *ctx, uint64_t key) {
  for (clnorm_program *p = ctx->programs[key % CLNORM_PROGRAM_BUCKETS]; p; p = p->next)
    if (p->key == key)
      return p;
  return NULL;
}

static char *build_log(cl_program program, cl_device_id device) {
  size_t size = 0;
  if (clGetProgramBuildInfo(program, device, CL_PROGRAM_BUILD_LOG, 0, NULL, &size) != CL_SUCCESS)
    return clnorm__strdup("(no build log)");
  char *log = malloc(size + 1);
  if (!log)
    return NULL;
  if (clGetProgramBuildInfo(program, device, CL_PROGRAM_BUILD_LOG, size, log, NULL) != CL_SUCCESS)
    size = 0;
  log[size] = '\0';
  return log;
}

size_t clnorm__kernel_max_wg(const clnorm_device_info *info, size_t reported,
                             const size_t compile[3]) {
  if (info->reqd_wg && compile[0] > reported && compile[0] <= info->max_wg && compile[1] == 1 &&
      compile[2] == 1)
    return compile[0];
  return reported;
}

/* The largest work-group of `kernel` (clnorm__kernel_max_wg). */
static cl_int kernel_wg(clnorm_ctx *ctx, cl_kernel kernel, size_t *wg) {
  size_t compile[3] = {0, 0, 0};
  cl_int err = clGetKernelWorkGroupInfo(kernel, ctx->device, CL_KERNEL_WORK_GROUP_SIZE, sizeof *wg,
                                        wg, NULL);
  if (err == CL_SUCCESS && ctx->info.reqd_wg)
    err = clGetKernelWorkGroupInfo(kernel, ctx->device, CL_KERNEL_COMPILE_WORK_GROUP_SIZE,
                                   sizeof compile, compile, NULL);
  if (err == CL_SUCCESS)
    *wg = clnorm__kernel_max_wg(&ctx->info, *wg, compile);
  return err;
}

/* The split program's second kernel (split_norm, bwd_split) takes the variant's work-group size
 * too. */
static int second_kernel_ok(clnorm_ctx *ctx, clnorm_program *p, clnorm_op op,
                            const clnorm_variant *v, char *text, size_t size) {
  cl_int err;
  size_t wg = 0;
  cl_kernel kernel = clCreateKernel(p->program, kernel_name(op, p->split, 1), &err);
  if (err == CL_SUCCESS) {
    err = kernel_wg(ctx, kernel, &wg);
    clReleaseKernel(kernel);
  }
  if (err != CL_SUCCESS)
    snprintf(text, size, "creating kernel %s failed: %s", kernel_name(op, p->split, 1),
             clnorm__cl_error_name(err));
  else if (wg < v->wg)
    snprintf(text, size,
             "the built kernel allows work-groups of at most %zu work-items (variant wants %u)", wg,
             v->wg);
  return err == CL_SUCCESS && wg >= v->wg;
}

/* Builds the program of one entry; fills status, log and kernel_wg. */
static void build(clnorm_ctx *ctx, clnorm_op op, clnorm_program *p, const clnorm_variant *v) {
  if (CLNORM_FAULT(ctx, CLNORM_FAULT_BUILD, p->key) != CL_SUCCESS) { /* tests: a failed build */
    p->status = CLNORM_E_BUILD;
    p->log = clnorm__strdup("clBuildProgram failed: injected by clnorm__fault_inject");
    return;
  }
  const char *op_src = clnorm__op_backward(op) ? clnorm__src_backward
                       : p->split              ? clnorm__src_split
                                               : clnorm__src_forward;
  const size_t op_len = clnorm__op_backward(op) ? clnorm__src_backward_len
                        : p->split              ? clnorm__src_split_len
                                                : clnorm__src_forward_len;
  /* the strip program: cl/strip.cl after cl/backward.cl, whose macros it uses */
  const char *sources[] = {clnorm__src_common, "\n", op_src, "\n", clnorm__src_strip};
  const size_t lengths[] = {clnorm__src_common_len, 1, op_len, 1, clnorm__src_strip_len};
  const cl_uint source_count = p->split == 2 ? 5 : 3;
  char text[512];
  cl_int err = CL_SUCCESS;
  /* A binary built by an earlier context or process skips the compiler (src/bincache.c). */
  const char *kernels[] = {kernel_name(op, p->split, 0), kernel_name(op, p->split, 1)};
  const size_t kernel_count = p->split || clnorm__op_backward(op) ? 2 : 1;
  p->program =
      clnorm__bincache_load(ctx, sources, lengths, source_count, p->options, kernels, kernel_count);
  const int cached = p->program != NULL;
  if (!cached)
    p->program = clCreateProgramWithSource(ctx->context, source_count, sources, lengths, &err);
  if (err != CL_SUCCESS) {
    snprintf(text, sizeof text, "clCreateProgramWithSource failed: %s", clnorm__cl_error_name(err));
    p->status = CLNORM_E_OPENCL;
    p->log = clnorm__strdup(text);
    p->program = NULL;
    return;
  }
  if (!cached)
    err = clBuildProgram(p->program, 1, &ctx->device, p->options, NULL, NULL);
  if (err != CL_SUCCESS) {
    char *log = build_log(p->program, ctx->device);
    const size_t n = (log ? strlen(log) : 0) + 256;
    p->log = malloc(n);
    if (p->log)
      snprintf(p->log, n, "clBuildProgram(\"%s\") failed: %s\n%s", p->options,
               clnorm__cl_error_name(err), log ? log : "");
    free(log);
    p->status = err == CL_BUILD_PROGRAM_FAILURE || err == CL_INVALID_BUILD_OPTIONS
                    ? CLNORM_E_BUILD
                    : CLNORM_E_OPENCL;
    clReleaseProgram(p->program);
    p->program = NULL;
    return;
  }
  if (!cached)
    clnorm__bincache_store(ctx, sources, lengths, source_count, p->options, p->program);
  cl_kernel kernel = clCreateKernel(p->program, kernel_name(op, p->split, 0), &err);
  if (err == CL_SUCCESS)
    err = kernel_wg(ctx, kernel, &p->kernel_wg);
  if (err != CL_SUCCESS) {
    snprintf(text, sizeof text, "creating kernel %s failed: %s", kernel_name(op, p->split, 0),
             clnorm__cl_error_name(err));
    p->status = CLNORM_E_OPENCL;
    p->log = clnorm__strdup(text);
  } else if (p->kernel_wg < v->wg) {
    snprintf(text, sizeof text,
             "the built kernel allows work-groups of at most %zu work-items (variant wants %u)",
             p->kernel_wg, v->wg);
    p->status = CLNORM_E_UNSUPPORTED;
    p->log = clnorm__strdup(text);
  } else if (p->split && !second_kernel_ok(ctx, p, op, v, text, sizeof text)) {
    p->status = CLNORM_E_UNSUPPORTED;
    p->log = clnorm__strdup(text);
  } else {
    p->status = CLNORM_OK;
    p->free_kernels[0] = malloc(4 * sizeof(cl_kernel));
    if (p->free_kernels[0]) {
      p->free_cap[0] = 4;
      p->free_kernels[0][p->free_count[0]++] = kernel;
      kernel = NULL;
    }
  }
  if (kernel)
    clReleaseKernel(kernel);
}

clnorm_status clnorm__program_get(clnorm_ctx *ctx, clnorm_op op, clnorm_dtype dtype,
                                  const clnorm_variant *variant, int split, clnorm_program **out) {
  /* The split kernels re-read the row and take Welford statistics: hold and stats do not
   * apply to them. */
  clnorm_variant normalized = *variant;
  if (split) {
    normalized.hold = 0;
    normalized.stats = CLNORM_STATS_WELFORD;
  }
  const clnorm_variant *v = &normalized;
  const uint64_t key = clnorm__variant_key(op, dtype, v) | (uint64_t)split << 40;
  clnorm__mutex_lock(&ctx->lock);
  clnorm_program *p = find(ctx, key);
  if (!p) {
    /* Claim the entry, then build without holding the lock: other programs build and run
     * meanwhile, and threads wanting this one wait for it. */
    char options[CLNORM_PROGRAM_OPTIONS_MAX];
    clnorm__options_string(&ctx->info, op, dtype, v, split, options, sizeof options);
    p = calloc(1, sizeof *p);
    if (p)
      p->options = clnorm__strdup(options);
    if (!p || !p->options) {
      free(p);
      clnorm__mutex_unlock(&ctx->lock);
      return clnorm__fail(ctx, CLNORM_E_NO_MEMORY, "out of host memory building a program");
    }
    p->key = key;
    p->split = split;
    p->next = ctx->programs[key % CLNORM_PROGRAM_BUCKETS];
    ctx->programs[key % CLNORM_PROGRAM_BUCKETS] = p;
    clnorm__mutex_unlock(&ctx->lock);
    build(ctx, op, p, v);
    clnorm__mutex_lock(&ctx->lock);
    p->ready = 1;
    clnorm__cond_broadcast(&ctx->built);
  }
  while (!p->ready)
    clnorm__cond_wait(&ctx->built, &ctx->lock);
  clnorm__mutex_unlock(&ctx->lock);
  if (p->status != CLNORM_OK)
    return clnorm__fail(ctx, p->status, "%s", p->log ? p->log : "program unavailable");
  *out = p;
  return CLNORM_OK;
}

clnorm_status clnorm__kernel_take(clnorm_ctx *ctx, clnorm_program *prog, clnorm_op op, int which,
                                  cl_kernel *out) {
  clnorm__mutex_lock(&ctx->lock);
  if (prog->free_count[which] > 0) {
    *out = prog->free_kernels[which][--prog->free_count[which]];
    clnorm__mutex_unlock(&ctx->lock);
    return CLNORM_OK;
  }
  clnorm__mutex_unlock(&ctx->lock);
  cl_int err;
  const char *name = kernel_name(op, prog->split, which);
  *out = clCreateKernel(prog->program, name, &err);
  RETURN_IF(ctx, err != CL_SUCCESS,
            err == CL_OUT_OF_HOST_MEMORY ? CLNORM_E_NO_MEMORY : CLNORM_E_OPENCL,
            "clCreateKernel(%s) failed: %s", name, clnorm__cl_error_name(err));
  return CLNORM_OK;
}

void clnorm__kernel_give(clnorm_ctx *ctx, clnorm_program *prog, int which, cl_kernel kernel) {
  clnorm__mutex_lock(&ctx->lock);
  if (prog->free_count[which] == prog->free_cap[which]) {
    const size_t cap = prog->free_cap[which] ? 2 * prog->free_cap[which] : 4;
    cl_kernel *grown = realloc(prog->free_kernels[which], cap * sizeof *grown);
    if (!grown) {
      clnorm__mutex_unlock(&ctx->lock);
      clReleaseKernel(kernel);
      return;
    }
    prog->free_kernels[which] = grown;
    prog->free_cap[which] = cap;
  }
  prog->free_kernels[which][prog->free_count[which]++] = kernel;
  clnorm__mutex_unlock(&ctx->lock);
}

void clnorm__programs_free(clnorm_ctx *ctx) {
  for (size_t b = 0; b < CLNORM_PROGRAM_BUCKETS; b++) {
    clnorm_program *p = ctx->programs[b];
    while (p) {
      clnorm_program *next = p->next;
      for (int w = 0; w < 2; w++) {
        for (size_t i = 0; i < p->free_count[w]; i++)
          clReleaseKernel(p->free_kernels[w][i]);
        free(p->free_kernels[w]);
      }
      if (p->program)
        clReleaseProgram(p->program);
      free(p->options);
      free(p->log);
      free(p);
      p = next;
    }
    ctx->programs[b] = NULL;
  }
}
