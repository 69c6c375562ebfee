/* The dispatcher's rules for devices this machine does not have, on fabricated device info (no
 * OpenCL): where a GPU's forward call splits its rows over two kernels (clnorm__split_count:
 * rows of at least 128 KB; a CPU's wherever few rows leave cores idle), and which heuristics
 * keep one variant at every row count. normtune's A/B at a row class's edges compares a winner
 * with the heuristic's variant only where that variant is the one of the rows tuned (a GPU's,
 * a CPU's backward): if those stopped holding, the edges would go unchecked on a GPU. */
#include "fake_device.h"
#include "internal.h"

#include <stdio.h>
#include <string.h>

static int failures;

#define EXPECT(cond, ...)                                                                          \
  do {                                                                                             \
    if (!(cond)) {                                                                                 \
      printf("FAIL %s:%d: ", __FILE__, __LINE__);                                                  \
      printf(__VA_ARGS__);                                                                         \
      printf("\n");                                                                                \
      failures++;                                                                                  \
    }                                                                                              \
  } while (0)

/* What a plan rule (clnorm__split_count, clnorm__bwd_strip_ranges) gives a call of the heuristic's
 * variant. */
typedef unsigned (*plan_rule)(const clnorm_device_info *, const clnorm_call *,
                              const clnorm_variant *);
static unsigned planned(plan_rule rule, const clnorm_device_info *info, clnorm_op op,
                        clnorm_dtype dt, size_t rows, size_t cols) {
  const clnorm_call call = {.op = op, .dtype = dt, .rows = rows, .cols = cols};
  clnorm_variant v;
  clnorm__heuristic(info, &call, &v);
  return rule(info, &call, &v);
}
/* the split count; the row ranges of the column strips (0: none) */
#define splits(...) planned(clnorm__split_count, __VA_ARGS__)
#define strips(...) planned(clnorm__bwd_strip_ranges, __VA_ARGS__)

/* The heuristic's variant of a 4096 x `cols` call holds its row as `hold` vectors of `vec` in
 * each of `tpr` work-items. */
static void expect_held(const clnorm_device_info *info, clnorm_op op, clnorm_dtype dt, size_t cols,
                        unsigned tpr, unsigned hold, unsigned vec) {
  const clnorm_call call = {.op = op, .dtype = dt, .rows = 4096, .cols = cols};
  clnorm_variant v;
  clnorm__heuristic(info, &call, &v);
  EXPECT(v.tpr == tpr && v.hold == hold && v.vec == vec,
         "GPU %s %s 4096 x %zu: tpr %u hold %u vec %u, want tpr %u hold %u vec %u",
         clnorm_op_name(op), clnorm_dtype_name(dt), cols, v.tpr, v.hold, v.vec, tpr, hold, vec);
}

/* The heuristic's variant is the same at every row count of rows[] for every op, dtype and cols
 * of the lists (ops: forward or backward ones only). */
static void same_at_every_row_count(const clnorm_device_info *info, const char *label,
                                    int backward) {
  static const size_t rows[] = {1, 8, 16, 17, 64, 128, 256, 257, 2048, 4096, 4097, 65536};
  static const size_t cols[] = {1, 64, 768, 1000, 4096, 16384, 65536, 1048576};
  size_t checked = 0;
  for (int op = 0; op < CLNORM_OP_COUNT; op++) {
    if (clnorm__op_backward((clnorm_op)op) != backward)
      continue;
    for (int d = 0; d < 3; d++)
      for (size_t c = 0; c < sizeof cols / sizeof *cols; c++) {
        clnorm_call call = {.op = (clnorm_op)op, .dtype = (clnorm_dtype)d, .cols = cols[c]};
        clnorm_variant first, v;
        call.rows = rows[0];
        clnorm__heuristic(info, &call, &first);
        for (size_t r = 1; r < sizeof rows / sizeof *rows; r++) {
          call.rows = rows[r];
          clnorm__heuristic(info, &call, &v);
          char a[128], b[128];
          clnorm_variant_format(&first, a, sizeof a);
          clnorm_variant_format(&v, b, sizeof b);
          EXPECT(memcmp(&first, &v, sizeof v) == 0,
                 "%s: %s %s x %zu: the heuristic's variant at %zu rows is %s, at %zu rows %s",
                 label, clnorm_op_name((clnorm_op)op), clnorm_dtype_name((clnorm_dtype)d), cols[c],
                 rows[0], a, rows[r], b);
          checked++;
        }
      }
  }
  printf("%s: the heuristic's variant the same at every row count (%zu pairs)\n", label, checked);
}

int main(void) {
  clnorm_device_info gpu = fake_nvidia_gpu();
  gpu.ptx_sm = 90;

  /* a GPU's forward: rows under 128 KB are one group's work, however few the rows */
  for (int op = 0; op < CLNORM_OP_COUNT; op++) {
    if (clnorm__op_backward((clnorm_op)op))
      continue;
    const char *name = clnorm_op_name((clnorm_op)op);
    EXPECT(splits(&gpu, (clnorm_op)op, CLNORM_F32, 8, 16384) == 1,
           "GPU %s f32 8 x 16384 (64 KB rows): split %u ways, want no split", name,
           splits(&gpu, (clnorm_op)op, CLNORM_F32, 8, 16384));
    EXPECT(splits(&gpu, (clnorm_op)op, CLNORM_F32, 8, 32767) == 1,
           "GPU %s f32 8 x 32767 (just under 128 KB): split %u ways, want no split", name,
           splits(&gpu, (clnorm_op)op, CLNORM_F32, 8, 32767));
    EXPECT(splits(&gpu, (clnorm_op)op, CLNORM_BF16, 128, 32768) == 1,
           "GPU %s bf16 128 x 32768 (64 KB rows): split %u ways, want no split", name,
           splits(&gpu, (clnorm_op)op, CLNORM_BF16, 128, 32768));
    EXPECT(splits(&gpu, (clnorm_op)op, CLNORM_F32, 8, 32768) > 1,
           "GPU %s f32 8 x 32768 (128 KB rows): not split, want a split", name);
    EXPECT(splits(&gpu, (clnorm_op)op, CLNORM_BF16, 8, 65536) > 1,
           "GPU %s bf16 8 x 65536 (128 KB rows): not split, want a split", name);
    EXPECT(splits(&gpu, (clnorm_op)op, CLNORM_F32, 4096, 65536) == 1,
           "GPU %s f32 4096 x 65536: split %u ways; rows that fill the device need none", name,
           splits(&gpu, (clnorm_op)op, CLNORM_F32, 4096, 65536));
  }
  /* a GPU's backward is not bound by the forward's 128 KB: its unheld rows split */
  EXPECT(splits(&gpu, CLNORM_OP_LAYERNORM_BWD, CLNORM_F32, 8, 65536) > 1,
         "GPU layernorm_bwd f32 8 x 65536: not split, want a split");

  /* NVIDIA's 16-bit forward at 4096 columns: RMSNorm and the fused adds hold 4 vectors a
   * work-item over 128 work-items a row (one reduction; the residual's sum), LayerNorm 8 over 64
   * (two passes over the held row) */
  for (int d = CLNORM_F16; d <= CLNORM_BF16; d++) {
    expect_held(&gpu, CLNORM_OP_RMSNORM, (clnorm_dtype)d, 4096, 128, 4, 8);
    expect_held(&gpu, CLNORM_OP_ADD_RMSNORM, (clnorm_dtype)d, 4096, 128, 4, 8);
    expect_held(&gpu, CLNORM_OP_LAYERNORM, (clnorm_dtype)d, 4096, 64, 8, 8);
    expect_held(&gpu, CLNORM_OP_ADD_LAYERNORM, (clnorm_dtype)d, 4096, 128, 4, 8);
  }
  /* NVIDIA's float32 LayerNorm of 2049 to 4095 columns (the fused add's too): 128 work-items a
   * row holding 5 to 8 float4s; RMSNorm, and 4096 columns, 256 holding 4 or fewer */
  static const clnorm_op layernorms[] = {CLNORM_OP_LAYERNORM, CLNORM_OP_ADD_LAYERNORM};
  for (size_t i = 0; i < 2; i++) {
    expect_held(&gpu, layernorms[i], CLNORM_F32, 2560, 128, 8, 4);
    expect_held(&gpu, layernorms[i], CLNORM_F32, 3072, 128, 8, 4);
    expect_held(&gpu, layernorms[i], CLNORM_F32, 4096, 256, 4, 4);
  }
  expect_held(&gpu, CLNORM_OP_RMSNORM, CLNORM_F32, 2560, 256, 4, 4);
  /* NVIDIA (its kernels run at their compiled size): rows that 256 work-items do not hold take
   * up to 1024, the forward's in half the registers a work-item has there (float32 65536 columns
   * stays re-read by 256), the 16-bit backward's as 8 vectors of 4 */
  expect_held(&gpu, CLNORM_OP_LAYERNORM, CLNORM_F16, 65536, 1024, 8, 8);
  expect_held(&gpu, CLNORM_OP_RMSNORM, CLNORM_BF16, 32768, 512, 8, 8);
  expect_held(&gpu, CLNORM_OP_LAYERNORM, CLNORM_F32, 32768, 512, 16, 4);
  expect_held(&gpu, CLNORM_OP_LAYERNORM, CLNORM_F32, 65536, 256, 0, 4);
  expect_held(&gpu, CLNORM_OP_LAYERNORM, CLNORM_F32, 16384, 256, 16, 4);
  expect_held(&gpu, CLNORM_OP_LAYERNORM_BWD, CLNORM_F16, 16384, 512, 8, 4);
  expect_held(&gpu, CLNORM_OP_RMSNORM_BWD, CLNORM_BF16, 32768, 1024, 8, 4);
  expect_held(&gpu, CLNORM_OP_RMSNORM_BWD, CLNORM_F16, 8192, 256, 4, 8);
  /* NVIDIA's 16-bit LayerNorm backward of a held row of 513 to 8192 columns: vectors of 4, in
   * groups of at least 256; 512 columns, RMSNorm's and float32's as before */
  for (int d = CLNORM_F16; d <= CLNORM_BF16; d++) {
    expect_held(&gpu, CLNORM_OP_LAYERNORM_BWD, (clnorm_dtype)d, 512, 32, 2, 8);
    expect_held(&gpu, CLNORM_OP_LAYERNORM_BWD, (clnorm_dtype)d, 768, 64, 4, 4);
    expect_held(&gpu, CLNORM_OP_LAYERNORM_BWD, (clnorm_dtype)d, 1024, 64, 4, 4);
    expect_held(&gpu, CLNORM_OP_LAYERNORM_BWD, (clnorm_dtype)d, 4096, 256, 4, 4);
    expect_held(&gpu, CLNORM_OP_LAYERNORM_BWD, (clnorm_dtype)d, 8192, 256, 8, 4);
    expect_held(&gpu, CLNORM_OP_RMSNORM_BWD, (clnorm_dtype)d, 1024, 64, 2, 8);
    /* a row not held (more than 32 elements a work-item at 1024): vectors of 4 */
    expect_held(&gpu, CLNORM_OP_LAYERNORM_BWD, (clnorm_dtype)d, 65536, 256, 0, 4);
    expect_held(&gpu, CLNORM_OP_LAYERNORM_BWD, (clnorm_dtype)d, 49152, 256, 0, 4);
    /* LayerNorm's held by 512 at most: 16385-32768 columns not held (RMSNorm's by 1024) */
    expect_held(&gpu, CLNORM_OP_LAYERNORM_BWD, (clnorm_dtype)d, 32768, 256, 0, 4);
    expect_held(&gpu, CLNORM_OP_LAYERNORM_BWD, (clnorm_dtype)d, 16385, 256, 0, 4);
    expect_held(&gpu, CLNORM_OP_LAYERNORM_BWD, (clnorm_dtype)d, 16384, 512, 8, 4);
    expect_held(&gpu, CLNORM_OP_RMSNORM_BWD, (clnorm_dtype)d, 65536, 256, 0, 4);
    expect_held(&gpu, CLNORM_OP_RMSNORM_BWD, (clnorm_dtype)d, 49152, 256, 0, 4);
  }
  expect_held(&gpu, CLNORM_OP_LAYERNORM_BWD, CLNORM_F32, 1024, 64, 4, 4);
  {
    const clnorm_call c = {
        .op = CLNORM_OP_LAYERNORM_BWD, .dtype = CLNORM_F16, .rows = 4096, .cols = 1024};
    clnorm_variant v;
    clnorm__heuristic(&gpu, &c, &v);
    EXPECT(v.wg == 256, "GPU layernorm_bwd f16 4096 x 1024: wg %u, want 256", v.wg);
  }
  /* NVIDIA's backward of more than 16384 columns in 512 rows or more takes the column strips
   * (clnorm__bwd_strip_ranges: 1.10-3.29x there on the H200); fewer rows, rows of 16384 columns, a
   * CPU, another GPU or CLNORM_BWD_STRIP=0 do not. */
  for (int d = 0; d < 3; d++)
    for (int op = CLNORM_OP_LAYERNORM_BWD; op <= CLNORM_OP_RMSNORM_BWD; op++) {
      const char *name = clnorm_op_name((clnorm_op)op);
      EXPECT(strips(&gpu, (clnorm_op)op, (clnorm_dtype)d, 1024, 32768) > 1,
             "GPU %s dtype %d 1024 x 32768: no column strips", name, d);
      EXPECT(strips(&gpu, (clnorm_op)op, (clnorm_dtype)d, 512, 20480) > 1,
             "GPU %s dtype %d 512 x 20480: no column strips", name, d);
      EXPECT(strips(&gpu, (clnorm_op)op, (clnorm_dtype)d, 4096, 65536) > 0,
             "GPU %s dtype %d 4096 x 65536: no column strips", name, d);
      EXPECT(strips(&gpu, (clnorm_op)op, (clnorm_dtype)d, 4096, 16384) == 0,
             "GPU %s dtype %d 4096 x 16384: column strips", name, d);
      EXPECT(strips(&gpu, (clnorm_op)op, (clnorm_dtype)d, 256, 65536) == 0,
             "GPU %s dtype %d 256 x 65536: column strips", name, d);
    }
  {
    /* the tile kernels' row lanes must fit the device's local memory: 1024 work-items of 8
     * floats need 24 KiB (three lanes' of four), 4 floats 12 KiB; 48 KiB here takes both, 16 KiB
     * only the 4 floats, and neither the strips nor the split rows take what does not fit */
    const clnorm_call wide = {
        .op = CLNORM_OP_LAYERNORM_BWD, .dtype = CLNORM_F16, .rows = 2048, .cols = 32768};
    const clnorm_call few = {
        .op = CLNORM_OP_LAYERNORM_BWD, .dtype = CLNORM_F16, .rows = 16, .cols = 4194304};
    const clnorm_variant v8 = {1024, 1024, 8, 0, CLNORM_REDUCE_LOCAL, CLNORM_STATS_WELFORD};
    const clnorm_variant v4 = {1024, 1024, 4, 0, CLNORM_REDUCE_LOCAL, CLNORM_STATS_WELFORD};
    EXPECT(clnorm__bwd_strip_ranges(&gpu, &wide, &v8) > 0, "GPU 1024 x 8 floats: no column strips");
    EXPECT(clnorm__split_count(&gpu, &few, &v8) > 1, "GPU 1024 x 8 floats: no split rows");
    clnorm_device_info small = gpu;
    small.local_mem = 16 * 1024;
    EXPECT(clnorm__bwd_strip_ranges(&small, &wide, &v8) == 0,
           "16 KiB, 1024 x 8 floats: column strips beyond the local memory");
    EXPECT(clnorm__bwd_strip_ranges(&small, &wide, &v4) > 0,
           "16 KiB, 1024 x 4 floats: no column strips");
    EXPECT(clnorm__split_count(&small, &few, &v8) == 1,
           "16 KiB, 1024 x 8 floats: split rows beyond the local memory");
    EXPECT(clnorm__split_count(&small, &few, &v4) > 1, "16 KiB, 1024 x 4 floats: no split rows");
  }
  gpu.bwd_strip = -1; /* CLNORM_BWD_STRIP=0 */
  EXPECT(strips(&gpu, CLNORM_OP_LAYERNORM_BWD, CLNORM_F16, 1024, 32768) == 0,
         "GPU, CLNORM_BWD_STRIP=0: column strips");
  gpu.bwd_strip = 1; /* CLNORM_BWD_STRIP=1: every backward row of 16384 columns or more */
  EXPECT(strips(&gpu, CLNORM_OP_LAYERNORM_BWD, CLNORM_F16, 64, 16384) > 0,
         "GPU, CLNORM_BWD_STRIP=1, 64 x 16384: no column strips");
  EXPECT(strips(&gpu, CLNORM_OP_LAYERNORM, CLNORM_F16, 1024, 32768) == 0,
         "GPU, CLNORM_BWD_STRIP=1: a forward op in column strips");
  gpu.bwd_strip = 0;
  gpu.is_nvidia = 0;
  EXPECT(strips(&gpu, CLNORM_OP_LAYERNORM_BWD, CLNORM_F16, 1024, 32768) == 0,
         "another GPU: column strips (measured on NVIDIA's only)");
  gpu.is_nvidia = 1;
  {
    const clnorm_device_info cpu16 = fake_cpu(16);
    EXPECT(strips(&cpu16, CLNORM_OP_LAYERNORM_BWD, CLNORM_F32, 4096, 32768) == 0,
           "CPU: column strips");
  }
  gpu.reqd_wg = 0; /* elsewhere: at most 256 */
  expect_held(&gpu, CLNORM_OP_LAYERNORM, CLNORM_F16, 65536, 256, 0, 8);
  expect_held(&gpu, CLNORM_OP_LAYERNORM_BWD, CLNORM_F16, 16384, 256, 4, 16);
  gpu.reqd_wg = 1;

  /* a CPU splits few rows of any length that leave its cores idle */
  clnorm_device_info cpu = fake_cpu(16);
  EXPECT(splits(&cpu, CLNORM_OP_LAYERNORM, CLNORM_F32, 2, 16384) > 1,
         "CPU layernorm f32 2 x 16384 on 16 cores: not split, want a split");

  /* A kernel's largest work-group: NVIDIA's OpenCL answers 256 for every kernel, where the size
   * the kernel was compiled for counts, up to the device's; elsewhere, or for a kernel compiled
   * for no size or for more than the device allows, the answer stands. */
  const size_t c1024[3] = {1024, 1, 1}, c512[3] = {512, 1, 1}, c128[3] = {128, 1, 1};
  const size_t c_none[3] = {0, 0, 0}, c_2d[3] = {512, 2, 1};
  EXPECT(clnorm__kernel_max_wg(&gpu, 256, c1024) == 1024, "NVIDIA, compiled for 1024: %zu",
         clnorm__kernel_max_wg(&gpu, 256, c1024));
  EXPECT(clnorm__kernel_max_wg(&gpu, 256, c512) == 512, "NVIDIA, compiled for 512: %zu",
         clnorm__kernel_max_wg(&gpu, 256, c512));
  EXPECT(clnorm__kernel_max_wg(&gpu, 256, c128) == 256, "NVIDIA, compiled for 128: %zu",
         clnorm__kernel_max_wg(&gpu, 256, c128));
  EXPECT(clnorm__kernel_max_wg(&gpu, 256, c_none) == 256, "NVIDIA, compiled for no size: %zu",
         clnorm__kernel_max_wg(&gpu, 256, c_none));
  EXPECT(clnorm__kernel_max_wg(&gpu, 256, c_2d) == 256, "NVIDIA, compiled for 512 x 2: %zu",
         clnorm__kernel_max_wg(&gpu, 256, c_2d));
  gpu.max_wg = 512;
  EXPECT(clnorm__kernel_max_wg(&gpu, 256, c1024) == 256,
         "NVIDIA of at most 512, compiled for 1024: %zu", clnorm__kernel_max_wg(&gpu, 256, c1024));
  gpu.max_wg = 1024;
  gpu.reqd_wg = 0; /* other platforms, and CLNORM_REQD_WG=0 */
  EXPECT(clnorm__kernel_max_wg(&gpu, 256, c1024) == 256, "reqd_wg off, compiled for 1024: %zu",
         clnorm__kernel_max_wg(&gpu, 256, c1024));
  gpu.reqd_wg = 1;

  same_at_every_row_count(&gpu, "an NVIDIA GPU, forward", 0);
  same_at_every_row_count(&gpu, "an NVIDIA GPU, backward", 1);
  gpu.is_nvidia = 0;
  gpu.ptx_sm = 0;
  gpu.has_subgroups = 1;
  same_at_every_row_count(&gpu, "a GPU with sub-groups, forward", 0);
  static const cl_uint cores[] = {2, 16};
  for (size_t i = 0; i < sizeof cores / sizeof *cores; i++) {
    char label[64];
    cpu = fake_cpu(cores[i]);
    snprintf(label, sizeof label, "a CPU of %u cores, backward", cores[i]);
    same_at_every_row_count(&cpu, label, 1);
  }
  printf("test_plan_rules: %d failures\n", failures);
  return failures ? 1 : 0;
}
