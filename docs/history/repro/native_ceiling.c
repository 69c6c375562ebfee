/* Native ceiling: what hand-written AVX-512 C (gcc -O3 -march=native, OpenMP) reaches for
 * LayerNorm / RMSNorm forward against a streaming copy of the same bytes, same threads. */
#include <immintrin.h>
#include <math.h>
#include <omp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static size_t R, C;
static int cmpd(const void *a, const void *b) { double x = *(const double *)a, y = *(const double *)b; return (x > y) - (x < y); }

static void copy32(const float *x, float *y) {
#pragma omp parallel for schedule(static)
  for (size_t r = 0; r < R; r++)
    for (size_t c = 0; c < C; c += 16) _mm512_stream_ps(y + r * C + c, _mm512_load_ps(x + r * C + c));
}
static void copy16(const uint16_t *x, uint16_t *y) {
#pragma omp parallel for schedule(static)
  for (size_t r = 0; r < R; r++)
    for (size_t c = 0; c < C; c += 16) _mm256_stream_si256((__m256i *)(y + r * C + c), _mm256_load_si256((const __m256i *)(x + r * C + c)));
}
static inline __m512 ld(const void *p, size_t i, int h) {
  return h ? _mm512_cvtph_ps(_mm256_load_si256((const __m256i *)((const uint16_t *)p + i))) : _mm512_load_ps((const float *)p + i);
}
static inline void st(void *p, size_t i, __m512 v, int h) {
  if (h) _mm256_stream_si256((__m256i *)((uint16_t *)p + i), _mm512_cvtps_ph(v, 0));
  else _mm512_stream_ps((float *)p + i, v);
}
static void ln(const void *x, const void *g, const void *b, void *y, int h, int rms) {
#pragma omp parallel for schedule(static)
  for (size_t r = 0; r < R; r++) {
    const size_t o = r * C;
    float mean = 0, rstd;
    if (!rms) {
      __m512 s0 = _mm512_setzero_ps(), s1 = s0;
      for (size_t c = 0; c < C; c += 32) { s0 = _mm512_add_ps(s0, ld(x, o + c, h)); s1 = _mm512_add_ps(s1, ld(x, o + c + 16, h)); }
      mean = _mm512_reduce_add_ps(_mm512_add_ps(s0, s1)) / C;
    }
    __m512 m = _mm512_set1_ps(mean), q0 = _mm512_setzero_ps(), q1 = q0;
    for (size_t c = 0; c < C; c += 32) {
      __m512 d0 = _mm512_sub_ps(ld(x, o + c, h), m), d1 = _mm512_sub_ps(ld(x, o + c + 16, h), m);
      q0 = _mm512_fmadd_ps(d0, d0, q0); q1 = _mm512_fmadd_ps(d1, d1, q1);
    }
    rstd = 1.0f / sqrtf(_mm512_reduce_add_ps(_mm512_add_ps(q0, q1)) / C + 1e-5f);
    __m512 rs = _mm512_set1_ps(rstd);
    for (size_t c = 0; c < C; c += 16) {
      __m512 v = _mm512_mul_ps(_mm512_sub_ps(ld(x, o + c, h), m), rs);
      v = rms ? _mm512_mul_ps(v, ld(g, c, h)) : _mm512_fmadd_ps(v, ld(g, c, h), ld(b, c, h));
      st(y, o + c, v, h);
    }
  }
}
int main(int argc, char **argv) {
  int reps = 30;
  for (int a = 1; a < argc; a++) {
    sscanf(argv[a], "%zux%zu", &R, &C);
    for (int h = 0; h < 2; h++) {
      const size_t es = h ? 2 : 4, bytes = R * C * es;
      const int nset = 4;
      void *x[4], *y[4];
      for (int s = 0; s < nset; s++) {
        x[s] = aligned_alloc(64, bytes); y[s] = aligned_alloc(64, bytes);
#pragma omp parallel for schedule(static)
        for (size_t r = 0; r < R; r++) {
          for (size_t c = 0; c < C; c++) {
            float v = (float)((r * 131 + c * 7 + s) % 1000) / 500.0f - 1.0f;
            if (h) ((uint16_t *)x[s])[r * C + c] = _cvtss_sh(v, 0); else ((float *)x[s])[r * C + c] = v;
          }
          memset((char *)y[s] + r * C * es, 0, C * es);
        }
      }
      void *g = aligned_alloc(64, C * es), *b = aligned_alloc(64, C * es);
      for (size_t c = 0; c < C; c++) { float v = 1.0f + (c % 7) * 0.01f; if (h) { ((uint16_t *)g)[c] = _cvtss_sh(v, 0); ((uint16_t *)b)[c] = _cvtss_sh(0.1f, 0); } else { ((float *)g)[c] = v; ((float *)b)[c] = 0.1f; } }
      double t[3][64];
      for (int i = -3; i < reps; i++)
        for (int k = 0; k < 3; k++) {
          int s = (i + 3 + k) % nset;
          double t0 = omp_get_wtime();
          if (k == 0) { if (h) copy16(x[s], y[s]); else copy32(x[s], y[s]); }
          else ln(x[s], g, b, y[s], h, k == 2);
          double t1 = omp_get_wtime();
          if (i >= 0) t[k][i] = t1 - t0;
        }
      double gb[3];
      for (int k = 0; k < 3; k++) { qsort(t[k], reps, sizeof(double), cmpd); gb[k] = 2.0 * bytes / t[k][reps / 2] / 1e9; }
      printf("%zux%zu %s threads=%d copy %.1f GB/s  layernorm %.1f (%.2f)  rmsnorm %.1f (%.2f)\n", R, C, h ? "f16" : "f32", omp_get_max_threads(), gb[0], gb[1], gb[1] / gb[0], gb[2], gb[2] / gb[0]);
      fflush(stdout);
      for (int s = 0; s < nset; s++) { free(x[s]); free(y[s]); }
      free(g); free(b);
    }
  }
  return 0;
}
