/* Scratch buffers of the two-kernel calls (split rows, backward), kept by the context per
 * command queue so that a call allocates nothing once its queue has had one as large.
 *
 * Reuse is safe because the two kernels of a call and every later call on the same in-order
 * queue run one after another: a call's kernels are done with the buffer before the next call's
 * start. So a buffer is kept only for an in-order queue, and a call takes it only while no other
 * thread is enqueueing with it (`busy`, taken under the context's lock, given back without it):
 * two threads that enqueue on one queue at once would interleave their kernels. Otherwise (an
 * out-of-order queue, a busy slot, all slots busy) the call gets a buffer of its own, as every
 * call did before. The context retains each queue it keeps a
 * buffer for, so that a queue released and created again at the same address cannot be taken for
 * the old one while the old one's kernels may still run. */
#include "internal.h"

/* Whether commands on `queue` run in order (no CL_QUEUE_OUT_OF_ORDER_EXEC_MODE_ENABLE). */
static int in_order(cl_command_queue queue) {
  cl_command_queue_properties props = 0;
  if (clGetCommandQueueInfo(queue, CL_QUEUE_PROPERTIES, sizeof props, &props, NULL) != CL_SUCCESS)
    return 0;
  return (props & CL_QUEUE_OUT_OF_ORDER_EXEC_MODE_ENABLE) == 0;
}

static void slot_clear(clnorm_scratch *s) {
  if (s->mem)
    clReleaseMemObject(s->mem);
  if (s->queue)
    clReleaseCommandQueue(s->queue);
  s->queue = NULL;
  s->mem = NULL;
  s->bytes = 0;
  s->last_use = 0;
  atomic_store_explicit(&s->busy, 0, memory_order_relaxed);
}

/* The slot for `queue` (taken: busy), or -1 when the call must allocate its own buffer. Under
 * ctx->lock. */
static int slot_take(clnorm_ctx *ctx, cl_command_queue queue) {
  int free_slot = -1, oldest = -1;
  for (int i = 0; i < CLNORM_SCRATCH_SLOTS; i++) {
    clnorm_scratch *s = &ctx->scratch[i];
    /* acquire: a slot seen idle is one its last taker no longer uses */
    const int busy = atomic_load_explicit(&s->busy, memory_order_acquire);
    if (s->queue == queue) {
      if (busy)
        return -1;
      atomic_store_explicit(&s->busy, 1, memory_order_relaxed);
      return i;
    }
    if (!s->queue && free_slot < 0)
      free_slot = i;
    if (s->queue && !busy && (oldest < 0 || s->last_use < ctx->scratch[oldest].last_use))
      oldest = i;
  }
  const int i = free_slot >= 0 ? free_slot : oldest;
  if (i < 0 || !in_order(queue) || clRetainCommandQueue(queue) != CL_SUCCESS)
    return -1;
  slot_clear(&ctx->scratch[i]);
  ctx->scratch[i].queue = queue;
  atomic_store_explicit(&ctx->scratch[i].busy, 1, memory_order_relaxed);
  return i;
}

cl_mem clnorm__scratch_take(clnorm_ctx *ctx, cl_command_queue queue, size_t bytes, int *slot,
                            cl_int *err) {
  clnorm__mutex_lock(&ctx->lock);
  *slot = slot_take(ctx, queue);
  cl_mem mem = NULL;
  if (*slot < 0) {
    clnorm__mutex_unlock(&ctx->lock);
    return clCreateBuffer(ctx->context, CL_MEM_READ_WRITE, bytes, NULL, err);
  }
  clnorm_scratch *s = &ctx->scratch[*slot];
  s->last_use = ++ctx->scratch_tick;
  *err = CL_SUCCESS;
  if (s->bytes < bytes) {
    /* Grown by half at least, so that calls of slowly growing sizes do not allocate each time.
     * The old buffer goes when the kernels that use it are done (clReleaseMemObject). */
    size_t want = s->bytes + s->bytes / 2;
    want = want > bytes ? want : bytes;
    cl_mem grown = clCreateBuffer(ctx->context, CL_MEM_READ_WRITE, want, NULL, err);
    if (*err != CL_SUCCESS && want > bytes)
      grown = clCreateBuffer(ctx->context, CL_MEM_READ_WRITE, want = bytes, NULL, err);
    if (*err == CL_SUCCESS) {
      if (s->mem)
        clReleaseMemObject(s->mem);
      s->mem = grown;
      s->bytes = want;
    }
  }
  if (*err == CL_SUCCESS) {
    *err = clRetainMemObject(s->mem);
    mem = *err == CL_SUCCESS ? s->mem : NULL;
  }
  if (!mem) {
    atomic_store_explicit(&s->busy, 0, memory_order_relaxed);
    *slot = -1;
  }
  clnorm__mutex_unlock(&ctx->lock);
  return mem;
}

/* No lock: the taker touches nothing of the slot but this flag (release: after its enqueues). */
void clnorm__scratch_give(clnorm_ctx *ctx, int slot) {
  if (slot >= 0)
    atomic_store_explicit(&ctx->scratch[slot].busy, 0, memory_order_release);
}

void clnorm__scratch_free(clnorm_ctx *ctx) {
  for (int i = 0; i < CLNORM_SCRATCH_SLOTS; i++)
    slot_clear(&ctx->scratch[i]);
}
