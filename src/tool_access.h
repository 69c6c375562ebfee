/* What clnorm's own tools (tuner/, bench/) read of a context beyond the public API. The context's
 * fields stay private to src/: a tool calls these and never depends on the struct's layout. Not
 * installed; the tools link the static library. */
#ifndef CLNORM_TOOL_ACCESS_H
#define CLNORM_TOOL_ACCESS_H

#include "clnorm.h"

/* 1 when the context's kernels use streaming stores (CLNORM_STREAM_STORES, the device's
 * default): the copy that tools measure as the yardstick then stores the same way. */
int clnorm__ctx_stream_stores(const clnorm_ctx *ctx);

/* What the on-disk program cache did for the context so far. */
typedef struct clnorm_bincache_counts {
  unsigned long hits;         /* programs loaded from a cached binary */
  unsigned long misses;       /* no entry for the program */
  unsigned long rejected;     /* an entry damaged, foreign or refused by the driver */
  unsigned long written;      /* entries written after a build from source */
  unsigned long write_failed; /* entries that could not be written */
} clnorm_bincache_counts;
void clnorm__ctx_bincache_counts(const clnorm_ctx *ctx, clnorm_bincache_counts *out);

#endif
