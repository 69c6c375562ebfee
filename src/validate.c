/* Argument checks of every call: a bad argument is reported before anything is enqueued. */
#include "internal.h"

#include <math.h>
#include <stdint.h>

/* Where a matrix or vector lies in memory, in bytes from the start of its root buffer. */
typedef struct region {
  cl_mem root;
  int64_t start, stride, width, rows; /* rows of `width` bytes, `stride` bytes apart */
} region;

/* Resolves a buffer to its root (sub-buffers share their parent's memory) and checks that
 * `elements` elements from `offset` fit in it. */
static clnorm_status locate(clnorm_ctx *ctx, const char *what, cl_mem buf, size_t offset,
                            size_t rows, size_t cols, size_t stride, size_t elem, region *out) {
  size_t size = 0, origin = 0;
  cl_mem parent = NULL;
  cl_int err = clGetMemObjectInfo(buf, CL_MEM_SIZE, sizeof size, &size, NULL);
  RETURN_IF(ctx, err != CL_SUCCESS, CLNORM_E_INVALID_ARG, "%s is not a valid buffer: %s", what,
            clnorm__cl_error_name(err));
  /* offset + (rows-1)*stride + cols elements, computed without overflow */
  const size_t limit = size / elem;
  int fits = offset <= limit && cols <= limit - offset;
  if (fits && rows > 1) {
    const size_t room = limit - offset - cols;
    fits = stride == 0 || (rows - 1) <= room / stride;
  }
  RETURN_IF(ctx, !fits, CLNORM_E_INVALID_ARG,
            "%s does not fit its buffer: offset %zu + (rows %zu - 1) * stride %zu + %zu "
            "elements of %zu bytes exceed CL_MEM_SIZE %zu",
            what, offset, rows, stride, cols, elem, size);
  err = clGetMemObjectInfo(buf, CL_MEM_ASSOCIATED_MEMOBJECT, sizeof parent, &parent, NULL);
  if (err == CL_SUCCESS && parent)
    err = clGetMemObjectInfo(buf, CL_MEM_OFFSET, sizeof origin, &origin, NULL);
  RETURN_IF(ctx, err != CL_SUCCESS, CLNORM_E_INVALID_ARG, "%s: clGetMemObjectInfo failed: %s",
            what, clnorm__cl_error_name(err));
  out->root = parent ? parent : buf;
  out->start = (int64_t)(origin + offset * elem);
  out->stride = (int64_t)(stride * elem);
  out->width = (int64_t)(cols * elem);
  out->rows = (int64_t)rows;
  return CLNORM_OK;
}

static int64_t floor_div(int64_t a, int64_t b) {
  const int64_t q = a / b;
  return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}

/* Whether two regions share a byte. Exact for equal strides; otherwise by their extents. */
static int overlaps(const region *a, const region *b) {
  if (a->root != b->root)
    return 0;
  const int64_t a_end = a->start + (a->rows - 1) * a->stride + a->width;
  const int64_t b_end = b->start + (b->rows - 1) * b->stride + b->width;
  if (a_end <= b->start || b_end <= a->start)
    return 0;
  if (a->rows == 1 || b->rows == 1 || a->stride != b->stride || a->stride == 0)
    return 1;
  /* Row r of a meets row q of b when, with k = r - q and d = b.start - a.start,
   * d - a.width < k * stride < d + b.width. */
  const int64_t s = a->stride, d = b->start - a->start;
  const int64_t k_lo = floor_div(d - a->width, s) + 1;
  const int64_t k_hi = -floor_div(-(d + b->width), s) - 1;
  const int64_t lo = k_lo > -(b->rows - 1) ? k_lo : -(b->rows - 1);
  const int64_t hi = k_hi < a->rows - 1 ? k_hi : a->rows - 1;
  return lo <= hi;
}

/* One buffer argument of a call. */
typedef struct operand {
  const char *name;
  cl_mem buf;
  size_t offset, stride, rows, cols, elem;
  int output, matrix;
  region where;
} operand;

static void add_operand(operand *ops, int *n, const char *name, cl_mem buf, size_t offset,
                        size_t stride, size_t rows, size_t cols, size_t elem, int output,
                        int matrix) {
  if (!buf)
    return;
  const operand o = {name, buf, offset, stride, rows, cols, elem, output, matrix, {0}};
  ops[(*n)++] = o;
}

static int identical(const region *a, const region *b) {
  return a->root == b->root && a->start == b->start && a->stride == b->stride &&
         a->width == b->width;
}

clnorm_status clnorm__validate(clnorm_ctx *ctx, cl_command_queue queue, const clnorm_call *call,
                               cl_uint num_wait, const cl_event *wait_list) {
  RETURN_IF(ctx, !queue, CLNORM_E_INVALID_ARG, "queue is NULL");
  RETURN_IF(ctx, !call, CLNORM_E_INVALID_ARG, "call is NULL");
  RETURN_IF(ctx, (unsigned)call->op >= CLNORM_OP_COUNT, CLNORM_E_INVALID_ARG, "unknown op %u",
            (unsigned)call->op);
  RETURN_IF(ctx, (unsigned)call->dtype > CLNORM_BF16, CLNORM_E_INVALID_ARG, "unknown dtype %u",
            (unsigned)call->dtype);
  const int bwd = clnorm__op_backward(call->op), add = clnorm__op_add(call->op);
  const int rms = clnorm__op_rms(call->op);
  const char *y_name = bwd ? "dx" : "y";
  RETURN_IF(ctx, call->cols == 0, CLNORM_E_INVALID_ARG, "cols is 0");
  RETURN_IF(ctx, !bwd && (!(call->eps >= 0.0f) || !isfinite(call->eps)), CLNORM_E_INVALID_ARG,
            "eps must be finite and >= 0 (got %g)", (double)call->eps);
  RETURN_IF(ctx, !call->x.buf, CLNORM_E_INVALID_ARG, "x.buf is NULL");
  RETURN_IF(ctx, !call->y.buf, CLNORM_E_INVALID_ARG, "%s.buf is NULL", y_name);
  RETURN_IF(ctx, add && !call->residual.buf, CLNORM_E_INVALID_ARG, "residual.buf is NULL");
  RETURN_IF(ctx, bwd && !call->dy.buf, CLNORM_E_INVALID_ARG, "dy.buf is NULL");
  RETURN_IF(ctx, bwd && !call->rstd, CLNORM_E_INVALID_ARG,
            "rstd is NULL: the backward pass needs the forward's rstd");
  RETURN_IF(ctx, bwd && !rms && !call->mean, CLNORM_E_INVALID_ARG,
            "mean is NULL: LayerNorm's backward pass needs the forward's mean");
  RETURN_IF(ctx, (num_wait > 0) != (wait_list != NULL), CLNORM_E_INVALID_ARG,
            "num_wait is %u but wait_list is %s", num_wait, wait_list ? "not NULL" : "NULL");
  RETURN_IF(ctx, rms && (call->beta || call->mean || call->dbeta), CLNORM_E_INVALID_ARG,
            "RMSNorm takes no beta, mean or dbeta");
  RETURN_IF(ctx, bwd && call->beta, CLNORM_E_INVALID_ARG, "the backward pass takes no beta");
  RETURN_IF(ctx, !add && (call->residual.buf || call->sum_out.buf), CLNORM_E_INVALID_ARG,
            "residual and sum_out belong to the add ops only");
  RETURN_IF(ctx, !bwd && (call->dy.buf || call->dgamma || call->dbeta), CLNORM_E_INVALID_ARG,
            "dy, dgamma and dbeta belong to the backward ops only");

  /* The operands: matrices first, then vectors. */
  const size_t rows = call->rows ? call->rows : 1; /* rows == 0: the buffers are still checked */
  const size_t cols = call->cols, es = clnorm__dtype_size(call->dtype), fs = sizeof(float);
  const clnorm_rows *m[5] = {&call->x, &call->y, &call->residual, &call->sum_out, &call->dy};
  const char *m_names[5] = {"x", y_name, "residual", "sum_out", "dy"};
  const int m_out[5] = {0, 1, 0, 1, 0};
  operand ops[16];
  int n = 0;
  for (int i = 0; i < 5; i++) {
    if (!m[i]->buf)
      continue;
    const size_t stride = m[i]->stride ? m[i]->stride : cols;
    RETURN_IF(ctx, stride < cols, CLNORM_E_INVALID_ARG, "%s.stride %zu is smaller than cols %zu",
              m_names[i], stride, cols);
    add_operand(ops, &n, m_names[i], m[i]->buf, m[i]->offset, stride, rows, cols, es, m_out[i], 1);
  }
  add_operand(ops, &n, "gamma", call->gamma, 0, cols, 1, cols, es, 0, 0);
  add_operand(ops, &n, "beta", call->beta, 0, cols, 1, cols, es, 0, 0);
  add_operand(ops, &n, "mean", call->mean, 0, rows, 1, rows, fs, !bwd, 0);
  add_operand(ops, &n, "rstd", call->rstd, 0, rows, 1, rows, fs, !bwd, 0);
  add_operand(ops, &n, "dgamma", call->dgamma, 0, cols, 1, cols, es, 1, 0);
  add_operand(ops, &n, "dbeta", call->dbeta, 0, cols, 1, cols, es, 1, 0);

  cl_context qctx = NULL;
  cl_device_id qdev = NULL;
  cl_int err = clGetCommandQueueInfo(queue, CL_QUEUE_CONTEXT, sizeof qctx, &qctx, NULL);
  if (err == CL_SUCCESS)
    err = clGetCommandQueueInfo(queue, CL_QUEUE_DEVICE, sizeof qdev, &qdev, NULL);
  RETURN_IF(ctx, err != CL_SUCCESS, CLNORM_E_INVALID_ARG, "queue is not a valid queue: %s",
            clnorm__cl_error_name(err));
  RETURN_IF(ctx, qctx != ctx->context, CLNORM_E_INVALID_ARG,
            "queue belongs to another cl_context than the clnorm context");
  RETURN_IF(ctx, qdev != ctx->device, CLNORM_E_INVALID_ARG,
            "queue belongs to another device than the clnorm context");

  for (int i = 0; i < n; i++) {
    const clnorm_status st = locate(ctx, ops[i].name, ops[i].buf, ops[i].offset, ops[i].rows,
                                    ops[i].cols, ops[i].stride, ops[i].elem, &ops[i].where);
    if (st != CLNORM_OK)
      return st;
  }
  /* An output may be exactly one of the input matrices (in place); no other overlap. */
  for (int i = 0; i < n; i++) {
    if (!ops[i].output)
      continue;
    for (int j = 0; j < n; j++) {
      if (j == i || !overlaps(&ops[i].where, &ops[j].where))
        continue;
      const int in_place = ops[i].matrix && ops[j].matrix && !ops[j].output &&
                           identical(&ops[i].where, &ops[j].where);
      RETURN_IF(ctx, !in_place, CLNORM_E_INVALID_ARG,
                ops[i].matrix && ops[j].matrix && !ops[j].output
                    ? "%s and %s overlap without being identical (in place needs the same "
                      "buffer, offset and stride)"
                    : "%s overlaps %s",
                ops[i].name, ops[j].name);
    }
  }
  return CLNORM_OK;
}
