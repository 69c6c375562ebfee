#include "tool_access.h"
#include "internal.h"

int clnorm__ctx_stream_stores(const clnorm_ctx *ctx) { return ctx->info.stream_stores; }

void clnorm__ctx_bincache_counts(const clnorm_ctx *ctx, clnorm_bincache_counts *out) {
  const clnorm_bincache_stats *b = &ctx->bincache;
  *out = (clnorm_bincache_counts){atomic_load(&b->hits), atomic_load(&b->misses),
                                  atomic_load(&b->rejected), atomic_load(&b->written),
                                  atomic_load(&b->write_failed)};
}
