/* The path of a call: validate, choose a variant, get its kernel, enqueue. */
#include "internal.h"

#include <stdint.h>
#include <stdio.h>

const char *clnorm_choice_string(clnorm_choice why) {
  switch (why) {
  case CLNORM_CHOICE_FORCED:
    return "forced";
  case CLNORM_CHOICE_TUNED:
    return "tuned";
  case CLNORM_CHOICE_NEAREST:
    return "nearest";
  case CLNORM_CHOICE_BUILTIN:
    return "builtin";
  case CLNORM_CHOICE_HEURISTIC:
    return "heuristic";
  }
  return "unknown";
}

static const char *op_name(clnorm_op op) {
  return op == CLNORM_OP_LAYERNORM ? "layernorm" : "rmsnorm";
}

/* The variant as this call runs it: the vector width narrowed to the call's alignment, with the
 * row's private-memory budget (hold * vec floats) kept. */
static clnorm_variant effective(const clnorm_call *call, const clnorm_variant *v) {
  clnorm_variant e = *v;
  e.vec = clnorm__call_vec(call, v->vec);
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
  *eff = effective(call, v);
  if (!clnorm__variant_call_ok(eff, call->cols, why, sizeof why)) {
    clnorm_variant_format(eff, text, sizeof text);
    return clnorm__fail(ctx, CLNORM_E_UNSUPPORTED, "variant %s cannot run cols=%zu: %s", text,
                        call->cols, why);
  }
  return CLNORM_OK;
}

/* The heuristic's variant, falling back to safer ones when its build fails or the built kernel
 * cannot take its work-group size (register pressure can lower that limit). */
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
    st = usable(ctx, call, &candidates[i], eff);
    if (st == CLNORM_OK)
      st = clnorm__program_get(ctx, call->op, call->dtype, eff, prog);
    if (st == CLNORM_OK || (st != CLNORM_E_UNSUPPORTED && st != CLNORM_E_BUILD))
      break;
    if (ctx->log_info)
      fprintf(stderr, "clnorm: falling back from a heuristic candidate: %s\n",
              clnorm_ctx_errmsg(ctx));
  }
  return st;
}

/* The variant to run and its built program. A forced variant is used as given or refused; a
 * chosen one falls back, in order, to safer variants when its build fails or the built kernel
 * cannot take its work-group size (register pressure can lower that limit). */
static clnorm_status choose(clnorm_ctx *ctx, const clnorm_call *call, const clnorm_variant *force,
                            clnorm_variant *eff, clnorm_choice *why, clnorm_program **prog) {
  if (force) {
    *why = CLNORM_CHOICE_FORCED;
    clnorm_status st = usable(ctx, call, force, eff);
    return st != CLNORM_OK ? st : clnorm__program_get(ctx, call->op, call->dtype, eff, prog);
  }
  /* Tuned, nearest tuned and built-in entries, in order; each re-checked against the device
   * and the call. Entries are copied under the lock: the table may be replaced meanwhile. */
  const unsigned row_class = clnorm__row_class(call->rows);
  static const clnorm_choice reasons[4] = {CLNORM_CHOICE_TUNED, CLNORM_CHOICE_NEAREST,
                                           CLNORM_CHOICE_BUILTIN, CLNORM_CHOICE_BUILTIN};
  clnorm_variant found[4];
  int have[4] = {0, 0, 0, 0};
  pthread_mutex_lock(&ctx->lock); /* one lock for all lookups; the entries are copied out */
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
  pthread_mutex_unlock(&ctx->lock);
  for (int source = 0; source < 4; source++) {
    if (!have[source])
      continue;
    *why = reasons[source];
    if (usable(ctx, call, &found[source], eff) == CLNORM_OK &&
        clnorm__program_get(ctx, call->op, call->dtype, eff, prog) == CLNORM_OK)
      return CLNORM_OK;
    if (ctx->log_info)
      fprintf(stderr, "clnorm: the %s variant cannot run this call, falling back: %s\n",
              clnorm_choice_string(*why), clnorm_ctx_errmsg(ctx));
  }
  *why = CLNORM_CHOICE_HEURISTIC;
  return heuristic_pick(ctx, call, eff, prog);
}

/* CLNORM_LOG=info: one line per op, dtype, cols and row class. */
static void log_choice(clnorm_ctx *ctx, const clnorm_call *call, const clnorm_variant *v,
                       clnorm_choice why) {
  const uint64_t key = ((uint64_t)call->cols << 8 | (uint64_t)call->op << 5 |
                        (uint64_t)call->dtype << 2 | clnorm__row_class(call->rows)) +
                       1;
  int fresh = 0;
  pthread_mutex_lock(&ctx->lock);
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
  pthread_mutex_unlock(&ctx->lock);
  if (!fresh)
    return;
  char text[128];
  clnorm_variant_format(v, text, sizeof text);
  fprintf(stderr, "clnorm: %s f32 rows=%zu cols=%zu on %s: %s (%s)\n", op_name(call->op),
          call->rows, call->cols, ctx->info.name, text, clnorm_choice_string(why));
}

static clnorm_status set_args(clnorm_ctx *ctx, cl_kernel k, const clnorm_call *call) {
  const cl_ulong x_off = call->x.offset, y_off = call->y.offset;
  const cl_ulong x_stride = call->x.stride ? call->x.stride : call->cols;
  const cl_ulong y_stride = call->y.stride ? call->y.stride : call->cols;
  const cl_ulong rows = call->rows;
  const cl_uint cols = (cl_uint)call->cols;
  const cl_uint flags = (call->gamma ? 1u : 0u) | (call->beta ? 2u : 0u) |
                        (call->mean ? 4u : 0u) | (call->rstd ? 8u : 0u);
  cl_uint i = 0;
  cl_int err = clSetKernelArg(k, i++, sizeof(cl_mem), &call->x.buf);
  err |= clSetKernelArg(k, i++, sizeof x_off, &x_off);
  err |= clSetKernelArg(k, i++, sizeof x_stride, &x_stride);
  err |= clSetKernelArg(k, i++, sizeof(cl_mem), call->gamma ? &call->gamma : NULL);
  if (call->op == CLNORM_OP_LAYERNORM)
    err |= clSetKernelArg(k, i++, sizeof(cl_mem), call->beta ? &call->beta : NULL);
  err |= clSetKernelArg(k, i++, sizeof(cl_mem), &call->y.buf);
  err |= clSetKernelArg(k, i++, sizeof y_off, &y_off);
  err |= clSetKernelArg(k, i++, sizeof y_stride, &y_stride);
  if (call->op == CLNORM_OP_LAYERNORM)
    err |= clSetKernelArg(k, i++, sizeof(cl_mem), call->mean ? &call->mean : NULL);
  err |= clSetKernelArg(k, i++, sizeof(cl_mem), call->rstd ? &call->rstd : NULL);
  err |= clSetKernelArg(k, i++, sizeof rows, &rows);
  err |= clSetKernelArg(k, i++, sizeof cols, &cols);
  err |= clSetKernelArg(k, i++, sizeof call->eps, &call->eps);
  err |= clSetKernelArg(k, i++, sizeof flags, &flags);
  RETURN_IF(ctx, err != CL_SUCCESS, CLNORM_E_OPENCL, "clSetKernelArg failed");
  return CLNORM_OK;
}

static clnorm_status enqueue(clnorm_ctx *ctx, cl_command_queue queue, const clnorm_call *call,
                             const clnorm_variant *v, clnorm_program *prog, cl_uint num_wait,
                             const cl_event *wait_list, cl_event *event) {
  cl_kernel kernel;
  clnorm_status st = clnorm__kernel_take(ctx, prog, call->op, &kernel);
  if (st != CLNORM_OK)
    return st;
  st = set_args(ctx, kernel, call);
  if (st == CLNORM_OK) {
    const size_t rows_per_group = v->wg / v->tpr;
    const size_t groups = (call->rows + rows_per_group - 1) / rows_per_group;
    const size_t local = v->wg, global = groups * v->wg;
    const cl_int err = clEnqueueNDRangeKernel(queue, kernel, 1, NULL, &global, &local, num_wait,
                                              wait_list, event);
    if (err != CL_SUCCESS)
      st = clnorm__fail(ctx,
                        err == CL_MEM_OBJECT_ALLOCATION_FAILURE || err == CL_OUT_OF_HOST_MEMORY
                            ? CLNORM_E_NO_MEMORY
                        : err == CL_INVALID_EVENT_WAIT_LIST ? CLNORM_E_INVALID_ARG
                                                            : CLNORM_E_OPENCL,
                        "clEnqueueNDRangeKernel(%s, global %zu, local %zu) failed: %s (%d)",
                        prog->options, global, local, clnorm__cl_error_name(err), (int)err);
  }
  clnorm__kernel_give(ctx, prog, kernel);
  return st;
}

clnorm_status clnorm_run(clnorm_ctx *ctx, cl_command_queue queue, const clnorm_call *call,
                         const clnorm_variant *force, cl_uint num_wait, const cl_event *wait_list,
                         cl_event *event) {
  RETURN_IF(NULL, !ctx, CLNORM_E_INVALID_ARG, "ctx is NULL");
  clnorm__clear_error(ctx);
  clnorm_status st = clnorm__validate(ctx, queue, call, num_wait, wait_list);
  if (st != CLNORM_OK)
    return st;
  RETURN_IF(ctx, call->dtype != CLNORM_F32, CLNORM_E_UNSUPPORTED,
            "dtype %s is not supported by this build yet (only CLNORM_F32)",
            call->dtype == CLNORM_F16 ? "CLNORM_F16" : "CLNORM_BF16");
  RETURN_IF(ctx, call->cols > UINT32_MAX, CLNORM_E_UNSUPPORTED,
            "cols %zu exceeds 2^32 - 1 elements per row", call->cols);
  if (call->rows == 0) {
    if (event)
      CHECK_CL(ctx, clEnqueueMarkerWithWaitList(queue, num_wait, wait_list, event));
    return CLNORM_OK;
  }
  clnorm_variant v;
  clnorm_choice why;
  clnorm_program *prog;
  st = choose(ctx, call, force, &v, &why, &prog);
  if (st != CLNORM_OK)
    return st;
  if (ctx->log_info)
    log_choice(ctx, call, &v, why);
  return enqueue(ctx, queue, call, &v, prog, num_wait, wait_list, event);
}

clnorm_status clnorm_layernorm(clnorm_ctx *ctx, cl_command_queue queue, size_t rows, size_t cols,
                               clnorm_dtype dtype, float eps, clnorm_rows x, cl_mem gamma,
                               cl_mem beta, clnorm_rows y, cl_mem mean, cl_mem rstd,
                               cl_uint num_wait, const cl_event *wait_list, cl_event *event) {
  const clnorm_call call = {CLNORM_OP_LAYERNORM, rows, cols, dtype, eps, x, y,
                            gamma,               beta, mean, rstd};
  return clnorm_run(ctx, queue, &call, NULL, num_wait, wait_list, event);
}

clnorm_status clnorm_rmsnorm(clnorm_ctx *ctx, cl_command_queue queue, size_t rows, size_t cols,
                             clnorm_dtype dtype, float eps, clnorm_rows x, cl_mem gamma,
                             clnorm_rows y, cl_mem rstd, cl_uint num_wait,
                             const cl_event *wait_list, cl_event *event) {
  const clnorm_call call = {CLNORM_OP_RMSNORM, rows, cols, dtype, eps, x, y,
                            gamma,             NULL, NULL, rstd};
  return clnorm_run(ctx, queue, &call, NULL, num_wait, wait_list, event);
}

clnorm_status clnorm_choose(clnorm_ctx *ctx, const clnorm_call *call, clnorm_variant *out,
                            clnorm_choice *why) {
  RETURN_IF(NULL, !ctx, CLNORM_E_INVALID_ARG, "ctx is NULL");
  RETURN_IF(ctx, !call, CLNORM_E_INVALID_ARG, "call is NULL");
  RETURN_IF(ctx, (unsigned)call->op > CLNORM_OP_RMSNORM || call->cols == 0,
            CLNORM_E_INVALID_ARG, "unknown op or cols == 0");
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
  RETURN_IF(ctx, !call || !v, CLNORM_E_INVALID_ARG, "call or variant is NULL");
  RETURN_IF(ctx, (unsigned)call->op > CLNORM_OP_RMSNORM || call->cols == 0,
            CLNORM_E_INVALID_ARG, "unknown op or cols == 0");
  RETURN_IF(ctx, call->dtype != CLNORM_F32, CLNORM_E_UNSUPPORTED,
            "only CLNORM_F32 is supported by this build");
  clnorm_variant eff;
  clnorm_choice why;
  clnorm_program *prog;
  return choose(ctx, call, v, &eff, &why, &prog);
}

clnorm_status clnorm_heuristic(clnorm_ctx *ctx, const clnorm_call *call, clnorm_variant *out) {
  RETURN_IF(NULL, !ctx, CLNORM_E_INVALID_ARG, "ctx is NULL");
  RETURN_IF(ctx, !call || !out, CLNORM_E_INVALID_ARG, "call or out is NULL");
  RETURN_IF(ctx, (unsigned)call->op > CLNORM_OP_RMSNORM || call->cols == 0,
            CLNORM_E_INVALID_ARG, "unknown op or cols == 0");
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
  pthread_mutex_lock((pthread_mutex_t *)&ctx->lock);
  const size_t n = ctx->tuned_count;
  pthread_mutex_unlock((pthread_mutex_t *)&ctx->lock);
  return n;
}
