/* The heuristic's variant on a grid of (op, dtype, rows, cols) for tests/fake_device.h's NVIDIA
 * GPU, one line each: diff two trees' outputs to see which shapes a rule change moves (session
 * 54: bwd16-ln-long.patch moves LayerNorm's 16-bit backward of 16385-32768 columns only). Build
 * against a tree's library, with that tree's variants.c linked first:
 *   gcc -O1 -ISRC/src -ISRC/include -Itests -IBUILD -o grid heuristic-grid.c SRC/src/variants.c \
 *       BUILD/libclnorm.a -lOpenCL -lsqlite3 -lm -lpthread && ./grid > grid.txt
 * Lines: op dtype rows cols wg tpr vec hold reduce stats (ops: 0 layernorm_bwd, 1 rmsnorm_bwd, 2
 * layernorm, 3 rmsnorm; dtypes 0 f32, 1 f16, 2 bf16); "e" lines: LayerNorm's backward at
 * 16380-16390 columns. */
#define CL_TARGET_OPENCL_VERSION 300
#include "internal.h"
#include "fake_device.h"
#include <stdio.h>
int main(void) {
  clnorm_device_info info = fake_nvidia_gpu();
  const clnorm_op ops[] = {CLNORM_OP_LAYERNORM_BWD, CLNORM_OP_RMSNORM_BWD, CLNORM_OP_LAYERNORM, CLNORM_OP_RMSNORM};
  const clnorm_dtype dts[] = {CLNORM_F32, CLNORM_F16, CLNORM_BF16};
  const size_t rows[] = {1, 8, 16, 64, 128, 256, 512, 1000, 1023, 1024, 1025, 2048, 4096, 16384, 65536};
  for (int o = 0; o < 4; ++o) for (int d = 0; d < 3; ++d) for (int r = 0; r < 15; ++r)
    for (size_t c = 64; c <= 300000; c = c * 5 / 4 + 64) {
      clnorm_call call = {0};
      call.op = ops[o]; call.dtype = dts[d]; call.rows = rows[r]; call.cols = c;
      clnorm_variant v; clnorm__heuristic(&info, &call, &v);
      printf("%d %d %zu %zu %u %u %u %u %d %d\n", o, d, rows[r], c, v.wg, v.tpr, v.vec, v.hold, (int)v.reduce, (int)v.stats);
    }
  for (int d = 1; d < 3; ++d) for (size_t c = 16380; c <= 16390; ++c) for (int r = 0; r < 15; ++r) {
      clnorm_call call = {0}; call.op = CLNORM_OP_LAYERNORM_BWD; call.dtype = dts[d]; call.rows = rows[r]; call.cols = c;
      clnorm_variant v; clnorm__heuristic(&info, &call, &v);
      printf("e %d %zu %zu %u %u %u %u\n", d, rows[r], c, v.wg, v.tpr, v.vec, v.hold);
  }
  return 0;
}
