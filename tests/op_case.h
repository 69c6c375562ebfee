/* One call of any op, in any layout, run on the test device and checked against the float64
 * reference (verify/ref.c). Shared by test_random (seeded random cases) and test_oclgrind (the
 * kernels under a simulator).
 *
 * Tolerances, as tests/test_ops.c states them (errors are reported in units of the allowance,
 * so <= 1 passes; M = the row's max |ref|, or for dgamma/dbeta the max |ref| over cols):
 *   forward y:        |y - ref| <= u * ulp_dtype(ref) + 1e-5 * M, u = 0 for f32, 1 for f16/bf16
 *   dx:               the same with 1e-4 * max(M, rstd * max |gamma * dy|) of the row (also
 *                     where M is 0: cols 1 gives dx == 0 exactly, and a device that contracts
 *                     gamma * dy - mean(gamma * dy) into an fma leaves the product's rounding)
 *   dgamma, dbeta:    the same with 1e-4 * M
 *   mean:             |mean - ref| <= 1e-5 * (|ref mean| + 1 / ref rstd); rstd: relative 1e-5
 *   sum_out:          bit-exact against the reference h = x + residual rounded to dtype
 * A row whose reference is NaN (a NaN or Inf in it) must be NaN in every output of that row.
 * Outputs are poisoned with NaN before the call; every element of every buffer outside the
 * outputs (gaps of strided matrices, the tails of vectors, inputs that are not outputs) must
 * be unchanged, bitwise. */
#ifndef CLNORM_TEST_OP_CASE_H
#define CLNORM_TEST_OP_CASE_H

#include "harness.h"

#include <stdint.h>

/* Matrix roles; the call's y is dx for the backward ops. */
enum { OC_X, OC_Y, OC_RES, OC_SUM, OC_DY, OC_MATRICES };
/* Vector roles. */
enum { OC_GAMMA, OC_BETA, OC_MEAN, OC_RSTD, OC_DGAMMA, OC_DBETA, OC_VECTORS };

typedef enum oc_data {
  OC_NORMAL,     /* N(0,1) * scale + shift, both drawn anew every 97 elements (harness_random) */
  OC_LARGE_MEAN, /* 1e4 + the same */
  OC_TINY,       /* N(0,1) * 1e-20 (f16: * 1e-6, mostly subnormal halves) */
  OC_HUGE,       /* N(0,1) * 1e15 (f16: * 1e3) */
  OC_DATA_KINDS
} oc_data;

/* Where one matrix lies. Matrices with the same `buffer` share one cl_mem (the case generator
 * keeps them identical, which is in place, or disjoint). */
typedef struct oc_place {
  int buffer;    /* 0 .. OC_MATRICES - 1 */
  size_t sub;    /* > 0: the call gets a sub-buffer of that buffer starting at this element
                    (a multiple of oc_sub_unit); matrices of one buffer and the same sub share
                    the sub-buffer */
  size_t offset; /* as given to the call */
  size_t stride; /* as given to the call: 0 means cols */
} oc_place;

#define OC_ABSENT_SUM (1u << OC_VECTORS) /* bit of oc_case.absent: sum_out not wanted */

typedef struct oc_case {
  clnorm_op op;
  clnorm_dtype dtype;
  size_t rows, cols;
  float eps;
  oc_place m[OC_MATRICES]; /* roles the op does not use are ignored */
  size_t tail;             /* elements after the last matrix of each buffer */
  size_t base;             /* elements every matrix buffer has before the part the test writes,
                              reads and checks (left uninitialized): the call's offsets are
                              base + offset (a sub-buffer's origin base + sub) */
  unsigned absent;         /* optional operands passed as NULL: 1 << OC_GAMMA, ..., OC_ABSENT_SUM */
  oc_data data;
  int extreme;  /* 1: rows of every magnitude the dtype holds, in place of `data` (op_case.c:
                   extreme_rows; issue 25); 2: subnormal rows (subnormal_rows) */
  long bad_row; /* >= 0: this row holds a non-finite value at bad_col */
  size_t bad_col;
  int bad_kind;   /* 0 NaN, 1 +Inf, 2 -Inf */
  int bad_in_res; /* add ops: the value is in the residual rather than x */
  int forced;     /* 1: `variant` through clnorm_run; 0: the dispatcher, through the op's public
                     entry point */
  clnorm_variant variant;
  uint64_t data_seed;
} oc_case;

typedef enum oc_result {
  OC_PASS = 0,
  OC_FAIL = 1,
  OC_UNSUPPORTED = 2 /* forced variant refused by clnorm_variant_check: nothing ran */
} oc_result;

/* Errors of one run in units of the allowance (see the top); -1 where not measured. */
typedef struct oc_errors {
  double y, mean, rstd, dgamma, dbeta;
} oc_errors;

/* Whether the op uses the role. */
int oc_uses_matrix(clnorm_op op, int role);
int oc_uses_vector(clnorm_op op, int role);
int oc_is_bwd(clnorm_op op);
int oc_is_add(clnorm_op op);
int oc_is_rms(clnorm_op op);

/* Sub-buffer origins are multiples of this many elements of dtype (the device's
 * CL_DEVICE_MEM_BASE_ADDR_ALIGN). */
size_t oc_sub_unit(harness *h, clnorm_dtype dtype);

/* A dense case: every used matrix in its own buffer, offset 0, stride 0; all optional operands
 * given; normal data; the dispatcher. */
void oc_default(oc_case *c, clnorm_op op, clnorm_dtype dtype, size_t rows, size_t cols);

/* Makes role `out` the same matrix as role `in`: in place. */
void oc_alias(oc_case *c, int out, int in);

/* The whole case on one line (enough to rebuild it). */
void oc_format(const oc_case *c, char *buf, size_t size);

/* Runs the case on h's device and checks it. On OC_FAIL, msg says what failed. measured (the
 * errors) may be NULL. */
oc_result oc_run(harness *h, const oc_case *c, oc_errors *measured, char *msg, size_t msg_size);

#endif
