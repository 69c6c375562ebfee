/* Which AVX-512 instructions take a microcode assist on this CPU with subnormal operands or
 * results (issue 25, point 4; docs/DEVICES.md, "PoCL 3.1: subnormal inputs"): ns per 16-lane
 * instruction in a loop over 4096 floats, the best of 5; about 1.5 without an assist.
 *   cc -O2 -mavx512f -mf16c -o /tmp/assist assist.c && /tmp/assist */
#define _POSIX_C_SOURCE 200809L
#include <immintrin.h>
#include <stdio.h>
#include <time.h>

#define N 4096
static float a[N] __attribute__((aligned(64))), b[N] __attribute__((aligned(64))),
    c[N] __attribute__((aligned(64))), out[N] __attribute__((aligned(64)));
static unsigned short h[N] __attribute__((aligned(64)));

static double now_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1e9 + t.tv_nsec;
}

enum { FMA, ADD, MUL, SQRT, PH2PS, PS2PH };

static double run(int op, float av, float bv, float cv) {
  for (int i = 0; i < N; i++) {
    a[i] = av;
    b[i] = bv;
    c[i] = cv;
  }
  const __m256i hv = _mm512_cvtps_ph(_mm512_set1_ps(av), 0);
  for (int i = 0; i < N; i += 16)
    _mm256_store_si256((__m256i *)(h + i), hv);
  double best = 1e30;
  for (int r = 0; r < 5; r++) {
    const double t0 = now_ns();
    for (int k = 0; k < 50; k++)
      for (int i = 0; i < N; i += 16) {
        const __m512 x = _mm512_load_ps(a + i), y = _mm512_load_ps(b + i),
                     z = _mm512_load_ps(c + i);
        __m512 o;
        switch (op) {
        case FMA: o = _mm512_fmadd_ps(x, y, z); break;
        case ADD: o = _mm512_add_ps(x, y); break;
        case MUL: o = _mm512_mul_ps(x, y); break;
        case SQRT: o = _mm512_sqrt_ps(x); break;
        case PH2PS: o = _mm512_cvtph_ps(_mm256_load_si256((const __m256i *)(h + i))); break;
        default:
          _mm256_store_si256((__m256i *)(h + i), _mm512_cvtps_ph(x, 0));
          continue;
        }
        _mm512_store_ps(out + i, o);
      }
    const double t = (now_ns() - t0) / (50.0 * N / 16);
    if (t < best)
      best = t;
  }
  return best;
}

int main(void) {
  const float s = 1e-40f; /* subnormal */
  printf("ns per 16-lane instruction (s: subnormal, n: normal)\n");
  printf("add n+n->n            %6.2f\n", run(ADD, 1.0f, 2.0f, 0));
  printf("add s+n->n            %6.2f\n", run(ADD, s, 1.0f, 0));
  printf("add s+s->s            %6.2f\n", run(ADD, s, s, 0));
  printf("add s+n->s            %6.2f\n", run(ADD, s, -1.2e-38f, 0));
  printf("add n+n->s            %6.2f\n", run(ADD, 1.5e-38f, -1.4e-38f, 0));
  printf("mul n*n->n            %6.2f\n", run(MUL, 1.0f, 2.0f, 0));
  printf("mul s*n->n            %6.2f\n", run(MUL, s, 1e10f, 0));
  printf("mul s*2^64->n (exact) %6.2f\n", run(MUL, s, 0x1p64f, 0));
  printf("mul s*n->s            %6.2f\n", run(MUL, s, 0.5f, 0));
  printf("mul n*n->s            %6.2f\n", run(MUL, 1e-20f, 1e-20f, 0));
  printf("mul s*s->0            %6.2f\n", run(MUL, s, s, 0));
  printf("mul s*n->0            %6.2f\n", run(MUL, s, 1e-10f, 0));
  printf("fma n*n+n             %6.2f\n", run(FMA, 1.0f, 2.0f, 3.0f));
  printf("fma s*s+n             %6.2f\n", run(FMA, s, s, 1.0f));
  printf("fma s*n+n             %6.2f\n", run(FMA, s, 1.0f, 1.0f));
  printf("fma n*n+s             %6.2f\n", run(FMA, 1.0f, 2.0f, s));
  printf("sqrt n                %6.2f\n", run(SQRT, 2.0f, 0, 0));
  printf("sqrt s                %6.2f\n", run(SQRT, s, 0, 0));
  printf("vcvtph2ps n half      %6.2f\n", run(PH2PS, 1.0f, 0, 0));
  printf("vcvtph2ps s half      %6.2f\n", run(PH2PS, 1e-6f, 0, 0));
  printf("vcvtps2ph ->n half    %6.2f\n", run(PS2PH, 1.0f, 0, 0));
  printf("vcvtps2ph ->s half    %6.2f\n", run(PS2PH, 1e-6f, 0, 0));
  return 0;
}
