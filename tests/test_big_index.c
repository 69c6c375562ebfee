/* Indexing past 2^31 and 2^32 elements: every matrix of a call placed beyond element T of one
 * buffer (T = 2^31 and 2^32; f16, 2 GiB per 2^30 elements, and f32), checked against the
 * float64 reference as tests/op_case.h states (outputs poisoned, gaps unchanged). Each op runs
 * through the dispatcher and forced variants with one and with several work-items per row, on
 * two layouts: all matrices beyond T at aligned offsets (full vector width), and rows
 * straddling element T at odd offsets (width 1), so that a 32-bit index would wrap inside the
 * matrix. Only a window around the matrices is written and read; the rest of the buffer is never
 * touched.
 *
 * A (T, dtype) needs one buffer of more than T elements: it runs when the device's
 * CL_DEVICE_MAX_MEM_ALLOC_SIZE and CL_DEVICE_GLOBAL_MEM_SIZE allow that buffer, and then any
 * failure (an allocation the device refuses included) fails the test. When the device allows
 * none of them the test says why and exits 77, which ctest reports as skipped (not passed);
 * CLNORM_TEST_BIG=require turns that into a failure, for machines that must run it. A case that
 * fails prints itself in full (tests/op_case.h's format). */
#define _POSIX_C_SOURCE 200809L
#include "op_case.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ROWS 5
#define COLS 1000
#define STRIDE 1024

static harness h;

/* Every used matrix in buffer 0, one after another from `first`, each STRIDE-strided. */
static void stack(oc_case *c, size_t first) {
  size_t at = first;
  for (int r = 0; r < OC_MATRICES; r++) {
    c->m[r].buffer = 0;
    c->m[r].sub = 0;
    c->m[r].stride = STRIDE;
    if (!oc_uses_matrix(c->op, r))
      continue;
    c->m[r].offset = at;
    at += ROWS * STRIDE + 16;
  }
}

/* A variant of the op and dtype with tpr == 1 (want_shared 0) or tpr > 1 that re-reads the row
 * (any cols): the first listed. */
static int pick_variant(clnorm_op op, clnorm_dtype dtype, int want_shared, clnorm_variant *out) {
  const size_t nv = clnorm_variant_list(h.ctx, op, dtype, NULL, 0);
  clnorm_variant *all = malloc((nv ? nv : 1) * sizeof *all);
  clnorm_variant_list(h.ctx, op, dtype, all, nv);
  int found = 0;
  for (size_t i = 0; i < nv && !found; i++)
    if (all[i].hold == 0 && (all[i].tpr > 1) == want_shared && all[i].wg <= 256) {
      *out = all[i];
      found = 1;
    }
  free(all);
  return found;
}

int main(void) {
  harness_open(&h, "test_big_index");
  cl_ulong max_alloc = 0, global_mem = 0;
  clGetDeviceInfo(h.device, CL_DEVICE_MAX_MEM_ALLOC_SIZE, sizeof max_alloc, &max_alloc, NULL);
  clGetDeviceInfo(h.device, CL_DEVICE_GLOBAL_MEM_SIZE, sizeof global_mem, &global_mem, NULL);
  printf("device limits: CL_DEVICE_MAX_MEM_ALLOC_SIZE %llu bytes, CL_DEVICE_GLOBAL_MEM_SIZE %llu "
         "bytes\n",
         (unsigned long long)max_alloc, (unsigned long long)global_mem);
  const char *require = getenv("CLNORM_TEST_BIG");
  const size_t window = 6 * (ROWS * STRIDE + 16) + 64; /* the matrices, as stack() lays them */
  int configs_run = 0, failures = 0, cases = 0;
  /* CLNORM_TEST_BIG_LOG2=N tries 2^N and 2^(N+1) instead (development: small thresholds check
   * the test itself on any device) */
  const char *log2_env = getenv("CLNORM_TEST_BIG_LOG2");
  const int t0 = log2_env ? atoi(log2_env) : 31;
  if (t0 != 31)
    printf("CLNORM_TEST_BIG_LOG2=%d: thresholds 2^%d and 2^%d (not the real test)\n", t0, t0,
           t0 + 1);
  for (int t = t0; t <= t0 + 1; t++) {
    for (int d = 1; d >= 0; d--) { /* f16 first: half the memory */
      const clnorm_dtype dtype = d ? CLNORM_F16 : CLNORM_F32;
      const size_t es = d ? 2 : 4;
      const size_t threshold = (size_t)1 << t;
      const unsigned long long need = (unsigned long long)(threshold + window) * es;
      if (need > max_alloc || need > global_mem) {
        printf("not run: %s beyond element 2^%d needs one buffer of %llu bytes; this device "
               "allows %llu per buffer (CL_DEVICE_MAX_MEM_ALLOC_SIZE) and %llu in all\n",
               clnorm_dtype_name(dtype), t, need, (unsigned long long)max_alloc,
               (unsigned long long)global_mem);
        continue;
      }
      configs_run++;
      for (int op = 0; op < CLNORM_OP_COUNT; op++)
        for (int how = 0; how < 3; how++)     /* dispatcher, tpr == 1, tpr > 1 */
          for (int layout = 0; layout < 2; layout++) { /* beyond T aligned, straddling T odd */
            oc_case c;
            oc_default(&c, (clnorm_op)op, dtype, ROWS, COLS);
            c.data_seed = 77 + (uint64_t)(op * 6 + how * 2 + layout);
            c.data = (oc_data)((op + how + layout) % OC_DATA_KINDS);
            c.tail = 5;
            if (how && !pick_variant(c.op, dtype, how == 2, &c.variant)) {
              printf("FAIL: %s %s: no variant with %s listed\n", clnorm_op_name(c.op),
                     clnorm_dtype_name(dtype), how == 2 ? "tpr > 1" : "tpr == 1");
              failures++;
              continue;
            }
            c.forced = how != 0;
            if (layout == 0) {
              c.base = threshold;
              stack(&c, 16);
            } else {
              /* x's rows 0 and 1 below element T, the rest beyond; odd offsets */
              c.base = threshold - 2 * STRIDE + 1;
              stack(&c, 0);
            }
            char text[1400], msg[1024];
            oc_format(&c, text, sizeof text);
            const oc_result r = oc_run(&h, &c, NULL, msg, sizeof msg);
            cases++;
            if (r != OC_PASS) {
              failures++;
              printf("FAIL: %s: %s%s\n", text, r == OC_UNSUPPORTED ? "variant refused: " : "",
                     msg);
            } else {
              printf("  ok: %s\n", text);
            }
            fflush(stdout);
          }
    }
  }
  harness_close(&h);
  if (!configs_run) {
    printf("test_big_index: the device (%s) cannot hold a buffer of more than 2^31 elements of "
           "any dtype: nothing to test here%s\n",
           h.name, require && strcmp(require, "require") == 0 ? "; FAIL (CLNORM_TEST_BIG=require)"
                                                              : " (skipped)");
    return require && strcmp(require, "require") == 0 ? 1 : 77;
  }
  printf("test_big_index: %d cases, %d failed: %s\n", cases, failures, failures ? "FAIL" : "PASS");
  return failures ? 1 : 0;
}
