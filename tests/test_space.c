/* One variant space: the variant the heuristic gives any call is one the tuner's search lists
 * (clnorm__variant_list), so a tuning run always meets the dispatcher's default and a tuned
 * winner can only replace it by beating it. Checked for every op and dtype over a grid of shapes,
 * on the test device and on fabricated CPUs (1, 2, 16 and 64 cores) and GPUs (NVIDIA's platform;
 * sub-groups; a 256-item limit without sub-groups). */
#include "harness.h"
#include "fake_device.h"
#include "internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static size_t checked, failed;

static void check_device(const clnorm_device_info *info, const char *label) {
  static const size_t rows[] = {1, 3, 16, 64, 200, 1024, 4096, 65536, 1000000};
  static const size_t cols[] = {1, 7, 64, 256, 768, 1000, 4096, 4095, 65536, 4194304};
  static clnorm_variant list[1 << 14];
  for (int op = 0; op < CLNORM_OP_COUNT; op++)
    for (int d = 0; d < 3; d++) {
      const size_t n = clnorm__variant_list(info, (clnorm_op)op, (clnorm_dtype)d, list,
                                            sizeof list / sizeof *list);
      if (n > sizeof list / sizeof *list) {
        printf("FAIL %s: %zu variants, more than the test's list holds\n", label, n);
        failed++;
        continue;
      }
      for (size_t r = 0; r < sizeof rows / sizeof *rows; r++)
        for (size_t c = 0; c < sizeof cols / sizeof *cols; c++) {
          const clnorm_call call = {.op = (clnorm_op)op, .rows = rows[r], .cols = cols[c],
                                    .dtype = (clnorm_dtype)d};
          clnorm_variant v;
          clnorm__heuristic(info, &call, &v);
          size_t i = 0;
          while (i < n && memcmp(&list[i], &v, sizeof v) != 0)
            i++;
          checked++;
          if (i == n) {
            char text[128];
            clnorm_variant_format(&v, text, sizeof text);
            if (failed++ < 20)
              printf("FAIL %s: %s %s %zu x %zu: the heuristic's %s is not in the searched space "
                     "(%zu variants)\n",
                     label, clnorm_op_name((clnorm_op)op), clnorm_dtype_name((clnorm_dtype)d),
                     rows[r], cols[c], text, n);
          }
        }
    }
}

int main(void) {
  harness h;
  harness_open(&h, "test_space");
  check_device(&h.ctx->info, h.ctx->info.name);
  static const cl_uint cores[] = {1, 2, 16, 64};
  for (size_t i = 0; i < sizeof cores / sizeof *cores; i++) {
    char label[64];
    const clnorm_device_info cpu = fake_cpu(cores[i]);
    snprintf(label, sizeof label, "a CPU of %u cores", cores[i]);
    check_device(&cpu, label);
  }
  clnorm_device_info gpu = fake_nvidia_gpu();
  check_device(&gpu, "an NVIDIA GPU");
  gpu.is_nvidia = 0;
  gpu.has_subgroups = 1;
  check_device(&gpu, "a GPU with sub-groups");
  gpu.has_subgroups = 0;
  gpu.max_wg = 256;
  gpu.local_mem = 32 << 10;
  check_device(&gpu, "a GPU of 256 work-items, no sub-groups");
  printf("test_space: %zu heuristic choices checked, %zu not in the searched space\n", checked,
         failed);
  harness_close(&h);
  return failed ? 1 : 0;
}
