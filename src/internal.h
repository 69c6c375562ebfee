/* Internal declarations shared by the library's source files; never installed. */
#ifndef CLNORM_INTERNAL_H
#define CLNORM_INTERNAL_H

#include "clnorm.h"
#include "clnorm_variant.h"

#include <pthread.h>
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
  char subgroup_std[8]; /* -cl-std for sub-group kernels: CL2.0 or CL3.0 */
  /* Launch every kernel of a program with one global size, whatever the call (the kernels
   * stride over rows and columns): PoCL before 6 asserts when launches of one kernel with
   * different global sizes are in flight at once (docs/DEVICES.md). CLNORM_FIXED_GRID=0/1
   * overrides the detection. */
  int fixed_grid;
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
  int split; /* the split-row kernels (cl/split.cl) of a forward op */
  cl_kernel *free_kernels[2]; /* per kernel of the program: the op's, the reduction's */
  size_t free_count[2], free_cap[2];
  struct clnorm_program *next;
} clnorm_program;

/* One row of the tuned table: the winner for an op, dtype, cols and row class. */
typedef struct clnorm_tuned {
  clnorm_op op;
  clnorm_dtype dtype;
  size_t cols;
  unsigned row_class;
  clnorm_variant variant;
} clnorm_tuned;

/* A shipped winner: for devices whose name contains `device`. */
typedef struct clnorm_builtin {
  const char *device;
  clnorm_tuned entry;
} clnorm_builtin;

#define CLNORM_PROGRAM_BUCKETS 256
#define CLNORM_LOGGED 512

struct clnorm_ctx {
  cl_context context;
  cl_device_id device;
  clnorm_device_info info;
  pthread_mutex_t lock; /* guards the program table and each program's free list */
  pthread_cond_t built; /* signalled when a program's build ends */
  clnorm_program *programs[CLNORM_PROGRAM_BUCKETS];
  clnorm_tuned *tuned; /* sorted by op, dtype, row class, cols; replaced whole under lock */
  size_t tuned_count;
  const clnorm_tuned *builtin; /* this device's shipped winners, sorted like tuned */
  size_t builtin_count;
  clnorm_tuned *builtin_own;
  int log_info;                  /* CLNORM_LOG=info */
  uint64_t logged[CLNORM_LOGGED]; /* shape classes whose choice was logged (0: empty slot) */
};

/* status.c: the thread's error message for a context. */
clnorm_status clnorm__fail(const clnorm_ctx *ctx, clnorm_status status, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
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

/* variants.c: the variant space, shared by the dispatcher and the tuner. */
#define CLNORM_HOLD_MAX_FLOATS 64 /* private floats per work-item for a held row */
size_t clnorm__variant_list(const clnorm_device_info *info, clnorm_op op, clnorm_dtype dtype,
                            clnorm_variant *out, size_t cap);
int clnorm__op_backward(clnorm_op op);
int clnorm__op_add(clnorm_op op);
int clnorm__op_rms(clnorm_op op);
size_t clnorm__dtype_size(clnorm_dtype dtype);
int clnorm__variant_device_ok(const clnorm_device_info *info, clnorm_op op,
                              const clnorm_variant *v, char *why, size_t why_size);
int clnorm__variant_call_ok(const clnorm_variant *v, size_t cols, char *why, size_t why_size);
unsigned clnorm__call_vec(const clnorm_call *call, unsigned vec);
void clnorm__heuristic(const clnorm_device_info *info, const clnorm_call *call,
                       clnorm_variant *out);
unsigned clnorm__row_class(size_t rows);
size_t clnorm__groups_per_cu(unsigned wg);
unsigned clnorm__split_count(const clnorm_device_info *info, const clnorm_call *call,
                             const clnorm_variant *v);
uint64_t clnorm__variant_key(clnorm_op op, clnorm_dtype dtype, const clnorm_variant *v);

/* tuned.c: the tuned and built-in tables. */
clnorm_status clnorm__tuning_load(clnorm_ctx *ctx, const char *path);
void clnorm__builtin_load(clnorm_ctx *ctx);
const clnorm_tuned *clnorm__tuned_find(const clnorm_tuned *table, size_t count, clnorm_op op,
                                       clnorm_dtype dtype, size_t cols, unsigned row_class,
                                       int exact);
void clnorm__tuning_free(clnorm_ctx *ctx);

/* validate.c */
clnorm_status clnorm__validate(clnorm_ctx *ctx, cl_command_queue queue, const clnorm_call *call,
                               cl_uint num_wait, const cl_event *wait_list);

/* program.c: built programs, cached by their options string (keyed by the packed variant). */
clnorm_status clnorm__program_get(clnorm_ctx *ctx, clnorm_op op, clnorm_dtype dtype,
                                  const clnorm_variant *v, int split, clnorm_program **out);
clnorm_status clnorm__kernel_take(clnorm_ctx *ctx, clnorm_program *prog, clnorm_op op, int which,
                                  cl_kernel *out);
void clnorm__kernel_give(clnorm_ctx *ctx, clnorm_program *prog, int which, cl_kernel kernel);
void clnorm__programs_free(clnorm_ctx *ctx);
uint64_t clnorm__kernel_hash(void);

/* kernels embedded by cmake/embed.cmake */
extern const char clnorm__src_common[];
extern const size_t clnorm__src_common_len;
extern const char clnorm__src_layernorm[];
extern const size_t clnorm__src_layernorm_len;
extern const char clnorm__src_rmsnorm[];
extern const size_t clnorm__src_rmsnorm_len;
extern const char clnorm__src_backward[];
extern const size_t clnorm__src_backward_len;
extern const char clnorm__src_split[];
extern const size_t clnorm__src_split_len;

#endif
