/* clnorm_variant.h: the variant space, for tuners and tests.
 *
 * A variant is one way of running an operation: the parameters its kernel is compiled with.
 * The library's dispatcher picks one per call; this header lets a caller enumerate the variants
 * a device accepts, check one against a call, and force one for a call. */
#ifndef CLNORM_VARIANT_H
#define CLNORM_VARIANT_H

#include "clnorm.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Each list below gives an enum its names (name, value, text), the names that clnorm_op_name(),
 * clnorm_dtype_name(), clnorm_choice_string() and clnorm_variant_format() print and the tuning
 * database stores: one place, so the two cannot drift. */
#define CLNORM_OP_MAP(X)                                                                           \
  X(CLNORM_OP_LAYERNORM, 0, "layernorm")                                                           \
  X(CLNORM_OP_RMSNORM, 1, "rmsnorm")                                                               \
  X(CLNORM_OP_ADD_LAYERNORM, 2, "add_layernorm") /* clnorm_add_layernorm */                        \
  X(CLNORM_OP_ADD_RMSNORM, 3, "add_rmsnorm")     /* clnorm_add_rmsnorm */                          \
  X(CLNORM_OP_LAYERNORM_BWD, 4, "layernorm_bwd") /* clnorm_layernorm_backward */                   \
  X(CLNORM_OP_RMSNORM_BWD, 5, "rmsnorm_bwd")     /* clnorm_rmsnorm_backward */
typedef enum clnorm_op { CLNORM_OP_MAP(CLNORM_ENUMERATOR) } clnorm_op;
#define CLNORM_OP_COUNT 6

/*   LOCAL     local-memory tree (portable)
 *   SUBGROUP  sub_group_reduce_add (cl_khr_subgroups), one row per group
 *   NVSHFL    warp shuffle through inline PTX (NVIDIA's platform) */
#define CLNORM_REDUCE_MAP(X)                                                                       \
  X(CLNORM_REDUCE_LOCAL, 0, "local")                                                               \
  X(CLNORM_REDUCE_SUBGROUP, 1, "subgroup")                                                         \
  X(CLNORM_REDUCE_NVSHFL, 2, "nvshfl")
typedef enum clnorm_reduce { CLNORM_REDUCE_MAP(CLNORM_ENUMERATOR) } clnorm_reduce;

/*   WELFORD  Welford per work-item, Chan merge across work-items
 *   TWOPASS  mean first, then sum of squared deviations (a row re-read by one work-item: both
 *            sums in one pass where the row's first element is near its mean, cl/forward.cl) */
#define CLNORM_STATS_MAP(X)                                                                        \
  X(CLNORM_STATS_WELFORD, 0, "welford")                                                            \
  X(CLNORM_STATS_TWOPASS, 1, "twopass")
typedef enum clnorm_stats { CLNORM_STATS_MAP(CLNORM_ENUMERATOR) } clnorm_stats;

typedef struct clnorm_variant {
  unsigned wg;          /* work-group size */
  unsigned tpr;         /* work-items per row; divides wg. 1: one work-item per row, no barriers */
  unsigned vec;         /* widest vector width (1, 2, 4, 8, 16); a call narrows it to what the
                           alignment of its offsets and strides allows */
  unsigned hold;        /* vectors of the row each work-item keeps in private memory (x read
                           once; backward: x and dy, and the weight-gradient sums kept in
                           private memory across rows); 0: the row is re-read from global
                           memory */
  clnorm_reduce reduce; /* how work-items of one row combine partial results (tpr > 1) */
  clnorm_stats stats;   /* LayerNorm statistics; RMSNorm and backward variants say WELFORD */
} clnorm_variant;

/* One operation, fully described: the arguments of the clnorm_* entry point of `op`.
 * Forward ops: x in, y out, mean and rstd out. Add ops also: residual in, sum_out out (buf NULL:
 * not wanted). Backward ops: dy and x in, y is dx (out), mean and rstd are inputs, dgamma and
 * dbeta out; eps is unused. Fields an op does not use (beta and mean for RMSNorm, residual for
 * the others, ...) must be NULL / zero. */
typedef struct clnorm_call {
  clnorm_op op;
  size_t rows, cols;
  clnorm_dtype dtype;
  float eps;
  clnorm_rows x, y;
  cl_mem gamma, beta, mean, rstd;
  clnorm_rows residual, sum_out; /* add ops */
  clnorm_rows dy;                /* backward ops */
  cl_mem dgamma, dbeta;          /* backward ops */
} clnorm_call;

/* Why the dispatcher chose a variant, the levels it tries in this order (docs/TUNING.md,
 * "Where a choice comes from"): TUNED and NEAREST (the user's database, this device and driver),
 * TUNED_OTHER_DRIVER (the user's database, this device under another driver version), SYSTEM and
 * SYSTEM_OTHER_DRIVER (the read-only system database, likewise), BUILTIN (the shipped table, this
 * model and driver family), BUILTIN_SIBLING (the shipped table, another model of the same
 * architecture), BUILTIN_VENDOR (the shipped defaults of the vendor and driver family),
 * HEURISTIC. Values are frozen: new ones are added at the end. */
#define CLNORM_CHOICE_MAP(X)                                                                       \
  X(CLNORM_CHOICE_FORCED, 0, "forced")                                                             \
  X(CLNORM_CHOICE_TUNED, 1, "tuned")                                                               \
  X(CLNORM_CHOICE_NEAREST, 2, "nearest")                                                           \
  X(CLNORM_CHOICE_BUILTIN, 3, "builtin")                                                           \
  X(CLNORM_CHOICE_HEURISTIC, 4, "heuristic")                                                       \
  X(CLNORM_CHOICE_TUNED_OTHER_DRIVER, 5, "tuned (other driver)")                                   \
  X(CLNORM_CHOICE_SYSTEM, 6, "system")                                                             \
  X(CLNORM_CHOICE_SYSTEM_OTHER_DRIVER, 7, "system (other driver)")                                 \
  X(CLNORM_CHOICE_BUILTIN_SIBLING, 8, "builtin (sibling)")                                         \
  X(CLNORM_CHOICE_BUILTIN_VENDOR, 9, "builtin (vendor)")
typedef enum clnorm_choice { CLNORM_CHOICE_MAP(CLNORM_ENUMERATOR) } clnorm_choice;

/* Runs `call`. force == NULL: the dispatcher chooses; otherwise `*force` is used, and a variant
 * this device or call cannot run gives CLNORM_E_UNSUPPORTED (nothing enqueued, errmsg says why)
 * rather than another variant. Statuses as clnorm_layernorm. */
CLNORM_API clnorm_status clnorm_run(clnorm_ctx *ctx, cl_command_queue queue,
                                    const clnorm_call *call, const clnorm_variant *force,
                                    cl_uint num_wait, const cl_event *wait_list, cl_event *event);

/* clnorm_run, with *first: the event of the call's first kernel (a reference of the caller's, the
 * same event as *event where the call enqueued one kernel; rows == 0: the marker *event is). On a
 * queue with profiling, first's CL_PROFILING_COMMAND_START to event's CL_PROFILING_COMMAND_END is
 * what the call's kernels took, without the gap a marker enqueued before the call would add (about
 * 9 us on NVIDIA's OpenCL). first NULL: clnorm_run; with first, event must not be NULL
 * (CLNORM_E_INVALID_ARG). */
CLNORM_API clnorm_status clnorm_run_span(clnorm_ctx *ctx, cl_command_queue queue,
                                         const clnorm_call *call, const clnorm_variant *force,
                                         cl_uint num_wait, const cl_event *wait_list,
                                         cl_event *first, cl_event *event);

/* Writes up to `cap` variants of `op` on `dtype` that this device accepts (device limits and
 * extensions; a variant may still fail its build) into out, in a fixed order; returns how many
 * there are in all. out may be NULL when cap is 0. */
CLNORM_API size_t clnorm_variant_list(const clnorm_ctx *ctx, clnorm_op op, clnorm_dtype dtype,
                                      clnorm_variant *out, size_t cap);

/* Static name of an op ("layernorm", "rmsnorm", "add_layernorm", "add_rmsnorm",
 * "layernorm_bwd", "rmsnorm_bwd"); "unknown" for other values. */
CLNORM_API const char *clnorm_op_name(clnorm_op op);

/* Static name of a dtype ("f32", "f16", "bf16"); "unknown" for other values. */
CLNORM_API const char *clnorm_dtype_name(clnorm_dtype dtype);

/* CLNORM_OK when `v` can run `call` on this device, else CLNORM_E_UNSUPPORTED or
 * CLNORM_E_INVALID_ARG (bad call) with the reason in errmsg. Builds the kernel if needed
 * (CLNORM_E_BUILD, and the work-group size the built kernel allows is checked). */
CLNORM_API clnorm_status clnorm_variant_check(clnorm_ctx *ctx, const clnorm_call *call,
                                              const clnorm_variant *v);

/* The variant the dispatcher would run for `call`, with the vector width narrowed as the call's
 * alignment requires, and why it was chosen. Either output may be NULL. */
CLNORM_API clnorm_status clnorm_choose(clnorm_ctx *ctx, const clnorm_call *call,
                                       clnorm_variant *out, clnorm_choice *why);

/* The variant the built-in heuristic picks for `call` (ignoring tuned and shipped results), as
 * the call would run it (builds it; a variant whose build fails gives way to a safer one, as in
 * dispatch). CLNORM_E_INVALID_ARG for a bad call. */
CLNORM_API clnorm_status clnorm_heuristic(clnorm_ctx *ctx, const clnorm_call *call,
                                          clnorm_variant *out);

/* Replaces the context's tuned table with this device's winners from the tuning database at
 * `path` (NULL: $CLNORM_DB, else $XDG_CACHE_HOME/clnorm/tuning.db, else
 * ~/.cache/clnorm/tuning.db; on Windows %LOCALAPPDATA%\clnorm\tuning.db). clnorm_ctx_create
 * does this once with NULL, and reads the system database once ($CLNORM_SYSTEM_DB, else the one
 * installed with the library; docs/API.md). Results of this device under another driver version
 * are a later level (CLNORM_CHOICE_TUNED_OTHER_DRIVER); results of other kernel sources are never
 * used.
 * On failure (CLNORM_E_DB: missing, unreadable, corrupt or newer database) the table is left as
 * it was and errmsg says why; calls keep working from the built-in table and the heuristic.
 * Safe while other threads make calls. */
CLNORM_API clnorm_status clnorm_ctx_load_tuning(clnorm_ctx *ctx, const char *path);

/* How many tuned results the context uses (after clnorm_ctx_load_tuning). */
CLNORM_API size_t clnorm_ctx_tuned_count(const clnorm_ctx *ctx);

/* Static name of a choice reason ("forced", "tuned", "nearest", "tuned (other driver)", "system",
 * "builtin", "builtin (sibling)", ..., "heuristic": CLNORM_CHOICE_MAP). */
CLNORM_API const char *clnorm_choice_string(clnorm_choice why);

/* Writes a short description such as "wg=256 tpr=256 vec=4 hold=4 reduce=local stats=welford"
 * into buf (always NUL-terminated when size > 0); returns the length it needed. */
CLNORM_API int clnorm_variant_format(const clnorm_variant *v, char *buf, size_t size);

#ifdef __cplusplus
}
#endif
#endif /* CLNORM_VARIANT_H */
