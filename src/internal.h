/* Internal declarations shared by the library's source files; never installed. */
#ifndef CLNORM_INTERNAL_H
#define CLNORM_INTERNAL_H

#include "clnorm.h"
#include "clnorm_variant.h"

#include "platform.h"
#include <stdatomic.h>
#include <stdint.h>

/* What the library knows of its device, read once at context creation. */
typedef struct clnorm_device_info {
  char name[256];
  char vendor[256];
  char platform[256];
  cl_uint vendor_id;
  cl_device_type type;
  size_t max_wg;
  cl_ulong local_mem;
  cl_uint compute_units;
  int has_subgroups; /* cl_khr_subgroups */
  int is_nvidia;     /* NVIDIA's CUDA platform: inline PTX available */
  /* NVIDIA's compute capability as major * 10 + minor (90: Hopper), 1 where the platform is
   * NVIDIA's but the query failed, 0 elsewhere: the kernels' -DPTX, which gates the PTX each
   * architecture has (cvt.rn.bf16x2.f32 from 80). */
  unsigned ptx_sm;
  /* What the built-in table matches besides the name (clnorm__driver_family,
   * clnorm__device_arch): "CUDA" and "sm_90" for an H100 under NVIDIA's OpenCL; arch "" where
   * none is known. */
  char family[32];
  char arch[32];
  char subgroup_std[8]; /* -cl-std for sub-group kernels: CL2.0 or CL3.0 */
  /* Launch every kernel of a program with one global size, whatever the call (the kernels
   * stride over rows and columns): PoCL before 6 asserts when launches of one kernel with
   * different global sizes are in flight at once (docs/DEVICES.md). CLNORM_FIXED_GRID=0/1
   * overrides the detection. */
  int fixed_grid;
  /* Write the outputs with streaming (non-temporal) stores, which skip the cache and the read
   * of each line before its write: PoCL's CPU device, whose clang takes
   * __builtin_nontemporal_store (docs/DEVICES.md: 1.3-1.5x on the 2-core PoCL 3 of the
   * development machine). CLNORM_STREAM_STORES=0/1 overrides. */
  int stream_stores;
  /* Prefetch the row a work-item takes next while it writes the current one (one work-item per
   * row only): PoCL's CPU device, where reads and writes of a core otherwise take turns
   * (docs/DEVICES.md). CLNORM_PREFETCH=0/1 overrides. */
  int prefetch;
  /* float16 vectors of 8 (and of 16 with AVX-512F) convert through x86's F16C instructions where
   * the kernel compiler targets them (-DHWHALF, cl/common.cl), not through the vload_half built-ins:
   * the same bits but for a NaN's payload, fewer instructions (PoCL 5 builds a 16-wide
   * conversion from two 8-wide ones and an insert; docs/DEVICES.md). The kernels take that path
   * only with streaming stores on (it sits in cl/common.cl's STREAM branch). PoCL's CPU device.
   * CLNORM_HW_HALF=0/1 overrides. */
  int hw_half;
  /* 16-bit rows load and store as vectors of uint and convert in registers (-DRAW16,
   * cl/common.cl): NVIDIA's OpenCL compiler makes 2-byte accesses of the vload_half built-ins and
   * 8-byte ones of ushort vectors, where a uint4 moves 16 bytes (docs/DEVICES.md). NVIDIA's
   * platform, where float16 converts through inline PTX. CLNORM_RAW16=0/1 overrides (elsewhere
   * float16 then converts through the built-ins on a register). */
  int raw16;
  /* A kernel compiled for a required work-group size (reqd_work_group_size) runs at that size up
   * to max_wg, whatever CL_KERNEL_WORK_GROUP_SIZE answers: NVIDIA's OpenCL answers 256 for every
   * kernel (driver 580, H100 and H200; a kernel of one multiply too), yet its compiler fits a
   * kernel's registers to the required size and runs it there (docs/DEVICES.md). NVIDIA's
   * platform. CLNORM_REQD_WG=0/1 overrides. */
  int reqd_wg;
  /* The backward's persistent groups ask the L2 cache for the rows they take next, while they
   * work on the current ones (-DBWD_PF=1 on backward programs only, cl/backward.cl): NVIDIA's
   * platform (inline PTX), off unless CLNORM_BWD_PREFETCH=1: on the H200 it won on some shapes and
   * lost on others (docs/PERFORMANCE.md, "Tried and not kept"). */
  int bwd_prefetch;
  /* CLNORM_NV_MAXRREG=N (16 to 255): NVIDIA's -cl-nv-maxrregcount=N on every program (ptxas caps
   * a work-item's registers there, spilling past them), for measuring what occupancy buys; 0 (the
   * default, and off NVIDIA's platform): no cap. In the options, so programs built under a cap are
   * cached apart. */
  unsigned nv_maxrreg;
  /* CLNORM_BWD_STRIP: the backward's column strips for wide rows (clnorm__bwd_strip_ranges): 1
   * on (=1), -1 off (=0), 0 (unset) where the rule has them (NVIDIA's wide rows) */
  int bwd_strip;
  /* Build with -w: PoCL's clang prints "N warnings generated." to the process's stderr for every
   * program, the warnings being -Wpsabi notes on float16 arguments of inline functions where the
   * target has no AVX-512 (harmless: everything is inlined), and PoCL rejects -Wno-psabi
   * (docs/DEVICES.md). PoCL's CPU device. */
  int no_warnings;
  /* Vectors load and store at any element address (vloadN/vstoreN, -DUNALIGNED): a call keeps its
   * variant's vector width whatever its offsets and strides (odd cols included), where otherwise
   * the width narrows to their alignment, down to scalar code. CPU devices, where an unaligned
   * vector access costs what an aligned one does (docs/DEVICES.md). CLNORM_UNALIGNED=0/1
   * overrides. */
  int unaligned;
  /* Bytes a work-group's private row buffers may take in all (0: no buffer; -DRBUF, RB in
   * cl/common.cl): a CPU's fused-add kernels with one work-item per row keep a 16-bit row's values
   * (x + residual, rounded) as floats, so that the later passes neither re-read both rows nor
   * convert and round again. PoCL gives every work-item of a group its own copy of a private
   * array, on the stack of the thread that runs the group (a group of 256 work-items with 32 KiB
   * each overflowed the 8 MiB stack: docs/DEVICES.md), so each program's buffer is this budget
   * over its work-group size (clnorm__row_buffer). PoCL's CPU device: 2 MiB, or a quarter of the
   * stack limit where that is less; 0 everywhere else. CLNORM_ROW_BUFFER=0/1 overrides. */
  size_t rbuf_bytes;
  /* The backward kernel's persistent grid on a GPU, in groups per compute unit: 0 for the rule of
   * clnorm__bwd_groups (src/launch.c). CLNORM_BWD_GROUPS_PER_CU=1..64 sets it (measurements). */
  unsigned bwd_groups_per_cu;
  /* Columns per work-item of bwd_reduce: 16 on CPUs (a 64-byte line of each partial row and one
   * vector add), 1 on GPUs (groups of lanes over the partial rows, cl/backward.cl).
   * CLNORM_REDUCE_VEC=1/16 overrides (the tests run the GPU's on PoCL). */
  unsigned reduce_vec;
  /* bwd_reduce's work-group size (src/launch.c): with reduce_vec 1, 256 work-items or the largest
   * power of two below max_wg (8 at the least); with 16, 4. */
  size_t reduce_local;
} clnorm_device_info;

/* A built program and its kernel objects. A cl_kernel's arguments are not thread-safe, so a
 * call takes a kernel from the free list, sets its arguments, enqueues and puts it back. */
typedef struct clnorm_program {
  uint64_t key;
  char *options;
  cl_program program; /* NULL when the build failed */
  int ready;          /* 0 while a thread builds it (others wait on ctx->built) */
  clnorm_status status;
  char *log; /* build log or the reason the variant cannot run here */
  size_t kernel_wg;
  int split; /* the split-row kernels (cl/split.cl; the end of cl/backward.cl for backward ops);
              * 2: the backward's column strips (cl/strip.cl) */
  cl_kernel *free_kernels[2]; /* per kernel of the program: the op's, the reduction's */
  size_t free_count[2], free_cap[2];
  struct clnorm_program *next;
} clnorm_program;

/* One row of the tuned table: the winner for an op, dtype, cols and row class, and the least and
 * largest row counts of the class at which it was measured not to lose to the heuristic (its A/B
 * results; without them, the row count it was measured at): clnorm__tuned_find uses it only at
 * row counts within CLNORM_ROWS_NEAR_RATIO of that range. `against`: the heuristic's variant its
 * A/Bs compared it with; the choice (choose.c) uses it only where the heuristic's variant at the
 * call is that one (against_known 0, not known: where it is the one of rows_lo or rows_hi). */
typedef struct clnorm_tuned {
  clnorm_op op;
  clnorm_dtype dtype;
  size_t cols;
  unsigned row_class;
  clnorm_variant variant;
  size_t rows_lo, rows_hi;
  clnorm_variant against;
  int against_known;
} clnorm_tuned;

/* A shipped winner (src/builtin_table.h, written by `normtune builtin`): for the device of this
 * vendor id, CL_DEVICE_NAME and driver family; a device of the same vendor, family and
 * architecture without an entry of its own for the shape falls back to it (a sibling). device
 * "": the vendor's default for the family, for every device of it. */
typedef struct clnorm_builtin {
  cl_uint vendor_id;
  const char *device;
  const char *family;
  const char *arch; /* "": not known; no sibling falls back to this entry */
  clnorm_tuned entry;
} clnorm_builtin;

/* The tables the choice reads, in the order its levels try them (choose.c). Each is sorted by
 * op, dtype, row class, cols, one entry per shape. */
typedef enum clnorm_table_id {
  CLNORM_TABLE_TUNED,        /* the user's database: this device and driver */
  CLNORM_TABLE_TUNED_OTHER,  /* the user's database: this device under other driver versions */
  CLNORM_TABLE_SYSTEM,       /* the system database: this device and driver */
  CLNORM_TABLE_SYSTEM_OTHER, /* the system database: this device, other driver versions */
  CLNORM_TABLE_BUILTIN,      /* the built-in table: this model and driver family */
  CLNORM_TABLE_SIBLING,      /* the built-in table: another model of the same architecture */
  CLNORM_TABLE_VENDOR,       /* the built-in table: the vendor's default for the family */
  CLNORM_TABLES
} clnorm_table_id;

typedef struct clnorm_table {
  clnorm_tuned *rows; /* malloc'd, owned by the context */
  size_t count;
} clnorm_table;

/* What the on-disk program cache (bincache.c) did for one context; read by the tests. */
typedef struct clnorm_bincache_stats {
  atomic_ulong hits;         /* programs loaded from a cached binary */
  atomic_ulong misses;       /* no entry for the program */
  atomic_ulong rejected;     /* an entry damaged, foreign or refused by the driver */
  atomic_ulong written;      /* entries written after a build from source */
  atomic_ulong write_failed; /* entries that could not be written */
} clnorm_bincache_stats;

#define CLNORM_PROGRAM_BUCKETS 256
#define CLNORM_LOGGED 512
#define CLNORM_UNUSABLE 128

/* Test-only failure injection (clnorm__fault_inject): what a test makes fail. */
typedef enum clnorm_fault_kind {
  CLNORM_FAULT_BUILD,   /* a program build (program.c) fails as clBuildProgram would */
  CLNORM_FAULT_ENQUEUE, /* clEnqueueNDRangeKernel returns the error without being called */
  CLNORM_FAULT_ALLOC,   /* clCreateBuffer of a call's scratch returns the error, not called */
  CLNORM_FAULT_KINDS
} clnorm_fault_kind;
#define CLNORM_FAULT_ANY UINT64_MAX /* program key that matches every program */

typedef struct clnorm_fault {
  unsigned skip, count; /* pass `skip` matching operations, then fail `count` */
  cl_int err;
  uint64_t key;   /* the program (clnorm_program.key) whose operations fail, or CLNORM_FAULT_ANY */
  unsigned fired; /* failures injected so far */
} clnorm_fault;

/* A variant that failed at launch with CL_OUT_OF_RESOURCES or CL_INVALID_WORK_GROUP_SIZE: not
 * chosen again by the dispatcher for that program (op, dtype, variant, split) and row class. */
typedef struct clnorm_unusable {
  uint64_t key; /* the program's key and the row class (dispatch.c: unusable_key) */
  cl_int err;   /* the launch's error, for the log */
} clnorm_unusable;

/* A scratch buffer the context keeps for one in-order command queue (src/scratch.c). */
#define CLNORM_SCRATCH_SLOTS 8
typedef struct clnorm_scratch {
  cl_command_queue queue; /* retained; NULL: a free slot */
  cl_mem mem;
  size_t bytes;
  uint64_t last_use; /* ctx->scratch_tick when last taken: the oldest idle slot is reused */
  /* A call is enqueueing with it: set under ctx->lock (clnorm__scratch_take), cleared without it
   * (clnorm__scratch_give), the one field the taker writes after taking */
  atomic_int busy;
} clnorm_scratch;

struct clnorm_ctx {
  cl_context context;
  cl_device_id device;
  clnorm_device_info info;
  clnorm_mutex lock; /* guards the program table and each program's free list */
  clnorm_cond built; /* signalled when a program's build ends */
  clnorm_program *programs[CLNORM_PROGRAM_BUCKETS];
  clnorm_table tables[CLNORM_TABLES]; /* each replaced whole under lock */
  uint64_t logged[CLNORM_LOGGED]; /* shape classes whose choice was logged (0: empty slot) */
  char *bincache_dir;             /* the program binary cache's directory; NULL: off */
  char *bincache_device;          /* the device and driver part of its keys */
  clnorm_bincache_stats bincache;
  clnorm_unusable unusable[CLNORM_UNUSABLE]; /* written under lock */
  _Atomic size_t unusable_count;             /* read without the lock while it is 0 */
  int faults_armed;                          /* any fault pending: read without the lock */
  clnorm_fault faults[CLNORM_FAULT_KINDS];   /* under lock */
  clnorm_scratch scratch[CLNORM_SCRATCH_SLOTS]; /* under lock */
  uint64_t scratch_tick;
};

/* status.c: the thread's error message for a context. */
clnorm_status clnorm__fail(const clnorm_ctx *ctx, clnorm_status status, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(CLNORM_PRINTF_FORMAT, 3, 4)))
#endif
    ;
void clnorm__clear_error(const clnorm_ctx *ctx);
const char *clnorm__cl_error_name(cl_int err);

#define RETURN_IF(ctx, cond, status, ...)                                                          \
  do {                                                                                             \
    if (cond)                                                                                      \
      return clnorm__fail((ctx), (status), __VA_ARGS__);                                           \
  } while (0)

#define CHECK_CL(ctx, call)                                                                        \
  do {                                                                                             \
    const cl_int check_cl_err_ = (call);                                                           \
    if (check_cl_err_ != CL_SUCCESS)                                                               \
      return clnorm__fail((ctx), CLNORM_E_OPENCL, "%s failed: %s (%d)", #call,                     \
                          clnorm__cl_error_name(check_cl_err_), (int)check_cl_err_);               \
  } while (0)

/* log.c: the level in force (clnorm_get_log_level); a line at `level` when the level in force
 * takes it (no "clnorm: " prefix, no newline). clnorm__log_reread_env: test-only, reads
 * CLNORM_LOG again as on the first use, its warning included. */
int clnorm__log_level(void);
void clnorm__log(clnorm_log_level level, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(CLNORM_PRINTF_FORMAT, 2, 3)))
#endif
    ;
void clnorm__log_reread_env(void);
/* The trace line of a call that was enqueued (clnorm.h, "Logging"): written when `last`
 * completes, with the time from `first`'s start to `last`'s end where the queue profiles. Takes
 * over one reference to each event (they may be the same event, referenced twice). */
void clnorm__trace_call(const clnorm_ctx *ctx, cl_command_queue queue, const clnorm_call *call,
                        const clnorm_variant *v, clnorm_choice why, cl_event first, cl_event last);

/* fault.c: test-only failure injection. The next `count` operations of `kind` on programs
 * matching `key` (CLNORM_FAULT_ANY: all), after `skip` of them, fail with `err`; count 0 disarms
 * the kind. Not thread-safe against calls in flight on ctx: tests arm it between calls.
 * clnorm__fault_fired: the failures of `kind` injected so far (arming resets it). */
void clnorm__fault_inject(clnorm_ctx *ctx, clnorm_fault_kind kind, cl_int err, unsigned skip,
                          unsigned count, uint64_t key);
unsigned clnorm__fault_fired(clnorm_ctx *ctx, clnorm_fault_kind kind);
/* The injected error for the next operation of `kind` on the program `key`, or CL_SUCCESS.
 * CLNORM_FAULT() costs one integer test when nothing is armed. */
cl_int clnorm__fault_take(clnorm_ctx *ctx, clnorm_fault_kind kind, uint64_t key);
#define CLNORM_FAULT(ctx, kind, key)                                                               \
  ((ctx)->faults_armed ? clnorm__fault_take((ctx), (kind), (key)) : CL_SUCCESS)

/* choose.c: the variant to run for a call and its built program (*eff: the variant as the call
 * runs it). A forced variant is used as given or refused; otherwise the levels tuned, nearest
 * tuned, built-in and heuristic are tried in order, each falling back to the next when its
 * variant cannot run, fails to build or failed at launch before in this row class. */
clnorm_status clnorm__choose(clnorm_ctx *ctx, const clnorm_call *call, const clnorm_variant *force,
                             clnorm_variant *eff, clnorm_choice *why, clnorm_program **prog);
/* The heuristic's level alone, with its own fallbacks to safer variants. */
clnorm_status clnorm__heuristic_pick(clnorm_ctx *ctx, const clnorm_call *call, clnorm_variant *eff,
                                     clnorm_program **prog);
/* The info log line of a choice (once per op, dtype, cols and row class; again: after a launch
 * failure, whatever was printed before). */
void clnorm__log_choice(clnorm_ctx *ctx, const clnorm_call *call, const clnorm_variant *v,
                        clnorm_choice why, int again);
/* The set of programs that failed at launch, per row class. _find: whether program_key failed
 * before (*err: with what); _add: 1 when added, 2 when another call had added it, 0 when the set
 * is full; _remove: forgets it. */
int clnorm__unusable_find(clnorm_ctx *ctx, const clnorm_call *call, uint64_t program_key,
                          cl_int *err);
int clnorm__unusable_add(clnorm_ctx *ctx, const clnorm_call *call, uint64_t program_key,
                         cl_int err);
void clnorm__unusable_remove(clnorm_ctx *ctx, const clnorm_call *call, uint64_t program_key);

/* launch.c: the launch plans. */
/* A failed launch, for clnorm_run to decide on a retry with another variant: which program's
 * kernel failed and how, and the call's work already enqueued before it. */
typedef struct clnorm_attempt {
  cl_int err;        /* the failed clEnqueueNDRangeKernel's code; CL_SUCCESS: none failed */
  uint64_t key;      /* the program of that kernel */
  cl_event enqueued; /* a backward call's first kernel, when its second failed to launch */
  int want_first;    /* the trace log times the call: keep the first of two kernels' events */
  cl_event first;    /* that event (a reference of the caller's), when both were enqueued */
} clnorm_attempt;
/* Sets the arguments of a kernel of the call's op, in the kernels' parameter order; backward:
 * `partial` and `groups` last. *next, when not NULL, receives the index after them. The one
 * place that knows the order: tools that launch a kernel themselves use it too. */
clnorm_status clnorm__set_args(clnorm_ctx *ctx, cl_kernel k, const clnorm_call *call,
                               cl_mem partial, cl_uint groups, cl_uint *next);
/* Work-groups of a whole-row forward launch of v for the call. */
size_t clnorm__launch_groups(const clnorm_ctx *ctx, const clnorm_call *call,
                             const clnorm_variant *v);
/* Enqueues the call with the chosen variant (split-row, backward or whole-row kernels); a launch
 * failure is described in *a. */
clnorm_status clnorm__enqueue(clnorm_ctx *ctx, cl_command_queue queue, const clnorm_call *call,
                              const clnorm_variant *v, clnorm_program *prog, cl_uint num_wait,
                              const cl_event *wait_list, cl_event *event, clnorm_attempt *a);
/* rows == 0: zeroes a backward call's weight gradients; *event completes after the wait list. */
clnorm_status clnorm__enqueue_no_rows(clnorm_ctx *ctx, cl_command_queue queue,
                                      const clnorm_call *call, cl_uint num_wait,
                                      const cl_event *wait_list, cl_event *event);

/* variants.c: the variant space, shared by the dispatcher and the tuner. */
#define CLNORM_HOLD_MAX_FLOATS 64 /* private floats per work-item for a held row */
/* The most floats of a work-item's private row buffer (32 KiB: a core's L1 data cache or most
 * of it), and the most bytes of a work-group's row buffers together */
#define CLNORM_ROW_BUFFER_SIZE 8192u
#define CLNORM_ROW_BUFFER_GROUP_BYTES ((size_t)2 << 20)
size_t clnorm__variant_list(const clnorm_device_info *info, clnorm_op op, clnorm_dtype dtype,
                            clnorm_variant *out, size_t cap);
int clnorm__op_backward(clnorm_op op);
int clnorm__op_add(clnorm_op op);
int clnorm__op_rms(clnorm_op op);
size_t clnorm__dtype_size(clnorm_dtype dtype);
int clnorm__variant_device_ok(const clnorm_device_info *info, clnorm_op op, const clnorm_variant *v,
                              char *why, size_t why_size);
int clnorm__variant_call_ok(const clnorm_variant *v, size_t cols, char *why, size_t why_size);
unsigned clnorm__call_vec(const clnorm_device_info *info, const clnorm_call *call, unsigned vec);
void clnorm__heuristic(const clnorm_device_info *info, const clnorm_call *call,
                       clnorm_variant *out);
unsigned clnorm__row_class(size_t rows);
size_t clnorm__row_class_first(unsigned c);
size_t clnorm__groups_per_cu(unsigned wg);
unsigned clnorm__split_count(const clnorm_device_info *info, const clnorm_call *call,
                             const clnorm_variant *v);
size_t clnorm__bwd_tiles(const clnorm_variant *v, size_t cols);
/* The row ranges of a backward call that takes the column strips (cl/strip.cl), 0 where it does
 * not: wide rows (CLNORM_BWD_STRIP_MIN_COLS, src/variants.c says which), one row a group. */
#define CLNORM_BWD_STRIP_MIN_COLS 16384
unsigned clnorm__bwd_strip_ranges(const clnorm_device_info *info, const clnorm_call *call,
                                  const clnorm_variant *v);
uint64_t clnorm__variant_key(clnorm_op op, clnorm_dtype dtype, const clnorm_variant *v);

/* tuned.c: the tuned, system and built-in tables. _tuning_load: the user's database (path NULL:
 * the default one); _system_load: the system database ($CLNORM_SYSTEM_DB, else
 * CLNORM_SYSTEM_DB_PATH), read-only, never failing (a missing one is no system table, a damaged
 * one a warning); _builtin_load: the entries of src/builtin_table.h for this device. */
clnorm_status clnorm__tuning_load(clnorm_ctx *ctx, const char *path);
void clnorm__system_load(clnorm_ctx *ctx);
void clnorm__builtin_load(clnorm_ctx *ctx);
/* Test hook: matches `table` (count entries) instead of the compiled one, as if this device's
 * architecture were `arch` (NULL: its own, ctx->info.arch). */
void clnorm__builtin_use(clnorm_ctx *ctx, const clnorm_builtin *table, size_t count,
                         const char *arch);
/* The system database's path: 1 with it in buf, 0 when there is none ($CLNORM_SYSTEM_DB empty,
 * or no path compiled in). */
int clnorm__system_db_path(char *buf, size_t size);
/* How far (a factor) from the row counts where a winner did not lose it is still used. */
#define CLNORM_ROWS_NEAR_RATIO 2
/* 1 when t is used at `rows` (of its row class): within CLNORM_ROWS_NEAR_RATIO of t's rows_lo to
 * rows_hi. */
int clnorm__tuned_stands(const clnorm_tuned *t, size_t rows);
/* The row counts of t's class at which it stands, first to last: 0 when there are none. */
int clnorm__tuned_rows_used(const clnorm_tuned *t, size_t *first, size_t *last);
const clnorm_tuned *clnorm__tuned_find(const clnorm_tuned *table, size_t count, clnorm_op op,
                                       clnorm_dtype dtype, size_t cols, size_t rows, int exact);
/* Drops the user's tables, this driver's and other drivers' (the dispatcher falls back to the
 * system database, the built-in table and the heuristic):
 * normtune bench, when its --db cannot be read, must not run the default database's winners. */
void clnorm__tuning_clear(clnorm_ctx *ctx);
void clnorm__tuning_free(clnorm_ctx *ctx);

/* validate.c */
clnorm_status clnorm__validate(clnorm_ctx *ctx, cl_command_queue queue, const clnorm_call *call,
                               cl_uint num_wait, const cl_event *wait_list);

/* program.c: built programs, cached by their options string (keyed by the packed variant). */
/* Floats (-DRBUF) of the row buffer of a program whose work-groups have wg work-items (a
 * multiple of 16; 0: none, also where fewer than 256 floats would be left to each work-item) */
unsigned clnorm__row_buffer(const clnorm_device_info *info, unsigned wg);
/* The largest work-group kernel `kernel` runs (program.c): CL_KERNEL_WORK_GROUP_SIZE as
 * `reported`, or the size it was compiled for (`compile`, CL_KERNEL_COMPILE_WORK_GROUP_SIZE) where
 * info->reqd_wg trusts that and the device allows it. */
size_t clnorm__kernel_max_wg(const clnorm_device_info *info, size_t reported,
                             const size_t compile[3]);
clnorm_status clnorm__program_get(clnorm_ctx *ctx, clnorm_op op, clnorm_dtype dtype,
                                  const clnorm_variant *v, int split, clnorm_program **out);
clnorm_status clnorm__kernel_take(clnorm_ctx *ctx, clnorm_program *prog, clnorm_op op, int which,
                                  cl_kernel *out);
void clnorm__kernel_give(clnorm_ctx *ctx, clnorm_program *prog, int which, cl_kernel kernel);
void clnorm__programs_free(clnorm_ctx *ctx);
/* FNV-1a (64 bits) of n bytes, continuing from h: the kernel hashes (program.c) and the binary
 * cache's keys and checksums (bincache.c). Start from CLNORM_FNV_BASIS. */
#define CLNORM_FNV_BASIS 14695981039346656037ull
static inline uint64_t clnorm__fnv1a(uint64_t h, const void *data, size_t n) {
  const unsigned char *p = data;
  for (size_t i = 0; i < n; i++)
    h = (h ^ p[i]) * 1099511628211ull;
  return h;
}
/* A program's build options, in a fixed order (the binary cache's key holds them): the variant's,
 * the op's and the device's (info); split 0 the op's own program, 1 the split rows', 2 the column
 * strips'. CLNORM_PROGRAM_OPTIONS_MAX bytes hold the longest. */
#define CLNORM_PROGRAM_OPTIONS_MAX 320
void clnorm__options_string(const clnorm_device_info *info, clnorm_op op, clnorm_dtype dtype,
                            const clnorm_variant *v, int split, char *buf, size_t size);
/* FNV-1a over what the compiler sees of a source: an edit of comments or spacing alone does not
 * change it. The kernel hashes that key tuned results (clnorm__kernel_hashes, src/db.h) are its. */
uint64_t clnorm__source_hash(uint64_t h, const char *src, size_t len);

/* bincache.c: built programs kept on disk between processes (docs/API.md, "Files"). None of
 * these fails or prints, except the log (info and warn lines).
 * _init reads CLNORM_NO_BINARY_CACHE, CLNORM_BINARY_CACHE_DIR and the tuning database's path and
 * the device's identity into ctx (the cache is off when any is missing); _free releases them.
 * _load returns the program of (sources, options) built from its cached binary, or NULL (no
 * entry, a damaged or foreign one, a binary the driver refuses or that lacks one of the `kernels`
 * the program must have): then build from source and _store the result, which (over)writes the
 * entry atomically. */
/* The cache's directory (CLNORM_BINARY_CACHE_DIR, else clnorm-binaries beside the default tuning
 * database): 1 with it in dir, or 0 with why it is off (CLNORM_NO_BINARY_CACHE, no home). */
int clnorm__bincache_path(char *dir, size_t size, char *why, size_t why_size);
void clnorm__bincache_init(clnorm_ctx *ctx);
void clnorm__bincache_free(clnorm_ctx *ctx);

/* scratch.c: a scratch buffer of at least `bytes` for a call on `queue`, with a reference for the
 * caller (clReleaseMemObject it after the enqueue); *slot is what clnorm__scratch_give takes back
 * once the call's kernels are enqueued (-1: the buffer is the call's own). NULL with *err set when
 * allocating failed. clnorm__scratch_free: at clnorm_ctx_destroy. */
cl_mem clnorm__scratch_take(clnorm_ctx *ctx, cl_command_queue queue, size_t bytes, int *slot,
                            cl_int *err);
void clnorm__scratch_give(clnorm_ctx *ctx, int slot);
void clnorm__scratch_free(clnorm_ctx *ctx);
cl_program clnorm__bincache_load(clnorm_ctx *ctx, const char *const *sources, const size_t *lengths,
                                 size_t count, const char *options, const char *const *kernels,
                                 size_t kernel_count);
void clnorm__bincache_store(clnorm_ctx *ctx, const char *const *sources, const size_t *lengths,
                            size_t count, const char *options, cl_program program);
/* The checksum an entry's header holds of its key (by the key's hash, which also names the file)
 * and its payload (exposed for the tests). */
uint64_t clnorm__bincache_key_hash(const char *key, size_t key_len);
uint64_t clnorm__bincache_checksum(uint64_t key_hash, const unsigned char *data, size_t n);

/* kernels embedded by cmake/embed.cmake */
extern const char clnorm__src_common[];
extern const size_t clnorm__src_common_len;
extern const char clnorm__src_forward[];
extern const size_t clnorm__src_forward_len;
extern const char clnorm__src_backward[];
extern const size_t clnorm__src_backward_len;
extern const char clnorm__src_split[];
extern const size_t clnorm__src_split_len;
extern const char clnorm__src_strip[];
extern const size_t clnorm__src_strip_len;

#endif
