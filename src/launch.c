/* The launch plans of a call with a chosen variant: its kernels' arguments, grid sizes, scratch
 * buffers, and the whole-row, split-row and backward paths. */
#include "internal.h"
#include "kernel_flags.h"

#include <stdint.h>
#include <stdio.h>

/* Argument setters: a cl_mem (NULL allowed), and a matrix as buffer, offset and stride. */
static cl_int arg_mem(cl_kernel k, cl_uint *i, const cl_mem *m) {
  return clSetKernelArg(k, (*i)++, sizeof(cl_mem), *m ? m : NULL);
}

static cl_int arg_rows(cl_kernel k, cl_uint *i, const clnorm_rows *m, size_t cols) {
  const cl_ulong off = m->offset, stride = m->stride ? m->stride : cols;
  cl_int err = arg_mem(k, i, &m->buf);
  err |= clSetKernelArg(k, (*i)++, sizeof off, &off);
  err |= clSetKernelArg(k, (*i)++, sizeof stride, &stride);
  return err;
}

/* The call's shape: rows (a cl_ulong) and cols (a cl_uint), as every kernel takes them. */
static cl_int arg_shape(cl_kernel k, cl_uint *i, const clnorm_call *call) {
  const cl_ulong rows = call->rows;
  const cl_uint cols = (cl_uint)call->cols;
  const cl_int err = clSetKernelArg(k, (*i)++, sizeof rows, &rows);
  return err | clSetKernelArg(k, (*i)++, sizeof cols, &cols);
}

/* Bits of the kernels' `flags` argument (cl/common.cl): which optional buffers were given. */
static cl_uint call_flags(const clnorm_call *call) {
  return (call->gamma ? CLNORM_HAS_GAMMA : 0u) | (call->beta ? CLNORM_HAS_BETA : 0u) |
         (call->mean ? CLNORM_HAS_MEAN : 0u) | (call->rstd ? CLNORM_HAS_RSTD : 0u) |
         (call->sum_out.buf ? CLNORM_HAS_SUM : 0u) | (call->dgamma ? CLNORM_HAS_DGAMMA : 0u) |
         (call->dbeta ? CLNORM_HAS_DBETA : 0u);
}

/* The arguments of a kernel of the call's op (backward: `partial` and `groups` last); *next, when
 * not NULL, receives the index after them. */
clnorm_status clnorm__set_args(clnorm_ctx *ctx, cl_kernel k, const clnorm_call *call,
                               cl_mem partial, cl_uint groups, cl_uint *next) {
  const cl_uint flags = call_flags(call);
  cl_uint i = 0;
  cl_int err;
  if (clnorm__op_backward(call->op)) {
    err = arg_rows(k, &i, &call->dy, call->cols);
    err |= arg_rows(k, &i, &call->x, call->cols);
    err |= arg_mem(k, &i, &call->gamma);
    err |= arg_mem(k, &i, &call->mean);
    err |= arg_mem(k, &i, &call->rstd);
    err |= arg_rows(k, &i, &call->y, call->cols);
    err |= arg_mem(k, &i, &partial);
    err |= arg_shape(k, &i, call);
    err |= clSetKernelArg(k, i++, sizeof flags, &flags);
    err |= clSetKernelArg(k, i++, sizeof groups, &groups);
  } else {
    const int ln = !clnorm__op_rms(call->op);
    err = arg_rows(k, &i, &call->x, call->cols);
    err |= arg_rows(k, &i, &call->residual, call->cols);
    err |= arg_rows(k, &i, &call->sum_out, call->cols);
    err |= arg_mem(k, &i, &call->gamma);
    if (ln)
      err |= arg_mem(k, &i, &call->beta);
    err |= arg_rows(k, &i, &call->y, call->cols);
    if (ln)
      err |= arg_mem(k, &i, &call->mean);
    err |= arg_mem(k, &i, &call->rstd);
    err |= arg_shape(k, &i, call);
    err |= clSetKernelArg(k, i++, sizeof call->eps, &call->eps);
    err |= clSetKernelArg(k, i++, sizeof flags, &flags);
  }
  RETURN_IF(ctx, err != CL_SUCCESS, CLNORM_E_OPENCL, "clSetKernelArg failed");
  if (next)
    *next = i;
  return CLNORM_OK;
}

/* clEnqueueNDRangeKernel, 1-D, unless a test injected its failure. */
static cl_int launch(clnorm_ctx *ctx, const clnorm_program *prog, cl_command_queue queue,
                     cl_kernel kernel, size_t global, const size_t *local, cl_uint num_wait,
                     const cl_event *wait_list, cl_event *event) {
  const cl_int injected = CLNORM_FAULT(ctx, CLNORM_FAULT_ENQUEUE, prog->key);
  if (injected != CL_SUCCESS)
    return injected;
  return clEnqueueNDRangeKernel(queue, kernel, 1, NULL, &global, local, num_wait, wait_list, event);
}

static clnorm_status launch_failed(clnorm_ctx *ctx, clnorm_attempt *a, cl_int err, const char *what,
                                   const clnorm_program *prog, size_t global, size_t local) {
  a->err = err;
  a->key = prog->key;
  const char *options = prog->options;
  return clnorm__fail(ctx,
                      err == CL_MEM_OBJECT_ALLOCATION_FAILURE || err == CL_OUT_OF_HOST_MEMORY
                          ? CLNORM_E_NO_MEMORY
                      : err == CL_INVALID_EVENT_WAIT_LIST ? CLNORM_E_INVALID_ARG
                                                          : CLNORM_E_OPENCL,
                      "clEnqueueNDRangeKernel(%s %s, global %zu, local %zu) failed: %s (%d)", what,
                      options, global, local, clnorm__cl_error_name(err), (int)err);
}

/* A call's scratch buffer, the one the context keeps for `queue` where it can (src/scratch.c),
 * unless a test injected an allocation failure. *slot: for clnorm__scratch_give. */
static cl_mem scratch(clnorm_ctx *ctx, const clnorm_program *prog, cl_command_queue queue,
                      size_t bytes, int *slot, cl_int *err) {
  *slot = -1;
  *err = CLNORM_FAULT(ctx, CLNORM_FAULT_ALLOC, prog->key);
  return *err == CL_SUCCESS ? clnorm__scratch_take(ctx, queue, bytes, slot, err) : NULL;
}

/* CL_OUT_OF_RESOURCES from clCreateBuffer is the device failing to allocate, too. */
static clnorm_status scratch_failed(clnorm_ctx *ctx, cl_int err, const char *what, size_t bytes) {
  return clnorm__fail(ctx,
                      err == CL_MEM_OBJECT_ALLOCATION_FAILURE || err == CL_OUT_OF_HOST_MEMORY ||
                              err == CL_OUT_OF_RESOURCES || err == CL_INVALID_BUFFER_SIZE
                          ? CLNORM_E_NO_MEMORY
                          : CLNORM_E_OPENCL,
                      "allocating %zu bytes of %s scratch failed: %s (%d)", bytes, what,
                      clnorm__cl_error_name(err), (int)err);
}

/* The persistent grid of the backward kernel (and the fixed grid of every kernel on PoCL
 * before 6): enough groups to fill the device, from the variant and the device alone. */
static size_t device_groups(const clnorm_ctx *ctx, const clnorm_variant *v) {
  const size_t groups = (size_t)ctx->info.compute_units * clnorm__groups_per_cu(v->wg);
  return groups ? groups : 1;
}

/* The groups of a launch: one per block of rows, or with a fixed grid (ctx->info.fixed_grid)
 * device_groups() whatever the call; the kernels stride over the blocks. */
size_t clnorm__launch_groups(const clnorm_ctx *ctx, const clnorm_call *call,
                             const clnorm_variant *v) {
  const size_t rpg = v->wg / v->tpr;
  return ctx->info.fixed_grid ? device_groups(ctx, v) : (call->rows + rpg - 1) / rpg;
}

/* Groups that take part in the backward kernel: with weight gradients or on a CPU, a persistent
 * grid whose every row slot keeps its sums, small enough that the partial sums (2 * groups *
 * rows-per-group * cols floats) stay under 256 MiB; otherwise one group per block of rows. Never
 * more than clnorm__launch_groups(). On a CPU the grid fills the device (device_groups). On a GPU
 * every partial row is written once and read once more, traffic that grows with the grid: it
 * holds 2 groups per compute unit whatever their size, not the forward's up to 8 (H100, 1 to 8
 * swept: 2 the fastest or within 5% on 24 of 32 backward shapes; docs/PERFORMANCE.md);
 * CLNORM_BWD_GROUPS_PER_CU overrides. */
static size_t backward_groups(const clnorm_ctx *ctx, const clnorm_call *call,
                              const clnorm_variant *v) {
  const size_t rpg = v->wg / v->tpr;
  const size_t blocks = (call->rows + rpg - 1) / rpg;
  size_t groups = clnorm__launch_groups(ctx, call, v);
  const int cpu = (ctx->info.type & CL_DEVICE_TYPE_CPU) != 0;
  /* a CPU runs a few groups at a time and pays for each one it starts (the heuristic gives it
   * one row per group): the persistent grid whatever the call */
  if (call->dgamma || call->dbeta || cpu) {
    size_t full = device_groups(ctx, v);
    if (!cpu) {
      size_t per_cu = ctx->info.bwd_groups_per_cu;
      if (!per_cu)
        per_cu = 2;
      full = (size_t)(ctx->info.compute_units ? ctx->info.compute_units : 1) * per_cu;
    }
    const size_t mem_cap = ((size_t)256 << 20) / (2 * sizeof(float) * rpg * call->cols);
    groups = groups < full ? groups : full;
    groups = groups < mem_cap ? groups : mem_cap;
  }
  groups = groups < blocks ? groups : blocks;
  groups = groups < UINT32_MAX ? groups : UINT32_MAX; /* the kernel strides over the rest */
  return groups ? groups : 1;
}

/* What a two-kernel launch holds until it returns: the kernels (0 and 1 of the program), the
 * first one's event and the call's scratch buffer (OpenCL frees it when the kernels are done). */
typedef struct two_pass {
  cl_kernel first, second;
  cl_event first_done;
  cl_mem partial;
  int slot; /* the context's scratch slot (clnorm__scratch_give), -1: none */
} two_pass;

static void two_pass_release(clnorm_ctx *ctx, clnorm_program *prog, two_pass *t) {
  if (t->first_done)
    clReleaseEvent(t->first_done);
  if (t->first)
    clnorm__kernel_give(ctx, prog, 0, t->first);
  if (t->second)
    clnorm__kernel_give(ctx, prog, 1, t->second);
  if (t->partial)
    clReleaseMemObject(t->partial);
  clnorm__scratch_give(ctx, t->slot);
}

/* The start of a split-row call: its scratch buffer of `bytes` (when that fails, nothing is
 * enqueued) and both kernels. */
static clnorm_status two_pass_begin(clnorm_ctx *ctx, clnorm_program *prog, cl_command_queue queue,
                                    const clnorm_call *call, size_t bytes, two_pass *t) {
  cl_int err;
  *t = (two_pass){NULL, NULL, NULL, NULL, -1};
  t->partial = scratch(ctx, prog, queue, bytes, &t->slot, &err);
  if (err != CL_SUCCESS)
    return scratch_failed(ctx, err, "split-row", bytes);
  clnorm_status st = clnorm__kernel_take(ctx, prog, call->op, 0, &t->first);
  if (st == CLNORM_OK)
    st = clnorm__kernel_take(ctx, prog, call->op, 1, &t->second);
  return st;
}

/* Launches the second kernel of a split-row call after the first. When it fails, the first stays
 * enqueued: it writes the scratch buffer only. */
static clnorm_status launch_second(clnorm_ctx *ctx, clnorm_program *prog, cl_command_queue queue,
                                   two_pass *t, const char *name, size_t global, size_t local,
                                   cl_event *event, clnorm_attempt *a) {
  const cl_int err = launch(ctx, prog, queue, t->second, global, &local, 1, &t->first_done, event);
  if (err != CL_SUCCESS)
    return launch_failed(ctx, a, err, name, prog, global, local);
  if (a->want_first && clRetainEvent(t->first_done) == CL_SUCCESS)
    a->first = t->first_done;
  return CLNORM_OK;
}

/* bwd_reduce (the main backward program's second kernel, `k`) over `parts` partial rows in
 * `partial`, after *after. GPUs (reduce_vec 1): a group of 256 work-items (or the device's largest
 * power of two below: reduce_local) per tile of 8 columns, its lanes over the partial rows
 * (cl/backward.cl). CPUs: a work-item per chunk of 16 columns (and the columns past the last whole
 * chunk), 4 work-items per group: a CPU pays for every group it starts and runs each as a loop. A
 * fixed grid takes 64 groups per compute unit and strides. When it fails, a->enqueued takes
 * *after (the kernel before writes dx: a retry must wait for it) and *after is NULL. */
static clnorm_status enqueue_reduce(clnorm_ctx *ctx, cl_command_queue queue, clnorm_program *prog,
                                    cl_kernel k, const clnorm_call *call, cl_mem partial,
                                    cl_uint parts, cl_event *after, cl_event *event,
                                    clnorm_attempt *a) {
  const cl_uint cols = (cl_uint)call->cols, flags = call_flags(call);
  cl_uint i = 0;
  cl_int err = arg_mem(k, &i, &partial);
  err |= clSetKernelArg(k, i++, sizeof parts, &parts);
  err |= clSetKernelArg(k, i++, sizeof cols, &cols);
  err |= arg_mem(k, &i, &call->dgamma);
  err |= arg_mem(k, &i, &call->dbeta);
  err |= clSetKernelArg(k, i++, sizeof flags, &flags);
  clnorm_status st = CLNORM_OK;
  if (err != CL_SUCCESS)
    st = clnorm__fail(ctx, CLNORM_E_OPENCL, "clSetKernelArg(bwd_reduce) failed");
  const size_t rvec = ctx->info.reduce_vec;
  size_t local = ctx->info.reduce_local, items = call->cols / rvec > 0 ? call->cols / rvec : 1;
  if (rvec == 1)
    items = (call->cols + 7) / 8 * local; /* tiles of 8 columns, a group each */
  const size_t global = ctx->info.fixed_grid
                            ? local * 64 * (ctx->info.compute_units ? ctx->info.compute_units : 1)
                            : (items + local - 1) / local * local;
  if (st == CLNORM_OK) {
    err = launch(ctx, prog, queue, k, global, local <= ctx->info.max_wg ? &local : NULL, 1, after,
                 event);
    if (err == CL_SUCCESS)
      return CLNORM_OK;
    st = launch_failed(ctx, a, err, "bwd_reduce", prog, global, local);
  }
  a->enqueued = *after;
  *after = NULL;
  return st;
}

/* The backward pass: norm_bwd, then (with weight gradients) bwd_reduce over the partial sums in
 * a scratch buffer of the call's own (released here; OpenCL frees it when the kernels are done).
 * *event completes when both have. When bwd_reduce fails to launch, a->enqueued is norm_bwd's
 * event: it writes dx, so a retry must wait for it. */
static clnorm_status enqueue_backward(clnorm_ctx *ctx, cl_command_queue queue,
                                      const clnorm_call *call, const clnorm_variant *v,
                                      clnorm_program *prog, cl_uint num_wait,
                                      const cl_event *wait_list, cl_event *event,
                                      clnorm_attempt *a) {
  const int want_w = call->dgamma || call->dbeta;
  const size_t groups = backward_groups(ctx, call, v);
  const size_t parts = groups * (v->wg / v->tpr);
  RETURN_IF(ctx, want_w && parts > UINT32_MAX, CLNORM_E_UNSUPPORTED, "too many partial rows");
  cl_mem partial = NULL;
  int slot = -1;
  cl_int err;
  if (want_w) {
    /* Before any kernel: when it fails, nothing of the call is enqueued. */
    partial = scratch(ctx, prog, queue, 2 * sizeof(float) * parts * call->cols, &slot, &err);
    if (err != CL_SUCCESS)
      return scratch_failed(ctx, err, "backward", 2 * sizeof(float) * parts * call->cols);
  }
  cl_kernel main_k = NULL, reduce_k = NULL;
  cl_event main_done = NULL;
  clnorm_status st = clnorm__kernel_take(ctx, prog, call->op, 0, &main_k);
  if (st == CLNORM_OK)
    st = clnorm__set_args(ctx, main_k, call, partial, (cl_uint)groups, NULL);
  if (st == CLNORM_OK) {
    const size_t local = v->wg;
    const size_t global =
        (ctx->info.fixed_grid ? clnorm__launch_groups(ctx, call, v) : groups) * v->wg;
    err = launch(ctx, prog, queue, main_k, global, &local, num_wait, wait_list,
                 want_w ? &main_done : event);
    if (err != CL_SUCCESS)
      st = launch_failed(ctx, a, err, "norm_bwd", prog, global, local);
  }
  if (st == CLNORM_OK && want_w) {
    st = clnorm__kernel_take(ctx, prog, call->op, 1, &reduce_k);
    if (st == CLNORM_OK)
      st = enqueue_reduce(ctx, queue, prog, reduce_k, call, partial, (cl_uint)parts, &main_done,
                          event, a);
    if (st == CLNORM_OK && a->want_first && clRetainEvent(main_done) == CL_SUCCESS)
      a->first = main_done;
  }
  two_pass t = {main_k, reduce_k, main_done, partial, slot};
  two_pass_release(ctx, prog, &t);
  return st;
}

/* A forward call with each row split over `splits` work-groups (cl/split.cl): split_stats
 * writes 4 floats of partial statistics per chunk into a scratch buffer of the call's own, then
 * split_norm merges them and normalizes. *event completes when both kernels have. */
static clnorm_status enqueue_split(clnorm_ctx *ctx, cl_command_queue queue, const clnorm_call *call,
                                   const clnorm_variant *v, clnorm_program *prog, unsigned splits,
                                   cl_uint num_wait, const cl_event *wait_list, cl_event *event,
                                   clnorm_attempt *a) {
  const size_t units = call->rows * splits;
  /* chunks start at multiples of 16 elements: aligned for every vector width */
  const size_t chunk = ((call->cols + splits - 1) / splits + 15) / 16 * 16;
  const cl_uint chunk32 = (cl_uint)chunk, splits32 = splits;
  const cl_uint flags = call_flags(call);
  cl_int err;
  two_pass t;
  clnorm_status st = two_pass_begin(ctx, prog, queue, call, 4 * sizeof(float) * units, &t);
  cl_kernel stats_k = t.first, norm_k = t.second;
  const cl_mem partial = t.partial;
  if (st == CLNORM_OK) {
    cl_uint i = 0;
    err = arg_rows(stats_k, &i, &call->x, call->cols);
    err |= arg_rows(stats_k, &i, &call->residual, call->cols);
    err |= arg_mem(stats_k, &i, &partial);
    err |= arg_shape(stats_k, &i, call);
    err |= clSetKernelArg(stats_k, i++, sizeof chunk32, &chunk32);
    err |= clSetKernelArg(stats_k, i++, sizeof splits32, &splits32);
    i = 0;
    err |= arg_rows(norm_k, &i, &call->x, call->cols);
    err |= arg_rows(norm_k, &i, &call->residual, call->cols);
    err |= arg_rows(norm_k, &i, &call->sum_out, call->cols);
    err |= arg_mem(norm_k, &i, &call->gamma);
    err |= arg_mem(norm_k, &i, &call->beta);
    err |= arg_rows(norm_k, &i, &call->y, call->cols);
    err |= arg_mem(norm_k, &i, &call->mean);
    err |= arg_mem(norm_k, &i, &call->rstd);
    err |= arg_mem(norm_k, &i, &partial);
    err |= arg_shape(norm_k, &i, call);
    err |= clSetKernelArg(norm_k, i++, sizeof call->eps, &call->eps);
    err |= clSetKernelArg(norm_k, i++, sizeof flags, &flags);
    err |= clSetKernelArg(norm_k, i++, sizeof chunk32, &chunk32);
    err |= clSetKernelArg(norm_k, i++, sizeof splits32, &splits32);
    if (err != CL_SUCCESS)
      st = clnorm__fail(ctx, CLNORM_E_OPENCL, "clSetKernelArg(split kernels) failed");
  }
  const size_t local = v->wg;
  const size_t global = (ctx->info.fixed_grid ? device_groups(ctx, v) : units) * v->wg;
  if (st == CLNORM_OK) {
    err = launch(ctx, prog, queue, stats_k, global, &local, num_wait, wait_list, &t.first_done);
    if (err != CL_SUCCESS)
      st = launch_failed(ctx, a, err, "split_stats", prog, global, local);
  }
  if (st == CLNORM_OK)
    st = launch_second(ctx, prog, queue, &t, "split_norm", global, local, event, a);
  two_pass_release(ctx, prog, &t);
  return st;
}

/* A backward call with each row split over `splits` groups (the end of cl/backward.cl): bwd_sums
 * writes the 2 partial sums of each chunk into a scratch buffer of the call's own, then
 * bwd_split writes dx and the weight gradients, a tile of columns at a time. *event completes
 * when both kernels have. */
static clnorm_status enqueue_bwd_split(clnorm_ctx *ctx, cl_command_queue queue,
                                       const clnorm_call *call, const clnorm_variant *v,
                                       clnorm_program *prog, unsigned splits, cl_uint num_wait,
                                       const cl_event *wait_list, cl_event *event,
                                       clnorm_attempt *a) {
  const size_t units = call->rows * splits;
  cl_int err;
  two_pass t;
  clnorm_status st = two_pass_begin(ctx, prog, queue, call, 2 * sizeof(float) * units, &t);
  cl_kernel sums_k = t.first, split_k = t.second;
  const cl_mem partial = t.partial;
  cl_uint i = 0;
  if (st == CLNORM_OK)
    st = clnorm__set_args(ctx, sums_k, call, partial, splits, NULL);
  if (st == CLNORM_OK)
    st = clnorm__set_args(ctx, split_k, call, partial, splits, &i);
  if (st == CLNORM_OK) {
    err = arg_mem(split_k, &i, &call->dgamma);
    err |= arg_mem(split_k, &i, &call->dbeta);
    if (err != CL_SUCCESS)
      st = clnorm__fail(ctx, CLNORM_E_OPENCL, "clSetKernelArg(bwd_split) failed");
  }
  const size_t tiles = clnorm__bwd_tiles(v, call->cols);
  const size_t local = v->wg;
  const size_t fixed = device_groups(ctx, v);
  if (st == CLNORM_OK) {
    const size_t global = (ctx->info.fixed_grid ? fixed : units) * v->wg;
    err = launch(ctx, prog, queue, sums_k, global, &local, num_wait, wait_list, &t.first_done);
    if (err != CL_SUCCESS)
      st = launch_failed(ctx, a, err, "bwd_sums", prog, global, local);
  }
  if (st == CLNORM_OK)
    st = launch_second(ctx, prog, queue, &t, "bwd_split",
                       (ctx->info.fixed_grid ? fixed : tiles) * v->wg, local, event, a);
  two_pass_release(ctx, prog, &t);
  return st;
}

/* A backward call in column strips (cl/strip.cl): strip_sums writes each row's two sums, bwd_strip
 * dx and the weight partial rows of `ranges` row ranges, then (with weight gradients) the main
 * program's bwd_reduce adds those, all in one scratch buffer of the call's own. *event completes
 * when the last kernel has. */
static clnorm_status enqueue_bwd_strip(clnorm_ctx *ctx, cl_command_queue queue,
                                       const clnorm_call *call, const clnorm_variant *v,
                                       clnorm_program *prog, clnorm_program *strip_prog,
                                       unsigned ranges, cl_uint num_wait, const cl_event *wait_list,
                                       cl_event *event, clnorm_attempt *a) {
  const int want_w = call->dgamma || call->dbeta;
  /* the weight partial rows, then the rows' sums (cl/strip.cl) */
  const size_t bytes = sizeof(float) * 2 * ((size_t)ranges * call->cols + call->rows);
  cl_int err;
  two_pass t;
  clnorm_status st = two_pass_begin(ctx, strip_prog, queue, call, bytes, &t);
  cl_kernel reduce_k = NULL;
  cl_event strip_done = NULL;
  if (st == CLNORM_OK && want_w)
    st = clnorm__kernel_take(ctx, prog, call->op, 1, &reduce_k);
  if (st == CLNORM_OK)
    st = clnorm__set_args(ctx, t.first, call, t.partial, ranges, NULL);
  if (st == CLNORM_OK)
    st = clnorm__set_args(ctx, t.second, call, t.partial, ranges, NULL);
  const size_t local = v->wg;
  const size_t fixed = device_groups(ctx, v);
  if (st == CLNORM_OK) {
    const size_t global = (ctx->info.fixed_grid ? fixed : call->rows) * v->wg;
    err =
        launch(ctx, strip_prog, queue, t.first, global, &local, num_wait, wait_list, &t.first_done);
    if (err != CL_SUCCESS)
      st = launch_failed(ctx, a, err, "strip_sums", strip_prog, global, local);
  }
  if (st == CLNORM_OK) {
    const size_t units = clnorm__bwd_tiles(v, call->cols) * ranges;
    const size_t global = (ctx->info.fixed_grid ? fixed : units) * v->wg;
    err = launch(ctx, strip_prog, queue, t.second, global, &local, 1, &t.first_done,
                 want_w ? &strip_done : event);
    if (err != CL_SUCCESS)
      st = launch_failed(ctx, a, err, "bwd_strip", strip_prog, global, local);
  }
  if (st == CLNORM_OK && want_w)
    st = enqueue_reduce(ctx, queue, prog, reduce_k, call, t.partial, ranges, &strip_done, event, a);
  if (st == CLNORM_OK && a->want_first && clRetainEvent(t.first_done) == CL_SUCCESS)
    a->first = t.first_done;
  if (strip_done)
    clReleaseEvent(strip_done);
  if (reduce_k)
    clnorm__kernel_give(ctx, prog, 1, reduce_k);
  two_pass_release(ctx, strip_prog, &t);
  return st;
}

/* The program of a call's other path (split 1: the split rows; 2: the column strips), refused
 * where its kernels failed at launch earlier in the call's row class. */
static clnorm_status other_program(clnorm_ctx *ctx, const clnorm_call *call,
                                   const clnorm_variant *v, int split, clnorm_program **out) {
  clnorm_status st = clnorm__program_get(ctx, call->op, call->dtype, v, split, out);
  cl_int err;
  if (st == CLNORM_OK && clnorm__unusable_find(ctx, call, (*out)->key, &err))
    st = clnorm__fail(ctx, CLNORM_E_UNSUPPORTED,
                      "they failed at launch earlier with %s (%d) in this row class",
                      clnorm__cl_error_name(err), (int)err);
  return st;
}

/* After the other path's attempt (`enqueued`: its program was there and its kernels were
 * enqueued): whether the call goes on with the whole-row kernels, which compute the same result,
 * one group per row (the forward's with no scratch). So they do where the other path's program
 * does not build or run here, or it ran out of device memory for its scratch (or at launch: no
 * output was written); said at WARN. */
static int rows_run_whole(clnorm_ctx *ctx, clnorm_attempt *a, clnorm_status st, int enqueued,
                          const char *what) {
  if (enqueued ? st != CLNORM_E_NO_MEMORY : st != CLNORM_E_UNSUPPORTED && st != CLNORM_E_BUILD)
    return 0;
  a->err = CL_SUCCESS;
  clnorm__log(CLNORM_LOG_WARN, "%s kernels unavailable, rows run whole: %s", what,
              clnorm_ctx_errmsg(ctx));
  clnorm__clear_error(ctx);
  return 1;
}

/* Enqueues the call with the chosen variant. A launch failure is described in *a. */
clnorm_status clnorm__enqueue(clnorm_ctx *ctx, cl_command_queue queue, const clnorm_call *call,
                              const clnorm_variant *v, clnorm_program *prog, cl_uint num_wait,
                              const cl_event *wait_list, cl_event *event, clnorm_attempt *a) {
  const unsigned ranges = clnorm__bwd_strip_ranges(&ctx->info, call, v);
  if (ranges > 0) {
    clnorm_program *strip_prog;
    clnorm_status st = other_program(ctx, call, v, 2, &strip_prog);
    const int found = st == CLNORM_OK;
    if (found)
      st = enqueue_bwd_strip(ctx, queue, call, v, prog, strip_prog, ranges, num_wait, wait_list,
                             event, a);
    if (!rows_run_whole(ctx, a, st, found, "column-strip"))
      return st;
  }
  const unsigned splits = ranges > 0 ? 1 : clnorm__split_count(&ctx->info, call, v);
  if (splits > 1) {
    clnorm_program *split_prog;
    clnorm_status st = other_program(ctx, call, v, 1, &split_prog);
    const int found = st == CLNORM_OK;
    if (found)
      st = clnorm__op_backward(call->op) ? enqueue_bwd_split(ctx, queue, call, v, split_prog,
                                                             splits, num_wait, wait_list, event, a)
                                         : enqueue_split(ctx, queue, call, v, split_prog, splits,
                                                         num_wait, wait_list, event, a);
    if (!rows_run_whole(ctx, a, st, found, "split-row"))
      return st;
  }
  if (clnorm__op_backward(call->op))
    return enqueue_backward(ctx, queue, call, v, prog, num_wait, wait_list, event, a);
  cl_kernel kernel;
  clnorm_status st = clnorm__kernel_take(ctx, prog, call->op, 0, &kernel);
  if (st != CLNORM_OK)
    return st;
  st = clnorm__set_args(ctx, kernel, call, NULL, 0, NULL);
  if (st == CLNORM_OK) {
    const size_t local = v->wg, global = clnorm__launch_groups(ctx, call, v) * v->wg;
    const cl_int err = launch(ctx, prog, queue, kernel, global, &local, num_wait, wait_list, event);
    if (err != CL_SUCCESS)
      st = launch_failed(ctx, a, err, clnorm_op_name(call->op), prog, global, local);
  }
  clnorm__kernel_give(ctx, prog, 0, kernel);
  return st;
}

/* rows == 0: nothing to normalize; the weight gradients of a backward call are sums over no
 * rows, so they are zeroed. *event completes after the wait list and the zeroing. */
clnorm_status clnorm__enqueue_no_rows(clnorm_ctx *ctx, cl_command_queue queue,
                                      const clnorm_call *call, cl_uint num_wait,
                                      const cl_event *wait_list, cl_event *event) {
  cl_event filled[2];
  cl_uint nfilled = 0;
  const cl_mem grads[2] = {call->dgamma, call->dbeta};
  const cl_uchar zero = 0; /* 0.0 in every dtype */
  cl_int err = CL_SUCCESS;
  const char *step = "zeroing the weight gradients";
  for (int i = 0; i < 2 && err == CL_SUCCESS; i++)
    if (clnorm__op_backward(call->op) && grads[i]) {
      err = clEnqueueFillBuffer(queue, grads[i], &zero, 1, 0,
                                call->cols * clnorm__dtype_size(call->dtype), num_wait, wait_list,
                                &filled[nfilled]);
      nfilled += err == CL_SUCCESS;
    }
  if (err == CL_SUCCESS && event) {
    step = nfilled ? "the event after zeroing the weight gradients"
                   : "the event after the wait list (clEnqueueMarkerWithWaitList)";
    err = nfilled ? clEnqueueMarkerWithWaitList(queue, nfilled, filled, event)
                  : clEnqueueMarkerWithWaitList(queue, num_wait, wait_list, event);
  }
  for (cl_uint i = 0; i < nfilled; i++)
    clReleaseEvent(filled[i]);
  RETURN_IF(ctx, err != CL_SUCCESS, CLNORM_E_OPENCL, "%s %s rows=0: %s failed: %s",
            clnorm_op_name(call->op), clnorm_dtype_name(call->dtype), step,
            clnorm__cl_error_name(err));
  return CLNORM_OK;
}
