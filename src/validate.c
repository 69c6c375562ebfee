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
                            size_t rows, size_t cols, size_t stride, region *out) {
  size_t size = 0, origin = 0;
  cl_mem parent = NULL;
  cl_int err = clGetMemObjectInfo(buf, CL_MEM_SIZE, sizeof size, &size, NULL);
  RETURN_IF(ctx, err != CL_SUCCESS, CLNORM_E_INVALID_ARG, "%s is not a valid buffer: %s", what,
            clnorm__cl_error_name(err));
  const size_t elem = sizeof(float);
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

clnorm_status clnorm__validate(clnorm_ctx *ctx, cl_command_queue queue, const clnorm_call *call,
                               cl_uint num_wait, const cl_event *wait_list) {
  RETURN_IF(ctx, !queue, CLNORM_E_INVALID_ARG, "queue is NULL");
  RETURN_IF(ctx, !call, CLNORM_E_INVALID_ARG, "call is NULL");
  RETURN_IF(ctx, (unsigned)call->op > CLNORM_OP_RMSNORM, CLNORM_E_INVALID_ARG,
            "unknown op %u", (unsigned)call->op);
  RETURN_IF(ctx, (unsigned)call->dtype > CLNORM_BF16, CLNORM_E_INVALID_ARG, "unknown dtype %u",
            (unsigned)call->dtype);
  RETURN_IF(ctx, call->cols == 0, CLNORM_E_INVALID_ARG, "cols is 0");
  RETURN_IF(ctx, !(call->eps >= 0.0f) || !isfinite(call->eps), CLNORM_E_INVALID_ARG,
            "eps must be finite and >= 0 (got %g)", (double)call->eps);
  RETURN_IF(ctx, !call->x.buf, CLNORM_E_INVALID_ARG, "x.buf is NULL");
  RETURN_IF(ctx, !call->y.buf, CLNORM_E_INVALID_ARG, "y.buf is NULL");
  RETURN_IF(ctx, (num_wait > 0) != (wait_list != NULL), CLNORM_E_INVALID_ARG,
            "num_wait is %u but wait_list is %s", num_wait, wait_list ? "not NULL" : "NULL");
  RETURN_IF(ctx, call->op == CLNORM_OP_RMSNORM && (call->beta || call->mean),
            CLNORM_E_INVALID_ARG, "RMSNorm takes no beta and no mean");
  const size_t x_stride = call->x.stride ? call->x.stride : call->cols;
  const size_t y_stride = call->y.stride ? call->y.stride : call->cols;
  RETURN_IF(ctx, x_stride < call->cols, CLNORM_E_INVALID_ARG,
            "x.stride %zu is smaller than cols %zu", x_stride, call->cols);
  RETURN_IF(ctx, y_stride < call->cols, CLNORM_E_INVALID_ARG,
            "y.stride %zu is smaller than cols %zu", y_stride, call->cols);

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

  const size_t rows = call->rows ? call->rows : 1; /* rows == 0: the buffers are still checked */
  region x, y, vec[4];
  const char *vec_names[4] = {"gamma", "beta", "mean", "rstd"};
  const cl_mem vec_bufs[4] = {call->gamma, call->beta, call->mean, call->rstd};
  const size_t vec_len[4] = {call->cols, call->cols, rows, rows};
  clnorm_status st = locate(ctx, "x", call->x.buf, call->x.offset, rows, call->cols, x_stride, &x);
  if (st == CLNORM_OK)
    st = locate(ctx, "y", call->y.buf, call->y.offset, rows, call->cols, y_stride, &y);
  for (int i = 0; i < 4 && st == CLNORM_OK; i++)
    if (vec_bufs[i])
      st = locate(ctx, vec_names[i], vec_bufs[i], 0, 1, vec_len[i], vec_len[i], &vec[i]);
  if (st != CLNORM_OK)
    return st;

  const int in_place = x.root == y.root && x.start == y.start && x.stride == y.stride;
  RETURN_IF(ctx, !in_place && overlaps(&x, &y), CLNORM_E_INVALID_ARG,
            "x and y overlap without being identical (in place needs the same buffer, offset "
            "and stride)");
  for (int i = 0; i < 4; i++) {
    if (!vec_bufs[i])
      continue;
    RETURN_IF(ctx, overlaps(&vec[i], &y), CLNORM_E_INVALID_ARG, "%s overlaps y", vec_names[i]);
    if (i >= 2) { /* mean and rstd are outputs: they must not touch any other operand */
      RETURN_IF(ctx, overlaps(&vec[i], &x), CLNORM_E_INVALID_ARG, "%s overlaps x", vec_names[i]);
      for (int j = 0; j < 4; j++)
        RETURN_IF(ctx, j != i && vec_bufs[j] && overlaps(&vec[i], &vec[j]), CLNORM_E_INVALID_ARG,
                  "%s overlaps %s", vec_names[i], vec_names[j]);
    }
  }
  return CLNORM_OK;
}
