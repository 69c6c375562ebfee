/* The path of a call: validate, choose a variant (choose.c), enqueue it (launch.c), and retry
 * with another variant when the driver refuses a kernel at launch; the public entry points. */
#include "internal.h"
#include "names.h"

#include <stdint.h>
#include <stdio.h>

#define MAX_ATTEMPTS 24 /* launch failures one call falls back from */

/* clnorm_run_span, but for its error log (first may be NULL: clnorm_run). */
static clnorm_status run(clnorm_ctx *ctx, cl_command_queue queue, const clnorm_call *call,
                         const clnorm_variant *force, cl_uint num_wait, const cl_event *wait_list,
                         cl_event *first_out, cl_event *event) {
  RETURN_IF(NULL, !ctx, CLNORM_E_INVALID_ARG, "ctx is NULL");
  clnorm__clear_error(ctx);
  clnorm_status st = clnorm__validate(ctx, queue, call, num_wait, wait_list);
  if (st != CLNORM_OK)
    return st;
  RETURN_IF(ctx, call->cols > UINT32_MAX, CLNORM_E_UNSUPPORTED,
            "cols %zu exceeds 2^32 - 1 elements per row", call->cols);
  const int trace = clnorm__log_level() >= CLNORM_LOG_TRACE;
  if (call->rows == 0) {
    st = clnorm__enqueue_no_rows(ctx, queue, call, num_wait, wait_list, event);
    if (st == CLNORM_OK && first_out && clRetainEvent(*event) == CL_SUCCESS)
      *first_out = *event;
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
   * or private memory) or for its work-group size gives way to the next one clnorm__choose() finds,
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
    st = clnorm__choose(ctx, call, force, &v, &why, &prog);
    if (st != CLNORM_OK) {
      if (again) /* every variant left failed at launch: that is the call's failure */
        st = clnorm__fail(ctx, CLNORM_E_OPENCL, "%s; no other variant is left to try", launch_msg);
      break;
    }
    if (clnorm__log_level() >= CLNORM_LOG_INFO)
      clnorm__log_choice(ctx, call, &v, why, again);
    clnorm_attempt a = {CL_SUCCESS, 0, NULL, trace || first_out != NULL, NULL};
    st = clnorm__enqueue(ctx, queue, call, &v, prog, pending ? 1 : num_wait,
                         pending ? &pending : wait_list, last_event, &a);
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
    const int added_now = clnorm__unusable_add(ctx, call, a.key, a.err);
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
    if (first_out) { /* the caller's reference: the first kernel's, or the only one's */
      cl_event f = first ? first : *last_event;
      clRetainEvent(f);
      *first_out = f;
    }
    if (!trace && first) {
      clReleaseEvent(first);
    } else if (trace) {
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
    clnorm__unusable_remove(ctx, call, added[i]);
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
  return clnorm_run_span(ctx, queue, call, force, num_wait, wait_list, NULL, event);
}

clnorm_status clnorm_run_span(clnorm_ctx *ctx, cl_command_queue queue, const clnorm_call *call,
                              const clnorm_variant *force, cl_uint num_wait,
                              const cl_event *wait_list, cl_event *first, cl_event *event) {
  clnorm_status st;
  if (first && !event)
    st = clnorm__fail(ctx, CLNORM_E_INVALID_ARG, "first needs event (the call's last kernel)");
  else
    st = run(ctx, queue, call, force, num_wait, wait_list, first, event);
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

/* The call of an entry point: what every op has; each adds its own buffers (backward: y is dx,
 * and eps is unused). */
static clnorm_call call_of(clnorm_op op, size_t rows, size_t cols, clnorm_dtype dtype, float eps,
                           clnorm_rows x, clnorm_rows y, cl_mem gamma, cl_mem rstd) {
  const clnorm_call call = {.op = op,
                            .rows = rows,
                            .cols = cols,
                            .dtype = dtype,
                            .eps = eps,
                            .x = x,
                            .y = y,
                            .gamma = gamma,
                            .rstd = rstd};
  return call;
}

clnorm_status clnorm_layernorm(clnorm_ctx *ctx, cl_command_queue queue, size_t rows, size_t cols,
                               clnorm_dtype dtype, float eps, clnorm_rows x, cl_mem gamma,
                               cl_mem beta, clnorm_rows y, cl_mem mean, cl_mem rstd,
                               cl_uint num_wait, const cl_event *wait_list, cl_event *event) {
  clnorm_call c = call_of(CLNORM_OP_LAYERNORM, rows, cols, dtype, eps, x, y, gamma, rstd);
  c.beta = beta, c.mean = mean;
  return clnorm_run(ctx, queue, &c, NULL, num_wait, wait_list, event);
}

clnorm_status clnorm_rmsnorm(clnorm_ctx *ctx, cl_command_queue queue, size_t rows, size_t cols,
                             clnorm_dtype dtype, float eps, clnorm_rows x, cl_mem gamma,
                             clnorm_rows y, cl_mem rstd, cl_uint num_wait,
                             const cl_event *wait_list, cl_event *event) {
  clnorm_call c = call_of(CLNORM_OP_RMSNORM, rows, cols, dtype, eps, x, y, gamma, rstd);
  return clnorm_run(ctx, queue, &c, NULL, num_wait, wait_list, event);
}

clnorm_status clnorm_add_layernorm(clnorm_ctx *ctx, cl_command_queue queue, size_t rows,
                                   size_t cols, clnorm_dtype dtype, float eps, clnorm_rows x,
                                   clnorm_rows residual, clnorm_rows sum_out, cl_mem gamma,
                                   cl_mem beta, clnorm_rows y, cl_mem mean, cl_mem rstd,
                                   cl_uint num_wait, const cl_event *wait_list, cl_event *event) {
  clnorm_call c = call_of(CLNORM_OP_ADD_LAYERNORM, rows, cols, dtype, eps, x, y, gamma, rstd);
  c.beta = beta, c.mean = mean;
  c.residual = residual;
  c.sum_out = sum_out;
  return clnorm_run(ctx, queue, &c, NULL, num_wait, wait_list, event);
}

clnorm_status clnorm_add_rmsnorm(clnorm_ctx *ctx, cl_command_queue queue, size_t rows, size_t cols,
                                 clnorm_dtype dtype, float eps, clnorm_rows x, clnorm_rows residual,
                                 clnorm_rows sum_out, cl_mem gamma, clnorm_rows y, cl_mem rstd,
                                 cl_uint num_wait, const cl_event *wait_list, cl_event *event) {
  clnorm_call c = call_of(CLNORM_OP_ADD_RMSNORM, rows, cols, dtype, eps, x, y, gamma, rstd);
  c.residual = residual;
  c.sum_out = sum_out;
  return clnorm_run(ctx, queue, &c, NULL, num_wait, wait_list, event);
}

clnorm_status clnorm_layernorm_backward(clnorm_ctx *ctx, cl_command_queue queue, size_t rows,
                                        size_t cols, clnorm_dtype dtype, clnorm_rows dy,
                                        clnorm_rows x, cl_mem gamma, cl_mem mean, cl_mem rstd,
                                        clnorm_rows dx, cl_mem dgamma, cl_mem dbeta,
                                        cl_uint num_wait, const cl_event *wait_list,
                                        cl_event *event) {
  clnorm_call c = call_of(CLNORM_OP_LAYERNORM_BWD, rows, cols, dtype, 0.0f, x, dx, gamma, rstd);
  c.mean = mean, c.dy = dy, c.dgamma = dgamma, c.dbeta = dbeta;
  return clnorm_run(ctx, queue, &c, NULL, num_wait, wait_list, event);
}

clnorm_status clnorm_rmsnorm_backward(clnorm_ctx *ctx, cl_command_queue queue, size_t rows,
                                      size_t cols, clnorm_dtype dtype, clnorm_rows dy,
                                      clnorm_rows x, cl_mem gamma, cl_mem rstd, clnorm_rows dx,
                                      cl_mem dgamma, cl_uint num_wait, const cl_event *wait_list,
                                      cl_event *event) {
  clnorm_call c = call_of(CLNORM_OP_RMSNORM_BWD, rows, cols, dtype, 0.0f, x, dx, gamma, rstd);
  c.dy = dy, c.dgamma = dgamma;
  return clnorm_run(ctx, queue, &c, NULL, num_wait, wait_list, event);
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
  const clnorm_status st = clnorm__choose(ctx, call, NULL, &v, &w, &prog);
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
  return clnorm__choose(ctx, call, v, &eff, &why, &prog);
}

clnorm_status clnorm_heuristic(clnorm_ctx *ctx, const clnorm_call *call, clnorm_variant *out) {
  RETURN_IF(NULL, !ctx, CLNORM_E_INVALID_ARG, "ctx is NULL");
  RETURN_IF(ctx, !call || !out, CLNORM_E_INVALID_ARG, "call or out is NULL");
  RETURN_IF(ctx,
            (unsigned)call->op >= CLNORM_OP_COUNT || call->cols == 0 ||
                (unsigned)call->dtype > CLNORM_BF16,
            CLNORM_E_INVALID_ARG, "unknown op or dtype, or cols == 0");
  clnorm_program *prog;
  return clnorm__heuristic_pick(ctx, call, out, &prog);
}

clnorm_status clnorm_ctx_load_tuning(clnorm_ctx *ctx, const char *path) {
  RETURN_IF(NULL, !ctx, CLNORM_E_INVALID_ARG, "ctx is NULL");
  return clnorm__tuning_load(ctx, path);
}

size_t clnorm_ctx_tuned_count(const clnorm_ctx *ctx) {
  if (!ctx)
    return 0;
  clnorm__mutex_lock((clnorm_mutex *)&ctx->lock);
  const size_t n = ctx->tables[CLNORM_TABLE_TUNED].count;
  clnorm__mutex_unlock((clnorm_mutex *)&ctx->lock);
  return n;
}
