/* Bounds and schedules for a norm on one CPU, against a streaming copy of the same bytes on the
 * same threads, interleaved, median of REPS. Each thread owns a contiguous range of rows.
 *   copy   : y = x (streaming stores)
 *   scale  : y = cvt(x) * s       (one read, the least any norm does)
 *   ln3    : LayerNorm, sum pass, squares pass, output pass (rows re-read from cache)
 *   ln2    : LayerNorm, sum + sum of squares pass, output pass (the least of two reads)
 *   pipe1  : ln2's passes software-pipelined: row r's output loop also takes row r+1's sums
 *   pipe2  : exact two-pass: row r's output loop takes row r+1's sum; row r+1's squares from cache
 *   copy32 : copy with 32-byte accesses; scale64 : scale with 64-byte accesses (f16)
 *   dtypes f32, f16 (F16C) and bf16 (shifts, rounding to nearest even)
 * gcc -O3 -march=native -fopenmp native_pipe.c -o np -lm */
#include <immintrin.h>
#include <math.h>
#include <omp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
static size_t R, C;
static int H;
static int cmpd(const void *a, const void *b) { double x = *(const double *)a, y = *(const double *)b; return (x > y) - (x < y); }
static inline __m512 ld(const void *p, size_t i) {
  if (H == 2) return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(_mm256_load_si256((const __m256i *)((const uint16_t *)p + i))), 16));
  return H ? _mm512_cvtph_ps(_mm256_load_si256((const __m256i *)((const uint16_t *)p + i))) : _mm512_load_ps((const float *)p + i);
}
static inline void st(void *p, size_t i, __m512 v) {
  if (H == 2) {
    __m512i b = _mm512_castps_si512(v);
    b = _mm512_add_epi32(b, _mm512_add_epi32(_mm512_set1_epi32(0x7fff), _mm512_and_si512(_mm512_srli_epi32(b, 16), _mm512_set1_epi32(1))));
    _mm256_stream_si256((__m256i *)((uint16_t *)p + i), _mm512_cvtepi32_epi16(_mm512_srli_epi32(b, 16)));
  } else if (H) _mm256_stream_si256((__m256i *)((uint16_t *)p + i), _mm512_cvtps_ph(v, 0));
  else _mm512_stream_ps((float *)p + i, v);
}
#define RANGE size_t t = omp_get_thread_num(), T = omp_get_num_threads(), r0 = t * R / T, r1 = (t + 1) * R / T
static void copy(const void *x, void *y) {
#pragma omp parallel
  { RANGE; size_t es = H ? 2 : 4;
    for (size_t r = r0; r < r1; r++)
      for (size_t c = 0; c < C * es; c += 64) _mm512_stream_si512((__m512i *)((char *)y + r * C * es + c), _mm512_load_si512((const char *)x + r * C * es + c)); }
}
static void scale(const void *x, const void *g, const void *b, void *y) {
  (void)g; (void)b;
#pragma omp parallel
  { RANGE; __m512 s = _mm512_set1_ps(1.01f);
    for (size_t r = r0; r < r1; r++)
      for (size_t c = 0; c < C; c += 16) st(y, r * C + c, _mm512_mul_ps(ld(x, r * C + c), s)); }
}
/* f16 only: 64-byte loads and stores, two conversions each */
static void scale64(const void *x, const void *g, const void *b, void *y) {
  (void)g; (void)b;
#pragma omp parallel
  { RANGE; __m512 s = _mm512_set1_ps(1.01f);
    if (H != 1) { for (size_t r = r0; r < r1; r++) for (size_t c = 0; c < C; c += 16) st(y, r * C + c, _mm512_mul_ps(ld(x, r * C + c), s)); }
    else for (size_t r = r0; r < r1; r++)
      for (size_t c = 0; c < C; c += 32) {
        __m512i v = _mm512_load_si512((const uint16_t *)x + r * C + c);
        __m256i lo = _mm512_cvtps_ph(_mm512_mul_ps(_mm512_cvtph_ps(_mm512_castsi512_si256(v)), s), 0);
        __m256i hi = _mm512_cvtps_ph(_mm512_mul_ps(_mm512_cvtph_ps(_mm512_extracti64x4_epi64(v, 1)), s), 0);
        _mm512_stream_si512((__m512i *)((uint16_t *)y + r * C + c), _mm512_inserti64x4(_mm512_castsi256_si512(lo), hi, 1));
      } }
}
static void copy32(const void *x, const void *g, const void *b, void *y) {
  (void)g; (void)b;
#pragma omp parallel
  { RANGE; size_t es = H ? 2 : 4;
    for (size_t r = r0; r < r1; r++)
      for (size_t c = 0; c < C * es; c += 32) _mm256_stream_si256((__m256i *)((char *)y + r * C * es + c), _mm256_load_si256((const __m256i *)((const char *)x + r * C * es + c))); }
}
static inline void out_row(const void *x, const void *g, const void *b, void *y, size_t o, float mean, float rstd) {
  __m512 m = _mm512_set1_ps(mean), rs = _mm512_set1_ps(rstd);
  for (size_t c = 0; c < C; c += 16) st(y, o + c, _mm512_fmadd_ps(_mm512_mul_ps(_mm512_sub_ps(ld(x, o + c), m), rs), ld(g, c), ld(b, c)));
}
static void ln3(const void *x, const void *g, const void *b, void *y) {
#pragma omp parallel
  { RANGE;
    for (size_t r = r0; r < r1; r++) {
      size_t o = r * C; __m512 s0 = _mm512_setzero_ps(), s1 = s0;
      for (size_t c = 0; c < C; c += 32) { s0 = _mm512_add_ps(s0, ld(x, o + c)); s1 = _mm512_add_ps(s1, ld(x, o + c + 16)); }
      float mean = _mm512_reduce_add_ps(_mm512_add_ps(s0, s1)) / C;
      __m512 m = _mm512_set1_ps(mean), q0 = _mm512_setzero_ps(), q1 = q0;
      for (size_t c = 0; c < C; c += 32) { __m512 d0 = _mm512_sub_ps(ld(x, o + c), m), d1 = _mm512_sub_ps(ld(x, o + c + 16), m); q0 = _mm512_fmadd_ps(d0, d0, q0); q1 = _mm512_fmadd_ps(d1, d1, q1); }
      out_row(x, g, b, y, o, mean, 1.0f / sqrtf(_mm512_reduce_add_ps(_mm512_add_ps(q0, q1)) / C + 1e-5f));
    } }
}
static void sums(const void *x, size_t o, float *mean, float *rstd) {
  __m512 s0 = _mm512_setzero_ps(), s1 = s0, q0 = s0, q1 = s0;
  for (size_t c = 0; c < C; c += 32) { __m512 a = ld(x, o + c), bb = ld(x, o + c + 16); s0 = _mm512_add_ps(s0, a); s1 = _mm512_add_ps(s1, bb); q0 = _mm512_fmadd_ps(a, a, q0); q1 = _mm512_fmadd_ps(bb, bb, q1); }
  float m = _mm512_reduce_add_ps(_mm512_add_ps(s0, s1)) / C, v = _mm512_reduce_add_ps(_mm512_add_ps(q0, q1)) / C - m * m;
  *mean = m; *rstd = 1.0f / sqrtf(v + 1e-5f);
}
static void ln2(const void *x, const void *g, const void *b, void *y) {
#pragma omp parallel
  { RANGE;
    for (size_t r = r0; r < r1; r++) { float m, rs; sums(x, r * C, &m, &rs); out_row(x, g, b, y, r * C, m, rs); } }
}
static void pipe1(const void *x, const void *g, const void *b, void *y) {
#pragma omp parallel
  { RANGE; float mean, rstd;
    if (r0 < r1) sums(x, r0 * C, &mean, &rstd);
    for (size_t r = r0; r < r1; r++) {
      size_t o = r * C, n = o + C; __m512 m = _mm512_set1_ps(mean), rs = _mm512_set1_ps(rstd);
      __m512 s0 = _mm512_setzero_ps(), q0 = s0;
      if (r + 1 < r1) {
        for (size_t c = 0; c < C; c += 16) {
          __m512 a = ld(x, n + c); s0 = _mm512_add_ps(s0, a); q0 = _mm512_fmadd_ps(a, a, q0);
          st(y, o + c, _mm512_fmadd_ps(_mm512_mul_ps(_mm512_sub_ps(ld(x, o + c), m), rs), ld(g, c), ld(b, c)));
        }
        float mm = _mm512_reduce_add_ps(s0) / C, v = _mm512_reduce_add_ps(q0) / C - mm * mm;
        mean = mm; rstd = 1.0f / sqrtf(v + 1e-5f);
      } else out_row(x, g, b, y, o, mean, rstd);
    } }
}
static void pipe2(const void *x, const void *g, const void *b, void *y) {
#pragma omp parallel
  { RANGE; float mean = 0, rstd = 0;
    size_t first = r0;
    for (size_t r = r0; r < r1; r++) {
      size_t o = r * C, n = o + C;
      float nsum = 0;
      if (r == first) { __m512 s0 = _mm512_setzero_ps(); for (size_t c = 0; c < C; c += 16) s0 = _mm512_add_ps(s0, ld(x, o + c)); mean = _mm512_reduce_add_ps(s0) / C; }
      { __m512 m = _mm512_set1_ps(mean), q0 = _mm512_setzero_ps(), q1 = q0;
        for (size_t c = 0; c < C; c += 32) { __m512 d0 = _mm512_sub_ps(ld(x, o + c), m), d1 = _mm512_sub_ps(ld(x, o + c + 16), m); q0 = _mm512_fmadd_ps(d0, d0, q0); q1 = _mm512_fmadd_ps(d1, d1, q1); }
        rstd = 1.0f / sqrtf(_mm512_reduce_add_ps(_mm512_add_ps(q0, q1)) / C + 1e-5f); }
      __m512 m = _mm512_set1_ps(mean), rs = _mm512_set1_ps(rstd);
      if (r + 1 < r1) {
        __m512 s0 = _mm512_setzero_ps();
        for (size_t c = 0; c < C; c += 16) {
          s0 = _mm512_add_ps(s0, ld(x, n + c));
          st(y, o + c, _mm512_fmadd_ps(_mm512_mul_ps(_mm512_sub_ps(ld(x, o + c), m), rs), ld(g, c), ld(b, c)));
        }
        nsum = _mm512_reduce_add_ps(s0); mean = nsum / C;
      } else out_row(x, g, b, y, o, mean, rstd);
    } }
}
typedef void (*fn)(const void *, const void *, const void *, void *);
int main(int argc, char **argv) {
  int reps = argc > 1 ? atoi(argv[1]) : 30;
  const char *names[] = {"copy", "copy32", "scale", "scale64", "ln3", "ln2", "pipe1", "pipe2"};
  fn f[] = {0, copy32, scale, scale64, ln3, ln2, pipe1, pipe2};
  const int K = 8;
  for (int a = 2; a < argc; a++) {
    sscanf(argv[a], "%zux%zu", &R, &C);
    for (H = 0; H < 3; H++) {
      const size_t es = H ? 2 : 4, bytes = R * C * es; const int nset = 4; void *x[4], *y[4];
      for (int s = 0; s < nset; s++) {
        x[s] = aligned_alloc(64, bytes); y[s] = aligned_alloc(64, bytes);
#pragma omp parallel
        { RANGE;
          for (size_t r = r0; r < r1; r++) { for (size_t c = 0; c < C; c++) { float v = (float)((r * 131 + c * 7 + s) % 1000) / 500.0f - 1.0f; if (H == 2) { uint32_t u; memcpy(&u, &v, 4); ((uint16_t *)x[s])[r * C + c] = (uint16_t)(u >> 16); } else if (H) ((uint16_t *)x[s])[r * C + c] = _cvtss_sh(v, 0); else ((float *)x[s])[r * C + c] = v; } memset((char *)y[s] + r * C * es, 0, C * es); } }
      }
      void *g = aligned_alloc(64, C * es), *b = aligned_alloc(64, C * es);
      for (size_t c = 0; c < C; c++) { float v = 1.0f + (c % 7) * 0.01f; if (H == 2) { uint32_t u; memcpy(&u, &v, 4); ((uint16_t *)g)[c] = (uint16_t)(u >> 16); ((uint16_t *)b)[c] = 0x3dcd; } else if (H) { ((uint16_t *)g)[c] = _cvtss_sh(v, 0); ((uint16_t *)b)[c] = _cvtss_sh(0.1f, 0); } else { ((float *)g)[c] = v; ((float *)b)[c] = 0.1f; } }
      double t[8][256];
      for (int i = -3; i < reps; i++)
        for (int k = 0; k < K; k++) {
          int s = (i + 3 + k) % nset; double t0 = omp_get_wtime();
          if (k == 0) copy(x[s], y[s]); else f[k](x[s], g, b, y[s]);
          double t1 = omp_get_wtime(); if (i >= 0) t[k][i] = t1 - t0;
        }
      printf("%zux%zu %s thr=%d", R, C, H == 2 ? "bf16" : H ? "f16" : "f32", omp_get_max_threads());
      double c0 = 0;
      for (int k = 0; k < K; k++) { qsort(t[k], reps, sizeof(double), cmpd); double gb = 2.0 * bytes / t[k][reps / 2] / 1e9; if (!k) { c0 = gb; printf("  copy %.1f", gb); } else printf("  %s %.2f", names[k], gb / c0); }
      printf("\n"); fflush(stdout);
      for (int s = 0; s < nset; s++) { free(x[s]); free(y[s]); } free(g); free(b);
    }
  }
  return 0;
}
