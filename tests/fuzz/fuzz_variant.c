/* libFuzzer target: forced variants (clnorm_variant_check, clnorm_run) with arbitrary field values
 * on the real device. Every variant the library accepts must be one its kernels can run: each
 * accepted variant is checked against the contract restated here in 64-bit arithmetic (so a
 * check that wraps in 32 bits is caught without running anything), and runs on small buffers
 * against the float64 reference (tests/op_case.c); every rejected one must come back as
 * CLNORM_E_UNSUPPORTED or CLNORM_E_INVALID_ARG with a message.
 *
 * Building a program takes PoCL about a second, so only the first FUZZ_VARIANT_BUILDS (default
 * 8) distinct accepted programs of a process are built and run; later inputs run when their
 * program is one of those (from the context's cache) and are otherwise held to the restated
 * contract alone. Rejections build nothing and are all checked.
 *
 * Input (zero-padded): op, dtype, rows, a flags byte, cols (8 bytes), a layout byte, then for
 * each of wg, tpr, vec, hold, reduce, stats a mode byte and 4 value bytes (mode % 4: the value
 * as it is, 1 << (value % 32), 1 << (value % 32) plus 1 to 3, or value % 65), then a synthetic
 * device (max work-group size, local memory, sub-groups, NVIDIA) that the pure checks also see. */
#define _POSIX_C_SOURCE 200809L
#include "fuzz_check.h"
#include "internal.h"
#include "op_case.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define RUN_MAX_COLS 600 /* small real buffers: a run takes milliseconds */
#define MAX_BUILT 256

static harness h;
static size_t build_budget = 8;
static uint64_t built[MAX_BUILT]; /* programs run so far: (op, dtype, effective variant) keys */
static size_t built_count;

int LLVMFuzzerInitialize(int *argc, char ***argv) {
  const char *budget = getenv("FUZZ_VARIANT_BUILDS");
  if (budget && *budget)
    build_budget = (size_t)strtoul(budget, NULL, 10);
  if (build_budget > MAX_BUILT)
    build_budget = MAX_BUILT;
  harness_open(&h, "fuzz_variant");
  return 0;
}

typedef struct reader {
  const uint8_t *data;
  size_t size, at;
} reader;

static uint64_t take(reader *r, int bytes) {
  uint64_t v = 0;
  for (int i = 0; i < bytes; i++, r->at++)
    v |= (uint64_t)(r->at < r->size ? r->data[r->at] : 0) << (8 * i);
  return v;
}

static unsigned take_field(reader *r) {
  const unsigned mode = (unsigned)take(r, 1) % 4;
  const uint32_t value = (uint32_t)take(r, 4);
  switch (mode) {
  case 0:
    return value;
  case 1:
    return 1u << (value % 32);
  case 2:
    return (1u << (value % 32)) + 1 + (value >> 8) % 3;
  default:
    return value % 65;
  }
}

static int pow2(uint64_t v) { return v != 0 && (v & (v - 1)) == 0; }

/* The variant as the call runs it (dispatch.c's effective()): vec narrowed, hold * vec kept. */
static clnorm_variant effective(const clnorm_device_info *info, const clnorm_call *call,
                                const clnorm_variant *v) {
  clnorm_variant e = *v;
  e.vec = clnorm__call_vec(info, call, v->vec);
  e.hold = v->hold * (v->vec / e.vec);
  return e;
}

/* What the kernels need of a variant the checks accepted, in 64-bit arithmetic: fails the
 * input when an accepting check let through something outside it. */
static void check_contract(const clnorm_device_info *info, clnorm_op op, const clnorm_variant *v,
                           const clnorm_variant *e, size_t cols, const char *device) {
  char text[160];
  clnorm_variant_format(v, text, sizeof text);
  /* every op: the backward holds its weight-gradient sums in as many (cl/backward.cl) */
  const uint64_t budget = CLNORM_HOLD_MAX_FLOATS;
  (void)op;
  if (!pow2(v->wg) || !pow2(v->tpr) || !pow2(v->vec) || v->vec > 16 || v->tpr > v->wg)
    fuzz_fail("%s: %s accepted with wg, tpr or vec out of range", device, text);
  if (v->wg > info->max_wg)
    fuzz_fail("%s: %s accepted above max work-group size %zu", device, text, info->max_wg);
  if (v->tpr > 1 && (uint64_t)v->wg * 3 * sizeof(float) > info->local_mem)
    fuzz_fail("%s: %s accepted beyond local memory %llu", device, text,
              (unsigned long long)info->local_mem);
  if ((unsigned)v->reduce > CLNORM_REDUCE_NVSHFL || (unsigned)v->stats > CLNORM_STATS_TWOPASS)
    fuzz_fail("%s: %s accepted with an unknown reduce or stats", device, text);
  if ((uint64_t)v->hold * v->vec > budget || (uint64_t)e->hold * e->vec > budget)
    fuzz_fail("%s: %s accepted with hold * vec above %llu floats", device, text,
              (unsigned long long)budget);
  /* a held row fits: ceil((cols / vec) / tpr) <= hold */
  if (e->hold > 0 && (uint64_t)e->hold * e->tpr < (uint64_t)(cols / e->vec))
    fuzz_fail("%s: %s accepted for cols=%zu, which does not fit hold", device, text, cols);
}

/* The library's own checks as usable() applies them; 1 when they accept. */
static int accepted(const clnorm_device_info *info, const clnorm_call *call,
                    const clnorm_variant *v, clnorm_variant *e) {
  char why[160];
  if (!clnorm__variant_device_ok(info, call->op, v, why, sizeof why))
    return 0;
  *e = effective(info, call, v);
  return clnorm__variant_call_ok(e, call->cols, why, sizeof why);
}

static int built_find(uint64_t key) {
  for (size_t i = 0; i < built_count; i++)
    if (built[i] == key)
      return 1;
  return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  reader r = {data, size, 0};
  const clnorm_op op = (clnorm_op)(take(&r, 1) % CLNORM_OP_COUNT);
  const clnorm_dtype dtype = (clnorm_dtype)(take(&r, 1) % 3);
  const size_t rows = 1 + (size_t)take(&r, 1) % 8;
  const unsigned flags = (unsigned)take(&r, 1);
  const uint64_t raw_cols = take(&r, 8);
  const unsigned layout = (unsigned)take(&r, 1);
  /* flags bit 0: cols as given (up to 2^64 - 1: the checks' arithmetic); else a small row */
  const size_t cols = flags & 1 ? (size_t)raw_cols : 1 + (size_t)(raw_cols % RUN_MAX_COLS);
  clnorm_variant v;
  v.wg = take_field(&r);
  v.tpr = take_field(&r);
  v.vec = take_field(&r);
  v.hold = take_field(&r);
  v.reduce = (clnorm_reduce)take_field(&r);
  v.stats = (clnorm_stats)take_field(&r);

  /* A synthetic device: the pure checks only (nothing runs on it). */
  clnorm_device_info fake = h.ctx->info;
  fake.max_wg = (size_t)1 << take(&r, 1) % 33;
  fake.local_mem = (cl_ulong)take(&r, 5);
  const unsigned traits = (unsigned)take(&r, 1);
  fake.has_subgroups = traits & 1;
  fake.is_nvidia = (traits >> 1) & 1;
  const clnorm_call bare = {.op = op, .rows = rows, .cols = cols, .dtype = dtype};
  clnorm_variant e;
  if (accepted(&fake, &bare, &v, &e)) {
    check_contract(&fake, op, &v, &e, cols, "synthetic device");
    clnorm__split_count(&fake, &bare, &e);
    clnorm__bwd_tiles(&e, cols);
  }

  /* The real device: the public checks must agree with the internal ones. */
  const clnorm_device_info *info = &h.ctx->info;
  if (cols == 0 || cols > UINT32_MAX || !accepted(info, &bare, &v, &e)) {
    /* refused before any build (a bad call or variant): the public check says so, with a
     * reason */
    const clnorm_status st = clnorm_variant_check(h.ctx, &bare, &v);
    const char *msg = clnorm_ctx_errmsg(h.ctx);
    if ((st != CLNORM_E_UNSUPPORTED && st != CLNORM_E_INVALID_ARG) || !*msg) {
      char text[160];
      clnorm_variant_format(&v, text, sizeof text);
      fuzz_fail("%s %s cols=%zu: %s is refused by the variant checks, but "
                "clnorm_variant_check gave %s \"%s\"",
                clnorm_op_name(op), clnorm_dtype_name(dtype), cols, text, clnorm_status_string(st),
                msg);
    }
    return 0;
  }
  check_contract(info, op, &v, &e, cols, h.name);
  if (cols > RUN_MAX_COLS)
    return 0; /* accepted, but too long a row to run in a fuzz loop */
  const uint64_t key = clnorm__variant_key(op, dtype, &e);
  const int fresh = !built_find(key);
  if (fresh) {
    if (built_count >= build_budget)
      return 0;
    built[built_count++] = key;
  }

  oc_case c;
  oc_default(&c, op, dtype, rows, cols);
  c.forced = 1;
  c.variant = v;
  c.data_seed = raw_cols;
  /* offsets and strides that narrow the vector width where the device needs alignment */
  c.m[OC_X].offset = layout % 4;
  c.m[OC_Y].offset = (layout >> 2) % 4;
  c.m[OC_X].stride = (layout >> 4) % 4 ? cols + (layout >> 4) % 4 : 0;
  char msg[1024];
  if (fresh) {
    /* named before it builds: a compiler that aborts the process (PoCL 3.1 once did, in CI)
     * leaves no artifact, only this line at the end of the log */
    char text[512];
    oc_format(&c, text, sizeof text);
    fprintf(stderr, "fuzz_variant: building %s\n", text);
  }
  const oc_result res = oc_run(&h, &c, NULL, msg, sizeof msg);
  if (res == OC_FAIL || (res == OC_UNSUPPORTED && !*msg)) {
    char text[512];
    oc_format(&c, text, sizeof text);
    fuzz_fail("%s: %s", text, res == OC_FAIL ? msg : "refused without a message");
  }
  return 0;
}
