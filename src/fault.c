/* Test-only failure injection (internal.h: clnorm__fault_inject): the armed faults are kept in
 * the context under its lock. */
#include "internal.h"

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
