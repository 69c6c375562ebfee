/* The path of a call: validate, choose a variant, get its kernel, enqueue. */
#include "internal.h"
#include "names.h"

#include <stdint.h>
#include <stdio.h>

void clnorm__fault_inject(clnorm_ctx *ctx, clnorm_fault_kind kind, cl_int err, unsigned skip,
                          unsigned count, uint64_t key) {
  clnorm__mutex_lock(&ctx->lock);
  ctx->faults[kind] = (clnorm_fault){skip, count, err, key, 0};
  int armed = 0;
  for (int k = 0; k < CLNORM_FAULT_KINDS; k++)
    armed |= ctx->faults[k].count > 0;
  ctx->faults_armed = armed;
  clnorm__mutex_unlock(&ctx->lock);
}

unsigned clnorm__fault_fired(clnorm_ctx *ctx, clnorm_fault_kind kind) {
  clnorm__mutex_lock(&ctx->lock);
  const unsigned fired = ctx->faults[kind].fired;
  clnorm__mutex_unlock(&ctx->lock);
  return fired;
}

cl_int clnorm__fault_take(clnorm_ctx *ctx, clnorm_fault_kind kind, uint64_t key) {
  cl_int err = CL_SUCCESS;
  clnorm__mutex_lock(&ctx->lock);
  clnorm_fault *f = &ctx->faults[kind];
  if (f->count > 0 && (f->key == CLNORM_FAULT_ANY || f->key == key)) {
    if (f->skip > 0) {
      f->skip--;
    } else {
      f->count--;
      f->fired++;
      err = f->err;
    }
  }
  clnorm__mutex_unlock(&ctx->lock);
  return err;
}

/* The key of a program in a row class, in the set of variants that failed at launch. */
static uint64_t unusable_key(const clnorm_call *call, uint64_t program_key) {
  return 1ull << 63 | program_key << 2 | clnorm__row_class(call->rows);
}

/* Whether the program failed at launch before in this call's row class; *err: with what. */
static int unusable_find(clnorm_ctx *ctx, const clnorm_call *call, uint64_t program_key,
                         cl_int *err) {
  if (atomic_load_explicit(&ctx->unusable_count, memory_order_acquire) == 0)
    return 0; /* the usual case: no lock */
  const uint64_t key = unusable_key(call, program_key);
  int found = 0;
  clnorm__mutex_lock(&ctx->lock);
  const size_t n = atomic_load_explicit(&ctx->unusable_count, memory_order_relaxed);
  for (size_t i = 0; i < n && !found; i++)
    if (ctx->unusable[i].key == key) {
      *err = ctx->unusable[i].err;
      found = 1;
    }
  clnorm__mutex_unlock(&ctx->lock);
  return found;
}

/* Remembers a launch failure: 1 when added, 2 when another thread's call had added it, 0 when
 * the set is full (the call then gives up rather than retry without remembering). */
static int unusable_add(clnorm_ctx *ctx, const clnorm_call *call, uint64_t program_key,
                        cl_int err) {
  const uint64_t key = unusable_key(call, program_key);
  int added = 0;
  clnorm__mutex_lock(&ctx->lock);
  const size_t n = atomic_load_explicit(&ctx->unusable_count, memory_order_relaxed);
  for (size_t i = 0; i < n; i++)
    if (ctx->unusable[i].key == key)
      added = 2;
  if (!added && n < CLNORM_UNUSABLE) {
    ctx->unusable[n] = (clnorm_unusable){key, err};
    atomic_store_explicit(&ctx->unusable_count, n + 1, memory_order_release);
    added = 1;
  }
  clnorm__mutex_unlock(&ctx->lock);
  return added;
}

static void unusable_remove(clnorm_ctx *ctx, const clnorm_call *call, uint64_t program_key) {
  const uint64_t key = unusable_key(call, program_key);
  clnorm__mutex_lock(&ctx->lock);
  const size_t n = atomic_load_explicit(&ctx->unusable_count, memory_order_relaxed);
  for (size_t i = 0; i < n; i++)
    if (ctx->unusable[i].key == key) {
      ctx->unusable[i] = ctx->unusable[n - 1];
      atomic_store_explicit(&ctx->unusable_count, n - 1, memory_order_release);
      break;
    }
  clnorm__mutex_unlock(&ctx->lock);
}

const char *clnorm_choice_string(clnorm_choice why) {
  return clnorm__name_of(clnorm__choice_names, CLNORM__CHOICE_COUNT, (int)why, "unknown");
}

/* The variant as this call runs it: the vector width narrowed to what the call can run
 * (clnorm__call_vec), with the row's private-memory budget (hold * vec floats) kept. */
static clnorm_variant effective(const clnorm_device_info *info, const clnorm_call *call,
                                const clnorm_variant *v) {
  clnorm_variant e = *v;
  e.vec = clnorm__call_vec(info, call, v->vec);
  e.hold = v->hold * (v->vec / e.vec);
  return e;
}

/* Checks `v` against the device and the call; on success *eff is what runs. */
static clnorm_status usable(clnorm_ctx *ctx, const clnorm_call *call, const clnorm_variant *v,
                            clnorm_variant *eff) {
  char why[160], text[128];
  if (!clnorm__variant_device_ok(&ctx->info, call->op, v, why, sizeof why)) {
    clnorm_variant_format(v, text, sizeof text);
    return clnorm__fail(ctx, CLNORM_E_UNSUPPORTED, "variant %s cannot run on %s: %s", text,
                        ctx->info.name, why);
  }
  *eff = effective(&ctx->info, call, v);
  if (!clnorm__variant_call_ok(eff, call->cols, why, sizeof why)) {
    clnorm_variant_format(eff, text, sizeof text);
    return clnorm__fail(ctx, CLNORM_E_UNSUPPORTED, "variant %s cannot run cols=%zu: %s", text,
                        call->cols, why);
  }
  return CLNORM_OK;
}

/* A variant the dispatcher may choose: usable(), built, and not failed at launch before in this
 * call's row class. */
static clnorm_status candidate(clnorm_ctx *ctx, const clnorm_call *call, const clnorm_variant *v,
                               clnorm_variant *eff, clnorm_program **prog) {
  clnorm_status st = usable(ctx, call, v, eff);
  if (st == CLNORM_OK)
    st = clnorm__program_get(ctx, call->op, call->dtype, eff, 0, prog);
  cl_int err;
  if (st == CLNORM_OK && unusable_find(ctx, call, (*prog)->key, &err)) {
    char text[128];
    clnorm_variant_format(eff, text, sizeof text);
    st = clnorm__fail(ctx, CLNORM_E_UNSUPPORTED,
                      "variant %s failed at launch earlier with %s (%d): not used again for %s %s "
                      "in this row class",
                      text, clnorm__cl_error_name(err), (int)err, clnorm_op_name(call->op),
                      clnorm_dtype_name(call->dtype));
  }
  return st;
}

/* The heuristic's variant, falling back to safer ones when its build fails, the built kernel
 * cannot take its work-group size (register pressure can lower that limit) or it failed at
 * launch before. */
static clnorm_status heuristic_pick(clnorm_ctx *ctx, const clnorm_call *call, clnorm_variant *eff,
                                    clnorm_program **prog) {
  /* The heuristic's variant; then the same re-reading the row (no private array); then smaller
   * work-groups (a driver may refuse large ones after the build: NVIDIA's caps every clnorm
   * kernel at 256); last, one work-item per row, which every device runs. */
  clnorm_variant candidates[16];
  size_t n = 0;
  clnorm__heuristic(&ctx->info, call, &candidates[n++]);
  const clnorm_variant first = candidates[0];
  candidates[n] = first;
  candidates[n].hold = 0;
  candidates[n++].stats = CLNORM_STATS_WELFORD;
  for (unsigned wg = first.wg / 2; wg >= 32 && n < 15; wg /= 2) {
    candidates[n] = candidates[1];
    candidates[n].wg = wg;
    candidates[n].tpr = first.tpr < wg ? first.tpr : wg;
    if (candidates[n].reduce == CLNORM_REDUCE_SUBGROUP && candidates[n].tpr != wg)
      candidates[n].reduce = CLNORM_REDUCE_LOCAL;
    n++;
  }
  candidates[n++] = (clnorm_variant){1, 1, 4, 0, CLNORM_REDUCE_LOCAL, CLNORM_STATS_WELFORD};
  clnorm_status st = CLNORM_E_UNSUPPORTED;
  for (size_t i = 0; i < n; i++) {
    st = candidate(ctx, call, &candidates[i], eff, prog);
    if (st == CLNORM_OK || (st != CLNORM_E_UNSUPPORTED && st != CLNORM_E_BUILD))
      break;
    clnorm__log(CLNORM_LOG_WARN, "falling back from a heuristic candidate: %s",
                clnorm_ctx_errmsg(ctx));
  }
  return st;
}

/* The variant to run and its built program. A forced variant is used as given or refused; a
 * chosen one falls back, in order, to safer variants when its build fails, the built kernel
 * cannot take its work-group size (register pressure can lower that limit) or it failed at
 * launch before in this row class (clnorm_run). */
static clnorm_status choose(clnorm_ctx *ctx, const clnorm_call *call, const clnorm_variant *force,
                            clnorm_variant *eff, clnorm_choice *why, clnorm_program **prog) {
  if (force) {
    *why = CLNORM_CHOICE_FORCED;
    clnorm_status st = usable(ctx, call, force, eff);
    return st != CLNORM_OK ? st : clnorm__program_get(ctx, call->op, call->dtype, eff, 0, prog);
  }
  /* Tuned, nearest tuned and built-in entries, in order; each re-checked against the device
   * and the call. Entries are copied under the lock: the table may be replaced meanwhile. */
  const unsigned row_class = clnorm__row_class(call->rows);
  static const clnorm_choice reasons[4] = {CLNORM_CHOICE_TUNED, CLNORM_CHOICE_NEAREST,
                                           CLNORM_CHOICE_BUILTIN, CLNORM_CHOICE_BUILTIN};
  clnorm_variant found[4];
  int have[4] = {0, 0, 0, 0};
  clnorm__mutex_lock(&ctx->lock); /* one lock for all lookups; the entries are copied out */
  for (int source = 0; source < 4; source++) {
    const clnorm_tuned *t = clnorm__tuned_find(source < 2 ? ctx->tuned : ctx->builtin,
                                               source < 2 ? ctx->tuned_count : ctx->builtin_count,
                                               call->op, call->dtype, call->cols, row_class,
                                               source % 2 == 0);
    if (t) {
      found[source] = t->variant;
      have[source] = 1;
    }
  }
  clnorm__mutex_unlock(&ctx->lock);
  for (int source = 0; source < 4; source++) {
    if (!have[source])
      continue;
    *why = reasons[source];
    if (candidate(ctx, call, &found[source], eff, prog) == CLNORM_OK)
      return CLNORM_OK;
    clnorm__log(CLNORM_LOG_WARN, "the %s variant cannot run this call, falling back: %s",
                clnorm_choice_string(*why), clnorm_ctx_errmsg(ctx));
  }
  *why = CLNORM_CHOICE_HEURISTIC;
  return heuristic_pick(ctx, call, eff, prog);
}

/* The info log: one line per op, dtype, cols and row class; again: the choice after a launch
 * failure, printed whatever was printed before. */
static void log_choice(clnorm_ctx *ctx, const clnorm_call *call, const clnorm_variant *v,
                       clnorm_choice why, int again) {
  const uint64_t key = ((uint64_t)call->cols << 8 | (uint64_t)call->op << 5 |
                        (uint64_t)call->dtype << 2 | clnorm__row_class(call->rows)) +
                       1;
  int fresh = 0;
  clnorm__mutex_lock(&ctx->lock);
  for (size_t i = key % CLNORM_LOGGED, n = 0; n < CLNORM_LOGGED;
       i = (i + 1) % CLNORM_LOGGED, n++) {
    if (ctx->logged[i] == key)
      break;
    if (ctx->logged[i] == 0) {
      ctx->logged[i] = key;
      fresh = 1;
      break;
    }
  }
  clnorm__mutex_unlock(&ctx->lock);
  if (!fresh && !again)
    return;
  char text[128];
  clnorm_variant_format(v, text, sizeof text);
  clnorm__log(CLNORM_LOG_INFO, "%s %s rows=%zu cols=%zu on %s: %s (%s)", clnorm_op_name(call->op),
              clnorm_dtype_name(call->dtype), call->rows, call->cols, ctx->info.name, text,
              clnorm_choice_string(why));
}

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

/* Bits of the kernels' `flags` argument (cl/common.cl): which optional buffers were given. */
static cl_uint call_flags(const clnorm_call *call) {
  return (call->gamma ? 1u : 0u) | (call->beta ? 2u : 0u) | (call->mean ? 4u : 0u) |
         (call->rstd ? 8u : 0u) | (call->sum_out.buf ? 16u : 0u) | (call->dgamma ? 32u : 0u) |
         (call->dbeta ? 64u : 0u);
}

/* The arguments of a kernel of the call's op (backward: `partial` and `groups` last); *next, when
 * not NULL, receives the index after them. */
static clnorm_status set_args(clnorm_ctx *ctx, cl_kernel k, const clnorm_call *call,
                              cl_mem partial, cl_uint groups, cl_uint *next) {
  const cl_ulong rows = call->rows;
  const cl_uint cols = (cl_uint)call->cols;
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
    err |= clSetKernelArg(k, i++, sizeof rows, &rows);
    err |= clSetKernelArg(k, i++, sizeof cols, &cols);
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
    err |= clSetKernelArg(k, i++, sizeof rows, &rows);
    err |= clSetKernelArg(k, i++, sizeof cols, &cols);
    err |= clSetKernelArg(k, i++, sizeof call->eps, &call->eps);
    err |= clSetKernelArg(k, i++, sizeof flags, &flags);
  }
  RETURN_IF(ctx, err != CL_SUCCESS, CLNORM_E_OPENCL, "clSetKernelArg failed");
  if (next)
    *next = i;
  return CLNORM_OK;
}

/* A failed launch, for clnorm_run to decide on a retry with another variant: which program's
 * kernel failed and how, and the call's work already enqueued before it. */
typedef struct attempt {
  cl_int err;        /* the failed clEnqueueNDRangeKernel's code; CL_SUCCESS: none failed */
  uint64_t key;      /* the program of that kernel */
  cl_event enqueued; /* a backward call's first kernel, when its second failed to launch */
  int want_first;    /* the trace log times the call: keep the first of two kernels' events */
  cl_event first;    /* that event (a reference of the caller's), when both were enqueued */
} attempt;

/* clEnqueueNDRangeKernel, 1-D, unless a test injected its failure. */
static cl_int launch(clnorm_ctx *ctx, const clnorm_program *prog, cl_command_queue queue,
                     cl_kernel kernel, size_t global, const size_t *local, cl_uint num_wait,
                     const cl_event *wait_list, cl_event *event) {
  const cl_int injected = CLNORM_FAULT(ctx, CLNORM_FAULT_ENQUEUE, prog->key);
  if (injected != CL_SUCCESS)
    return injected;
  return clEnqueueNDRangeKernel(queue, kernel, 1, NULL, &global, local, num_wait, wait_list, event);
}

static clnorm_status launch_failed(clnorm_ctx *ctx, attempt *a, cl_int err, const char *what,
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

/* A call's scratch buffer (clCreateBuffer), unless a test injected its failure. */
static cl_mem scratch(clnorm_ctx *ctx, const clnorm_program *prog, size_t bytes, cl_int *err) {
  *err = CLNORM_FAULT(ctx, CLNORM_FAULT_ALLOC, prog->key);
  return *err == CL_SUCCESS ? clCreateBuffer(ctx->context, CL_MEM_READ_WRITE, bytes, NULL, err)
                            : NULL;
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
static size_t launch_groups(const clnorm_ctx *ctx, const clnorm_call *call,
                            const clnorm_variant *v) {
  const size_t rpg = v->wg / v->tpr;
  return ctx->info.fixed_grid ? device_groups(ctx, v) : (call->rows + rpg - 1) / rpg;
}

/* Groups that take part in the backward kernel: with weight gradients or on a CPU, a persistent
 * grid whose every row slot keeps its sums, sized to fill the device and small enough that the
 * partial sums (2 * groups * rows-per-group * cols floats) stay under 256 MiB; otherwise one
 * group per block of rows. Never more than launch_groups(). */
static size_t backward_groups(const clnorm_ctx *ctx, const clnorm_call *call,
                              const clnorm_variant *v) {
  const size_t rpg = v->wg / v->tpr;
  const size_t blocks = (call->rows + rpg - 1) / rpg;
  size_t groups = launch_groups(ctx, call, v);
  /* a CPU runs a few groups at a time and pays for each one it starts (the heuristic gives it
   * one row per group): the persistent grid whatever the call */
  if (call->dgamma || call->dbeta || (ctx->info.type & CL_DEVICE_TYPE_CPU)) {
    const size_t full = device_groups(ctx, v);
    const size_t mem_cap = ((size_t)256 << 20) / (2 * sizeof(float) * rpg * call->cols);
    groups = groups < full ? groups : full;
    groups = groups < mem_cap ? groups : mem_cap;
  }
  groups = groups < blocks ? groups : blocks;
  groups = groups < UINT32_MAX ? groups : UINT32_MAX; /* the kernel strides over the rest */
  return groups ? groups : 1;
}

/* The backward pass: norm_bwd, then (with weight gradients) bwd_reduce over the partial sums in
 * a scratch buffer of the call's own (released here; OpenCL frees it when the kernels are done).
 * *event completes when both have. When bwd_reduce fails to launch, a->enqueued is norm_bwd's
 * event: it writes dx, so a retry must wait for it. */
static clnorm_status enqueue_backward(clnorm_ctx *ctx, cl_command_queue queue,
                                      const clnorm_call *call, const clnorm_variant *v,
                                      clnorm_program *prog, cl_uint num_wait,
                                      const cl_event *wait_list, cl_event *event, attempt *a) {
  const int want_w = call->dgamma || call->dbeta;
  const size_t groups = backward_groups(ctx, call, v);
  const size_t parts = groups * (v->wg / v->tpr);
  RETURN_IF(ctx, want_w && parts > UINT32_MAX, CLNORM_E_UNSUPPORTED, "too many partial rows");
  cl_mem partial = NULL;
  cl_int err;
  if (want_w) {
    /* Before any kernel: when it fails, nothing of the call is enqueued. */
    partial = scratch(ctx, prog, 2 * sizeof(float) * parts * call->cols, &err);
    if (err != CL_SUCCESS)
      return scratch_failed(ctx, err, "backward", 2 * sizeof(float) * parts * call->cols);
  }
  cl_kernel main_k = NULL, reduce_k = NULL;
  cl_event main_done = NULL;
  clnorm_status st = clnorm__kernel_take(ctx, prog, call->op, 0, &main_k);
  if (st == CLNORM_OK)
    st = set_args(ctx, main_k, call, partial, (cl_uint)groups, NULL);
  if (st == CLNORM_OK) {
    const size_t local = v->wg;
    const size_t global = (ctx->info.fixed_grid ? launch_groups(ctx, call, v) : groups) * v->wg;
    err = launch(ctx, prog, queue, main_k, global, &local, num_wait, wait_list,
                 want_w ? &main_done : event);
    if (err != CL_SUCCESS)
      st = launch_failed(ctx, a, err, "norm_bwd", prog, global, local);
  }
  if (st == CLNORM_OK && want_w) {
    st = clnorm__kernel_take(ctx, prog, call->op, 1, &reduce_k);
    if (st == CLNORM_OK) {
      const cl_uint parts32 = (cl_uint)parts, cols = (cl_uint)call->cols;
      const cl_uint flags = call_flags(call);
      cl_uint i = 0;
      err = arg_mem(reduce_k, &i, &partial);
      err |= clSetKernelArg(reduce_k, i++, sizeof parts32, &parts32);
      err |= clSetKernelArg(reduce_k, i++, sizeof cols, &cols);
      err |= arg_mem(reduce_k, &i, &call->dgamma);
      err |= arg_mem(reduce_k, &i, &call->dbeta);
      err |= clSetKernelArg(reduce_k, i++, sizeof flags, &flags);
      if (err != CL_SUCCESS)
        st = clnorm__fail(ctx, CLNORM_E_OPENCL, "clSetKernelArg(bwd_reduce) failed");
    }
    if (st == CLNORM_OK) {
      /* A work-item per chunk of clnorm__reduce_vec() columns (and the columns past the last
       * whole chunk); 64 work-items per group on a GPU, 4 on a CPU, which pays for every group
       * it starts and runs each as a loop. A fixed grid takes 64 groups per compute unit and
       * strides. */
      const size_t rvec = clnorm__reduce_vec(&ctx->info);
      const size_t local = rvec > 1 ? 4 : 64;
      const size_t items = call->cols / rvec > 0 ? call->cols / rvec : 1;
      const size_t global =
          ctx->info.fixed_grid
              ? local * 64 * (ctx->info.compute_units ? ctx->info.compute_units : 1)
              : (items + local - 1) / local * local;
      err = launch(ctx, prog, queue, reduce_k, global, local <= ctx->info.max_wg ? &local : NULL, 1,
                   &main_done, event);
      if (err != CL_SUCCESS) {
        st = launch_failed(ctx, a, err, "bwd_reduce", prog, global, local);
        a->enqueued = main_done;
        main_done = NULL;
      } else if (a->want_first && clRetainEvent(main_done) == CL_SUCCESS) {
        a->first = main_done;
      }
    }
  }
  if (main_done)
    clReleaseEvent(main_done);
  if (main_k)
    clnorm__kernel_give(ctx, prog, 0, main_k);
  if (reduce_k)
    clnorm__kernel_give(ctx, prog, 1, reduce_k);
  if (partial)
    clReleaseMemObject(partial);
  return st;
}

/* A forward call with each row split over `splits` work-groups (cl/split.cl): split_stats
 * writes 4 floats of partial statistics per chunk into a scratch buffer of the call's own, then
 * split_norm merges them and normalizes. *event completes when both kernels have. */
static clnorm_status enqueue_split(clnorm_ctx *ctx, cl_command_queue queue, const clnorm_call *call,
                                   const clnorm_variant *v, clnorm_program *prog, unsigned splits,
                                   cl_uint num_wait, const cl_event *wait_list, cl_event *event,
                                   attempt *a) {
  const size_t units = call->rows * splits;
  /* chunks start at multiples of 16 elements: aligned for every vector width */
  const size_t chunk = ((call->cols + splits - 1) / splits + 15) / 16 * 16;
  const cl_ulong rows = call->rows;
  const cl_uint cols = (cl_uint)call->cols, chunk32 = (cl_uint)chunk, splits32 = splits;
  const cl_uint flags = call_flags(call);
  cl_int err;
  cl_mem partial = scratch(ctx, prog, 4 * sizeof(float) * units, &err);
  if (err != CL_SUCCESS)
    return scratch_failed(ctx, err, "split-row", 4 * sizeof(float) * units);
  cl_kernel stats_k = NULL, norm_k = NULL;
  cl_event stats_done = NULL;
  clnorm_status st = clnorm__kernel_take(ctx, prog, call->op, 0, &stats_k);
  if (st == CLNORM_OK)
    st = clnorm__kernel_take(ctx, prog, call->op, 1, &norm_k);
  if (st == CLNORM_OK) {
    cl_uint i = 0;
    err = arg_rows(stats_k, &i, &call->x, call->cols);
    err |= arg_rows(stats_k, &i, &call->residual, call->cols);
    err |= arg_mem(stats_k, &i, &partial);
    err |= clSetKernelArg(stats_k, i++, sizeof rows, &rows);
    err |= clSetKernelArg(stats_k, i++, sizeof cols, &cols);
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
    err |= clSetKernelArg(norm_k, i++, sizeof rows, &rows);
    err |= clSetKernelArg(norm_k, i++, sizeof cols, &cols);
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
    err = launch(ctx, prog, queue, stats_k, global, &local, num_wait, wait_list, &stats_done);
    if (err != CL_SUCCESS)
      st = launch_failed(ctx, a, err, "split_stats", prog, global, local);
  }
  /* When split_norm fails, split_stats stays enqueued: it writes the scratch buffer only. */
  if (st == CLNORM_OK) {
    err = launch(ctx, prog, queue, norm_k, global, &local, 1, &stats_done, event);
    if (err != CL_SUCCESS)
      st = launch_failed(ctx, a, err, "split_norm", prog, global, local);
    else if (a->want_first && clRetainEvent(stats_done) == CL_SUCCESS)
      a->first = stats_done;
  }
  if (stats_done)
    clReleaseEvent(stats_done);
  if (stats_k)
    clnorm__kernel_give(ctx, prog, 0, stats_k);
  if (norm_k)
    clnorm__kernel_give(ctx, prog, 1, norm_k);
  clReleaseMemObject(partial);
  return st;
}

/* A backward call with each row split over `splits` groups (the end of cl/backward.cl): bwd_sums
 * writes the 2 partial sums of each chunk into a scratch buffer of the call's own, then
 * bwd_split writes dx and the weight gradients, a tile of columns at a time. *event completes
 * when both kernels have. */
static clnorm_status enqueue_bwd_split(clnorm_ctx *ctx, cl_command_queue queue,
                                       const clnorm_call *call, const clnorm_variant *v,
                                       clnorm_program *prog, unsigned splits, cl_uint num_wait,
                                       const cl_event *wait_list, cl_event *event, attempt *a) {
  const size_t units = call->rows * splits;
  cl_int err;
  cl_mem partial = scratch(ctx, prog, 2 * sizeof(float) * units, &err);
  if (err != CL_SUCCESS)
    return scratch_failed(ctx, err, "split-row", 2 * sizeof(float) * units);
  cl_kernel sums_k = NULL, split_k = NULL;
  cl_event sums_done = NULL;
  clnorm_status st = clnorm__kernel_take(ctx, prog, call->op, 0, &sums_k);
  if (st == CLNORM_OK)
    st = clnorm__kernel_take(ctx, prog, call->op, 1, &split_k);
  cl_uint i = 0;
  if (st == CLNORM_OK)
    st = set_args(ctx, sums_k, call, partial, splits, NULL);
  if (st == CLNORM_OK)
    st = set_args(ctx, split_k, call, partial, splits, &i);
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
    err = launch(ctx, prog, queue, sums_k, global, &local, num_wait, wait_list, &sums_done);
    if (err != CL_SUCCESS)
      st = launch_failed(ctx, a, err, "bwd_sums", prog, global, local);
  }
  /* When bwd_split fails, bwd_sums stays enqueued: it writes the scratch buffer only. */
  if (st == CLNORM_OK) {
    const size_t global = (ctx->info.fixed_grid ? fixed : tiles) * v->wg;
    err = launch(ctx, prog, queue, split_k, global, &local, 1, &sums_done, event);
    if (err != CL_SUCCESS)
      st = launch_failed(ctx, a, err, "bwd_split", prog, global, local);
    else if (a->want_first && clRetainEvent(sums_done) == CL_SUCCESS)
      a->first = sums_done;
  }
  if (sums_done)
    clReleaseEvent(sums_done);
  if (sums_k)
    clnorm__kernel_give(ctx, prog, 0, sums_k);
  if (split_k)
    clnorm__kernel_give(ctx, prog, 1, split_k);
  clReleaseMemObject(partial);
  return st;
}

/* Enqueues the call with the chosen variant. A launch failure is described in *a. */
static clnorm_status enqueue(clnorm_ctx *ctx, cl_command_queue queue, const clnorm_call *call,
                             const clnorm_variant *v, clnorm_program *prog, cl_uint num_wait,
                             const cl_event *wait_list, cl_event *event, attempt *a) {
  const unsigned splits = clnorm__split_count(&ctx->info, call, v);
  if (splits > 1) {
    clnorm_program *split_prog;
    clnorm_status sst = clnorm__program_get(ctx, call->op, call->dtype, v, 1, &split_prog);
    cl_int err;
    if (sst == CLNORM_OK && unusable_find(ctx, call, split_prog->key, &err))
      sst = clnorm__fail(ctx, CLNORM_E_UNSUPPORTED,
                         "they failed at launch earlier with %s (%d) in this row class",
                         clnorm__cl_error_name(err), (int)err);
    if (sst == CLNORM_OK) {
      sst = clnorm__op_backward(call->op) ? enqueue_bwd_split(ctx, queue, call, v, split_prog,
                                                              splits, num_wait, wait_list, event, a)
                                          : enqueue_split(ctx, queue, call, v, split_prog, splits,
                                                          num_wait, wait_list, event, a);
      /* Out of device memory for the scratch (or at launch): no output was written. */
      if (sst != CLNORM_E_NO_MEMORY)
        return sst;
      a->err = CL_SUCCESS;
    } else if (sst != CLNORM_E_UNSUPPORTED && sst != CLNORM_E_BUILD) {
      return sst;
    }
    /* The whole-row kernels compute the same result, one group per row (the forward's with no
     * scratch). */
    clnorm__log(CLNORM_LOG_WARN, "split-row kernels unavailable, rows run whole: %s",
                clnorm_ctx_errmsg(ctx));
    clnorm__clear_error(ctx);
  }
  if (clnorm__op_backward(call->op))
    return enqueue_backward(ctx, queue, call, v, prog, num_wait, wait_list, event, a);
  cl_kernel kernel;
  clnorm_status st = clnorm__kernel_take(ctx, prog, call->op, 0, &kernel);
  if (st != CLNORM_OK)
    return st;
  st = set_args(ctx, kernel, call, NULL, 0, NULL);
  if (st == CLNORM_OK) {
    const size_t local = v->wg, global = launch_groups(ctx, call, v) * v->wg;
    const cl_int err = launch(ctx, prog, queue, kernel, global, &local, num_wait, wait_list, event);
    if (err != CL_SUCCESS)
      st = launch_failed(ctx, a, err, clnorm_op_name(call->op), prog, global, local);
  }
  clnorm__kernel_give(ctx, prog, 0, kernel);
  return st;
}

/* rows == 0: nothing to normalize; the weight gradients of a backward call are sums over no
 * rows, so they are zeroed. *event completes after the wait list and the zeroing. */
static clnorm_status enqueue_no_rows(clnorm_ctx *ctx, cl_command_queue queue,
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
                                call->cols * clnorm__dtype_size(call->dtype), num_wait,
                                wait_list, &filled[nfilled]);
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

#define MAX_ATTEMPTS 24 /* launch failures one call falls back from */

/* clnorm_run, but for its error log. */
static clnorm_status run(clnorm_ctx *ctx, cl_command_queue queue, const clnorm_call *call,
                         const clnorm_variant *force, cl_uint num_wait, const cl_event *wait_list,
                         cl_event *event) {
  RETURN_IF(NULL, !ctx, CLNORM_E_INVALID_ARG, "ctx is NULL");
  clnorm__clear_error(ctx);
  clnorm_status st = clnorm__validate(ctx, queue, call, num_wait, wait_list);
  if (st != CLNORM_OK)
    return st;
  RETURN_IF(ctx, call->cols > UINT32_MAX, CLNORM_E_UNSUPPORTED,
            "cols %zu exceeds 2^32 - 1 elements per row", call->cols);
  const int trace = clnorm__log_level() >= CLNORM_LOG_TRACE;
  if (call->rows == 0) {
    st = enqueue_no_rows(ctx, queue, call, num_wait, wait_list, event);
    if (st == CLNORM_OK && trace)
      clnorm__log(CLNORM_LOG_TRACE, "exec %s %s rows=0 cols=%zu on %s: no kernel",
                  clnorm_op_name(call->op), clnorm_dtype_name(call->dtype), call->cols,
                  ctx->info.name);
    return st;
  }
  /* The trace line needs the call's last event even where the caller asks for none. */
  cl_event own_event = NULL;
  cl_event *last_event = event ? event : trace ? &own_event : NULL;
  clnorm_variant ran = {0};
  clnorm_choice ran_why = CLNORM_CHOICE_HEURISTIC;
  cl_event first = NULL;
  /* A variant whose kernel the driver refuses at launch for lack of resources (registers, local
   * or private memory) or for its work-group size gives way to the next one choose() finds,
   * which no longer offers it for this op, dtype and row class. A forced variant and any other
   * error are returned as they are. */
  uint64_t added[MAX_ATTEMPTS]; /* the failures this call remembered */
  size_t n_added = 0;
  cl_event pending = NULL; /* work of a failed attempt that a retry must wait for */
  char launch_msg[512] = "";
  for (int again = 0;; again = 1) {
    clnorm_variant v;
    clnorm_choice why;
    clnorm_program *prog;
    st = choose(ctx, call, force, &v, &why, &prog);
    if (st != CLNORM_OK) {
      if (again) /* every variant left failed at launch: that is the call's failure */
        st = clnorm__fail(ctx, CLNORM_E_OPENCL, "%s; no other variant is left to try", launch_msg);
      break;
    }
    if (clnorm__log_level() >= CLNORM_LOG_INFO)
      log_choice(ctx, call, &v, why, again);
    attempt a = {CL_SUCCESS, 0, NULL, trace, NULL};
    st = enqueue(ctx, queue, call, &v, prog, pending ? 1 : num_wait, pending ? &pending : wait_list,
                 last_event, &a);
    if (st == CLNORM_OK) {
      ran = v;
      ran_why = why;
      first = a.first;
    } else if (a.first) {
      clReleaseEvent(a.first);
    }
    if (a.enqueued) {
      /* The failed attempt's first kernel ran after the wait list: waiting for it suffices. */
      if (pending)
        clReleaseEvent(pending);
      pending = a.enqueued;
    }
    if (st == CLNORM_OK || force ||
        (a.err != CL_OUT_OF_RESOURCES && a.err != CL_INVALID_WORK_GROUP_SIZE) ||
        n_added == MAX_ATTEMPTS)
      break;
    const int added_now = unusable_add(ctx, call, a.key, a.err);
    if (!added_now)
      break;
    snprintf(launch_msg, sizeof launch_msg, "%s", clnorm_ctx_errmsg(ctx));
    if (added_now == 1)
      added[n_added++] = a.key;
    if (clnorm__log_level() >= CLNORM_LOG_WARN) {
      char text[128];
      clnorm_variant_format(&v, text, sizeof text);
      clnorm__log(CLNORM_LOG_WARN,
                  "%s %s rows=%zu cols=%zu: the %s variant %s failed at launch, falling back "
                  "(not chosen again for %s %s in this row class): %s",
                  clnorm_op_name(call->op), clnorm_dtype_name(call->dtype), call->rows, call->cols,
                  clnorm_choice_string(why), text, clnorm_op_name(call->op),
                  clnorm_dtype_name(call->dtype), clnorm_ctx_errmsg(ctx));
    }
  }
  if (pending)
    clReleaseEvent(pending);
  if (st == CLNORM_OK) {
    clnorm__clear_error(ctx); /* the failures fallen back from are no failure of the call */
    if (trace) {
      /* the trace takes a reference of its own to the caller's event, and owns own_event */
      cl_event last = *last_event;
      if (event)
        clRetainEvent(last);
      if (!first) {
        clRetainEvent(last);
        first = last;
      }
      clnorm__trace_call(ctx, queue, call, &ran, ran_why, first, last);
    }
    return st;
  }
  /* When no variant launches, the device rather than the variants is short of resources: the
   * failures are forgotten, so that later calls try the better variants again. */
  for (size_t i = 0; i < n_added; i++)
    unusable_remove(ctx, call, added[i]);
  if (n_added)
    clnorm__log(CLNORM_LOG_WARN,
                "no variant of %s %s rows=%zu cols=%zu launched; the launch failures are not "
                "remembered",
                clnorm_op_name(call->op), clnorm_dtype_name(call->dtype), call->rows, call->cols);
  return st;
}

clnorm_status clnorm_run(clnorm_ctx *ctx, cl_command_queue queue, const clnorm_call *call,
                         const clnorm_variant *force, cl_uint num_wait, const cl_event *wait_list,
                         cl_event *event) {
  const clnorm_status st = run(ctx, queue, call, force, num_wait, wait_list, event);
  if (st != CLNORM_OK && clnorm__log_level() >= CLNORM_LOG_ERROR) {
    if (call && ctx)
      clnorm__log(CLNORM_LOG_ERROR, "%s %s rows=%zu cols=%zu failed: %s: %s",
                  clnorm_op_name(call->op), clnorm_dtype_name(call->dtype), call->rows, call->cols,
                  clnorm_status_string(st), clnorm_ctx_errmsg(ctx));
    else
      clnorm__log(CLNORM_LOG_ERROR, "call failed: %s: %s", clnorm_status_string(st),
                  clnorm_ctx_errmsg(ctx));
  }
  return st;
}

clnorm_status clnorm_layernorm(clnorm_ctx *ctx, cl_command_queue queue, size_t rows, size_t cols,
                               clnorm_dtype dtype, float eps, clnorm_rows x, cl_mem gamma,
                               cl_mem beta, clnorm_rows y, cl_mem mean, cl_mem rstd,
                               cl_uint num_wait, const cl_event *wait_list, cl_event *event) {
  const clnorm_call call = {.op = CLNORM_OP_LAYERNORM,
                            .rows = rows,
                            .cols = cols,
                            .dtype = dtype,
                            .eps = eps,
                            .x = x,
                            .y = y,
                            .gamma = gamma,
                            .beta = beta,
                            .mean = mean,
                            .rstd = rstd};
  return clnorm_run(ctx, queue, &call, NULL, num_wait, wait_list, event);
}

clnorm_status clnorm_rmsnorm(clnorm_ctx *ctx, cl_command_queue queue, size_t rows, size_t cols,
                             clnorm_dtype dtype, float eps, clnorm_rows x, cl_mem gamma,
                             clnorm_rows y, cl_mem rstd, cl_uint num_wait,
                             const cl_event *wait_list, cl_event *event) {
  const clnorm_call call = {.op = CLNORM_OP_RMSNORM,
                            .rows = rows,
                            .cols = cols,
                            .dtype = dtype,
                            .eps = eps,
                            .x = x,
                            .y = y,
                            .gamma = gamma,
                            .rstd = rstd};
  return clnorm_run(ctx, queue, &call, NULL, num_wait, wait_list, event);
}

clnorm_status clnorm_add_layernorm(clnorm_ctx *ctx, cl_command_queue queue, size_t rows,
                                   size_t cols, clnorm_dtype dtype, float eps, clnorm_rows x,
                                   clnorm_rows residual, clnorm_rows sum_out, cl_mem gamma,
                                   cl_mem beta, clnorm_rows y, cl_mem mean, cl_mem rstd,
                                   cl_uint num_wait, const cl_event *wait_list, cl_event *event) {
  const clnorm_call call = {.op = CLNORM_OP_ADD_LAYERNORM,
                            .rows = rows,
                            .cols = cols,
                            .dtype = dtype,
                            .eps = eps,
                            .x = x,
                            .y = y,
                            .gamma = gamma,
                            .beta = beta,
                            .mean = mean,
                            .rstd = rstd,
                            .residual = residual,
                            .sum_out = sum_out};
  return clnorm_run(ctx, queue, &call, NULL, num_wait, wait_list, event);
}

clnorm_status clnorm_add_rmsnorm(clnorm_ctx *ctx, cl_command_queue queue, size_t rows, size_t cols,
                                 clnorm_dtype dtype, float eps, clnorm_rows x, clnorm_rows residual,
                                 clnorm_rows sum_out, cl_mem gamma, clnorm_rows y, cl_mem rstd,
                                 cl_uint num_wait, const cl_event *wait_list, cl_event *event) {
  const clnorm_call call = {.op = CLNORM_OP_ADD_RMSNORM,
                            .rows = rows,
                            .cols = cols,
                            .dtype = dtype,
                            .eps = eps,
                            .x = x,
                            .y = y,
                            .gamma = gamma,
                            .rstd = rstd,
                            .residual = residual,
                            .sum_out = sum_out};
  return clnorm_run(ctx, queue, &call, NULL, num_wait, wait_list, event);
}

clnorm_status clnorm_layernorm_backward(clnorm_ctx *ctx, cl_command_queue queue, size_t rows,
                                        size_t cols, clnorm_dtype dtype, clnorm_rows dy,
                                        clnorm_rows x, cl_mem gamma, cl_mem mean, cl_mem rstd,
                                        clnorm_rows dx, cl_mem dgamma, cl_mem dbeta,
                                        cl_uint num_wait, const cl_event *wait_list,
                                        cl_event *event) {
  const clnorm_call call = {.op = CLNORM_OP_LAYERNORM_BWD,
                            .rows = rows,
                            .cols = cols,
                            .dtype = dtype,
                            .x = x,
                            .y = dx,
                            .gamma = gamma,
                            .mean = mean,
                            .rstd = rstd,
                            .dy = dy,
                            .dgamma = dgamma,
                            .dbeta = dbeta};
  return clnorm_run(ctx, queue, &call, NULL, num_wait, wait_list, event);
}

clnorm_status clnorm_rmsnorm_backward(clnorm_ctx *ctx, cl_command_queue queue, size_t rows,
                                      size_t cols, clnorm_dtype dtype, clnorm_rows dy,
                                      clnorm_rows x, cl_mem gamma, cl_mem rstd, clnorm_rows dx,
                                      cl_mem dgamma, cl_uint num_wait, const cl_event *wait_list,
                                      cl_event *event) {
  const clnorm_call call = {.op = CLNORM_OP_RMSNORM_BWD,
                            .rows = rows,
                            .cols = cols,
                            .dtype = dtype,
                            .x = x,
                            .y = dx,
                            .gamma = gamma,
                            .rstd = rstd,
                            .dy = dy,
                            .dgamma = dgamma};
  return clnorm_run(ctx, queue, &call, NULL, num_wait, wait_list, event);
}

clnorm_status clnorm_choose(clnorm_ctx *ctx, const clnorm_call *call, clnorm_variant *out,
                            clnorm_choice *why) {
  RETURN_IF(NULL, !ctx, CLNORM_E_INVALID_ARG, "ctx is NULL");
  RETURN_IF(ctx, !call, CLNORM_E_INVALID_ARG, "call is NULL");
  RETURN_IF(ctx,
            (unsigned)call->op >= CLNORM_OP_COUNT || call->cols == 0 ||
                (unsigned)call->dtype > CLNORM_BF16,
            CLNORM_E_INVALID_ARG, "unknown op or dtype, or cols == 0");
  clnorm_variant v;
  clnorm_choice w;
  clnorm_program *prog;
  const clnorm_status st = choose(ctx, call, NULL, &v, &w, &prog);
  if (st == CLNORM_OK) {
    if (out)
      *out = v;
    if (why)
      *why = w;
  }
  return st;
}

clnorm_status clnorm_variant_check(clnorm_ctx *ctx, const clnorm_call *call,
                                   const clnorm_variant *v) {
  RETURN_IF(NULL, !ctx, CLNORM_E_INVALID_ARG, "ctx is NULL");
  clnorm__clear_error(ctx); /* errmsg speaks of this check only, as of a clnorm_run */
  RETURN_IF(ctx, !call || !v, CLNORM_E_INVALID_ARG, "call or variant is NULL");
  RETURN_IF(ctx,
            (unsigned)call->op >= CLNORM_OP_COUNT || call->cols == 0 ||
                (unsigned)call->dtype > CLNORM_BF16,
            CLNORM_E_INVALID_ARG, "unknown op or dtype, or cols == 0");
  RETURN_IF(ctx, call->cols > UINT32_MAX, CLNORM_E_UNSUPPORTED,
            "cols %zu exceeds 2^32 - 1 elements per row", call->cols);
  clnorm_variant eff;
  clnorm_choice why;
  clnorm_program *prog;
  return choose(ctx, call, v, &eff, &why, &prog);
}

clnorm_status clnorm_heuristic(clnorm_ctx *ctx, const clnorm_call *call, clnorm_variant *out) {
  RETURN_IF(NULL, !ctx, CLNORM_E_INVALID_ARG, "ctx is NULL");
  RETURN_IF(ctx, !call || !out, CLNORM_E_INVALID_ARG, "call or out is NULL");
  RETURN_IF(ctx,
            (unsigned)call->op >= CLNORM_OP_COUNT || call->cols == 0 ||
                (unsigned)call->dtype > CLNORM_BF16,
            CLNORM_E_INVALID_ARG, "unknown op or dtype, or cols == 0");
  clnorm_program *prog;
  return heuristic_pick(ctx, call, out, &prog);
}

clnorm_status clnorm_ctx_load_tuning(clnorm_ctx *ctx, const char *path) {
  RETURN_IF(NULL, !ctx, CLNORM_E_INVALID_ARG, "ctx is NULL");
  return clnorm__tuning_load(ctx, path);
}

size_t clnorm_ctx_tuned_count(const clnorm_ctx *ctx) {
  if (!ctx)
    return 0;
  clnorm__mutex_lock((clnorm_mutex *)&ctx->lock);
  const size_t n = ctx->tuned_count;
  clnorm__mutex_unlock((clnorm_mutex *)&ctx->lock);
  return n;
}
