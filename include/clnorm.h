/* clnorm: LayerNorm and RMSNorm kernels for any OpenCL device.
 *
 * A context (clnorm_ctx) belongs to one OpenCL context and device. Every operation only enqueues
 * work on the caller's queue and returns; nothing blocks. One clnorm_ctx may be used from several
 * threads at once. */
#ifndef CLNORM_H
#define CLNORM_H

/* <CL/cl.h> declares what the application's own CL_TARGET_OPENCL_VERSION, defined before this
 * header, asks for: clnorm needs only OpenCL 1.2 and must not narrow or widen the application's
 * API. Without a definition the Khronos headers take their newest version and say so in a
 * #pragma message, which clang reports as a warning; it is silenced here so that a build with
 * -Werror=#pragma-messages does not fail on a header it did not write. */
#if defined(__clang__)
#pragma clang diagnostic push
#pragma clang diagnostic ignored "-W#pragma-messages"
#endif
#include <CL/cl.h>
#if defined(__clang__)
#pragma clang diagnostic pop
#endif
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(_WIN32) && defined(CLNORM_BUILDING)
#define CLNORM_API __declspec(dllexport)
#elif defined(_WIN32)
#define CLNORM_API /* PE has no visibility attribute; the DLL's exports are its dllexport'ed */
#elif defined(__GNUC__)
#define CLNORM_API __attribute__((visibility("default")))
#else
#define CLNORM_API
#endif

#define CLNORM_VERSION_MAJOR 0
#define CLNORM_VERSION_MINOR 1
#define CLNORM_VERSION_PATCH 0
/* The same version as text, and as one unsigned number (MAJOR * 10000 + MINOR * 100 + PATCH,
 * so versions compare with <, in #if too). CMake's configure step checks that these four macros
 * agree with its project(VERSION). */
#define CLNORM_VERSION_STRING "0.1.0"
#define CLNORM_VERSION_NUMBER                                                                      \
  (CLNORM_VERSION_MAJOR * 10000u + CLNORM_VERSION_MINOR * 100u + CLNORM_VERSION_PATCH)

typedef struct clnorm_ctx clnorm_ctx;

/* The statuses: name, value and the text clnorm_status_string() returns. One list generates the
 * enum and the strings (as libuv's UV_ERRNO_MAP). Values are frozen: new statuses are only ever
 * appended.
 *   CLNORM_E_INVALID_ARG  bad argument: nothing was enqueued
 *   CLNORM_E_UNSUPPORTED  a valid request this device or build cannot run
 *   CLNORM_E_OPENCL       an OpenCL call failed
 *   CLNORM_E_BUILD        kernel compilation failed */
#define CLNORM_STATUS_MAP(X)                                                                       \
  X(CLNORM_OK, 0, "success")                                                                       \
  X(CLNORM_E_INVALID_ARG, 1, "invalid argument")                                                   \
  X(CLNORM_E_UNSUPPORTED, 2, "unsupported on this device or build")                                \
  X(CLNORM_E_OPENCL, 3, "OpenCL call failed")                                                      \
  X(CLNORM_E_BUILD, 4, "kernel build failed")                                                      \
  X(CLNORM_E_NO_MEMORY, 5, "out of memory")                                                        \
  X(CLNORM_E_DB, 6, "tuning database problem")

/* The enumerator of one X-macro entry: name = value. */
#define CLNORM_ENUMERATOR(name, value, text) name = value,

typedef enum clnorm_status { CLNORM_STATUS_MAP(CLNORM_ENUMERATOR) } clnorm_status;

/* Storage types of x, y, gamma, beta, residual, sum_out, dy, dx, dgamma and dbeta; all arithmetic
 * is float32, and mean and rstd are always float32. F16 is IEEE binary16 (no cl_khr_fp16 needed),
 * BF16 the upper 16 bits of a float32; results are rounded to nearest even, NaN stays NaN. */
#define CLNORM_DTYPE_MAP(X)                                                                        \
  X(CLNORM_F32, 0, "f32")                                                                          \
  X(CLNORM_F16, 1, "f16")                                                                          \
  X(CLNORM_BF16, 2, "bf16")
typedef enum clnorm_dtype { CLNORM_DTYPE_MAP(CLNORM_ENUMERATOR) } clnorm_dtype;

typedef struct clnorm_rows { /* a rows x cols row-major matrix inside a buffer */
  cl_mem buf;
  size_t offset; /* index of element (0,0), in elements */
  size_t stride; /* elements from the start of one row to the next; 0 means cols */
} clnorm_rows;

/* The version of the library that is running, which may differ from the header's
 * CLNORM_VERSION_STRING when a program meets another build of the shared library:
 * clnorm_version_string() as "MAJOR.MINOR.PATCH", static text, never NULL; clnorm_version() is
 * another name for it (the first release's); clnorm_version_number() is that version as
 * CLNORM_VERSION_NUMBER computes it. */
CLNORM_API const char *clnorm_version_string(void);
CLNORM_API const char *clnorm_version(void);
CLNORM_API unsigned clnorm_version_number(void);

/* Creates a clnorm context for `device` inside `context`; retains both. *out receives it.
 * Returns CLNORM_E_INVALID_ARG (NULL argument, device not in context), CLNORM_E_OPENCL,
 * CLNORM_E_NO_MEMORY. Environment: CLNORM_LOG (see clnorm_set_log_level) logs on stderr. */
CLNORM_API clnorm_status clnorm_ctx_create(cl_context context, cl_device_id device,
                                           clnorm_ctx **out);

/* Releases the context, its programs and kernels. Work already enqueued is unaffected.
 * NULL is a no-op. */
CLNORM_API void clnorm_ctx_destroy(clnorm_ctx *ctx);

/* Static text naming a status; never NULL (unknown values give "unknown status"). */
CLNORM_API const char *clnorm_status_string(clnorm_status status);

/* Detail of the last failure of a call on `ctx` made by the calling thread (which argument and
 * why, the cl_int code, the build log); "" when there is none. Valid until that thread's next
 * call into the library. ctx may be NULL (failures of calls given a NULL context). */
CLNORM_API const char *clnorm_ctx_errmsg(const clnorm_ctx *ctx);

/* LayerNorm over each of `rows` rows of `cols` elements:
 *   mean = sum(x)/cols, var = sum((x-mean)^2)/cols, rstd = 1/sqrt(var+eps),
 *   y = (x-mean)*rstd*gamma + beta.
 * gamma, beta: cols elements of dtype (NULL: ones / zeros). mean, rstd: rows float32 values
 * (NULL: not wanted). y may be exactly x (same buffer, offset and stride); any other overlap is
 * invalid. Enqueues on `queue` (of ctx's context and device) after wait_list; *event (if event
 * is not NULL) completes when all of the call's work is done. rows == 0 enqueues nothing (and
 * *event, if asked, is a marker). A NaN or Inf in a row makes that row's outputs NaN.
 * Returns CLNORM_E_INVALID_ARG (nothing enqueued), CLNORM_E_UNSUPPORTED, CLNORM_E_OPENCL,
 * CLNORM_E_BUILD, CLNORM_E_NO_MEMORY. */
CLNORM_API clnorm_status clnorm_layernorm(clnorm_ctx *ctx, cl_command_queue queue, size_t rows,
                                          size_t cols, clnorm_dtype dtype, float eps,
                                          clnorm_rows x, cl_mem gamma, cl_mem beta,
                                          clnorm_rows y, cl_mem mean, cl_mem rstd,
                                          cl_uint num_wait, const cl_event *wait_list,
                                          cl_event *event);

/* RMSNorm over each row: rstd = 1/sqrt(sum(x^2)/cols + eps), y = x*rstd*gamma.
 * Arguments, statuses and rules as clnorm_layernorm. */
CLNORM_API clnorm_status clnorm_rmsnorm(clnorm_ctx *ctx, cl_command_queue queue, size_t rows,
                                        size_t cols, clnorm_dtype dtype, float eps, clnorm_rows x,
                                        cl_mem gamma, clnorm_rows y, cl_mem rstd, cl_uint num_wait,
                                        const cl_event *wait_list, cl_event *event);

/* Fused residual add: h = x + residual, rounded to dtype; then y = LayerNorm(h) as
 * clnorm_layernorm, so y matches the unfused pair of calls. h is written to sum_out when
 * sum_out.buf is not NULL. Each output (y, sum_out) may be exactly one of the inputs x or
 * residual (same buffer, offset and stride: in place, as inference engines update their residual
 * stream); outputs must not overlap each other, and no other overlap is allowed.
 * Statuses and the other rules as clnorm_layernorm. */
CLNORM_API clnorm_status clnorm_add_layernorm(clnorm_ctx *ctx, cl_command_queue queue, size_t rows,
                                              size_t cols, clnorm_dtype dtype, float eps,
                                              clnorm_rows x, clnorm_rows residual,
                                              clnorm_rows sum_out, cl_mem gamma, cl_mem beta,
                                              clnorm_rows y, cl_mem mean, cl_mem rstd,
                                              cl_uint num_wait, const cl_event *wait_list,
                                              cl_event *event);

/* h = x + residual rounded to dtype; y = RMSNorm(h). Rules as clnorm_add_layernorm. */
CLNORM_API clnorm_status clnorm_add_rmsnorm(clnorm_ctx *ctx, cl_command_queue queue, size_t rows,
                                            size_t cols, clnorm_dtype dtype, float eps,
                                            clnorm_rows x, clnorm_rows residual,
                                            clnorm_rows sum_out, cl_mem gamma, clnorm_rows y,
                                            cl_mem rstd, cl_uint num_wait,
                                            const cl_event *wait_list, cl_event *event);

/* LayerNorm backward. From dy, x and the forward pass's gamma (NULL: ones), mean and rstd (the
 * float32 outputs of the forward call; required): with xhat = (x - mean) * rstd and
 * g = gamma * dy,
 *   dx = rstd * (g - mean_row(g) - xhat * mean_row(g * xhat)),
 *   dgamma = sum over rows of dy * xhat, dbeta = sum over rows of dy (cols elements of dtype;
 *   NULL: not wanted).
 * Deterministic: the same inputs give the same bits on every run (per-work-group partial sums
 * reduced in a fixed order; no floating-point atomics). The scratch memory for the partial sums
 * is allocated per call and released when the call's work completes. dx may be exactly dy or x;
 * any other overlap is invalid. Statuses as clnorm_layernorm. */
CLNORM_API clnorm_status clnorm_layernorm_backward(clnorm_ctx *ctx, cl_command_queue queue,
                                                   size_t rows, size_t cols, clnorm_dtype dtype,
                                                   clnorm_rows dy, clnorm_rows x, cl_mem gamma,
                                                   cl_mem mean, cl_mem rstd, clnorm_rows dx,
                                                   cl_mem dgamma, cl_mem dbeta, cl_uint num_wait,
                                                   const cl_event *wait_list, cl_event *event);

/* RMSNorm backward: xhat = x * rstd, g = gamma * dy, dx = rstd * (g - xhat * mean_row(g * xhat)),
 * dgamma = sum over rows of dy * xhat. Rules as clnorm_layernorm_backward. */
CLNORM_API clnorm_status clnorm_rmsnorm_backward(clnorm_ctx *ctx, cl_command_queue queue,
                                                 size_t rows, size_t cols, clnorm_dtype dtype,
                                                 clnorm_rows dy, clnorm_rows x, cl_mem gamma,
                                                 cl_mem rstd, clnorm_rows dx, cl_mem dgamma,
                                                 cl_uint num_wait, const cl_event *wait_list,
                                                 cl_event *event);

/* Logging. The library prints nothing unless asked. The level comes from CLNORM_LOG (read once,
 * case-insensitive: off, error, warn, info, trace; another value prints one warning and logs at
 * info) until clnorm_set_log_level sets it; each level includes those before it:
 *   error  a normalization call (clnorm_layernorm ... clnorm_run) that fails: status, message
 *   warn   a variant or kernel that could not run, fallen back from; stale tuned results
 *   info   the variant chosen and why, once per op, dtype, cols and row class; the tuned results
 *          loaded; the program binary cache's hits, misses and writes
 *   trace  one line per call: op, dtype, shape, device, variant, the source of the choice and
 *          the kernels' time (from the first kernel's start to the last one's end) where the
 *          queue has CL_QUEUE_PROFILING_ENABLE, else "time n/a". That line is written when the
 *          call's work completes (an event callback: the library never waits for it), from
 *          whichever thread the OpenCL runtime calls back on.
 * Lines go to stderr ("clnorm: " + text), or to the callback when one is set. */
typedef enum clnorm_log_level {
  CLNORM_LOG_OFF = 0,
  CLNORM_LOG_ERROR = 1,
  CLNORM_LOG_WARN = 2,
  CLNORM_LOG_INFO = 3,
  CLNORM_LOG_TRACE = 4
} clnorm_log_level;

/* Receives one line: its level and its text (no "clnorm: " prefix, no newline; valid during the
 * call only). */
typedef void (*clnorm_log_fn)(clnorm_log_level level, const char *line, void *user);

/* Sends every line to fn(level, line, user) instead of stderr; fn == NULL: stderr again. Lines
 * are delivered one at a time, under a lock the library holds, so fn needs no lock of its own,
 * must not call clnorm_set_log_callback, and may be called from threads of the OpenCL runtime
 * (the trace lines). Once this returns, the previous callback is no longer running or called.
 * Setting a callback does not turn logging on: see clnorm_set_log_level. */
CLNORM_API void clnorm_set_log_callback(clnorm_log_fn fn, void *user);

/* Sets the level for the whole process; CLNORM_LOG is not read after this. */
CLNORM_API void clnorm_set_log_level(clnorm_log_level level);

/* The level in force (CLNORM_LOG's, read on the first use, unless clnorm_set_log_level set one). */
CLNORM_API clnorm_log_level clnorm_get_log_level(void);

#ifdef __cplusplus
}
#endif
#endif /* CLNORM_H */
