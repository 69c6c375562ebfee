/* Native AVX2 schedules of LayerNorm forward (float32) against a streaming copy, for a 2-core AVX2
 * CPU such as the development machine's (docs/DEVICES.md, 2026-11-25, night). Each timing rotates
 * over 8 buffer sets; the schedules are interleaved round by round; medians of N rounds; one
 * contiguous range of rows per OpenMP thread (OMP_SCHEDULE picks the copy's schedule). Schedules:
 *   ln plain       sum pass (memory), squares pass (cache), output pass (streaming stores)
 *   ln prefetch    the same, the output pass prefetching the next row (clnorm's CPU kernels)
 *   ln pipelined   the next row's sum pass fused into this row's output pass
 *   ln prefetch+2  the output pass prefetching the row after next
 *   ln 1pass+pf    sum and sum of squares of x - x[0] in one pass (not exact enough for clnorm)
 * The outputs are not checked: this measures schedules only.
 *   gcc -O3 -march=native -fopenmp native_avx2.c -o native_avx2 -lm
 *   OMP_NUM_THREADS=2 ./native_avx2 ROWS COLS [ROUNDS]      (HUGE=1: madvise huge pages) */
#include <immintrin.h>
#include <math.h>
#include <omp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
static void *big(size_t n){void*p=aligned_alloc(2<<20,(n+(2<<20)-1)/(2<<20)*(2<<20)); if(getenv("HUGE")) madvise(p,n,MADV_HUGEPAGE); return p;}
static size_t R, C;
static int cmpd(const void *a, const void *b) { double x = *(const double *)a, y = *(const double *)b; return (x > y) - (x < y); }
static inline __m256 ld(const float *p) { return _mm256_load_ps(p); }
static void copy32(const float *x, float *y) {
#pragma omp parallel for schedule(runtime)
  for (size_t r = 0; r < R; r++)
    for (size_t c = 0; c < C; c += 8) _mm256_stream_ps(y + r * C + c, ld(x + r * C + c));
}
static float hs(__m256 v) { __m128 a = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1)); a = _mm_add_ps(a, _mm_movehl_ps(a, a)); a = _mm_add_ss(a, _mm_shuffle_ps(a, a, 1)); return _mm_cvtss_f32(a); }
static float sum_pass(const float *x, float p) {
  __m256 P = _mm256_set1_ps(p), a0 = _mm256_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
  for (size_t c = 0; c < C; c += 32) {
    a0 = _mm256_add_ps(a0, _mm256_sub_ps(ld(x + c), P)); a1 = _mm256_add_ps(a1, _mm256_sub_ps(ld(x + c + 8), P));
    a2 = _mm256_add_ps(a2, _mm256_sub_ps(ld(x + c + 16), P)); a3 = _mm256_add_ps(a3, _mm256_sub_ps(ld(x + c + 24), P));
  }
  return hs(_mm256_add_ps(_mm256_add_ps(a0, a1), _mm256_add_ps(a2, a3)));
}
static float sum2_pass(const float *x, float p, float *sq) {
  __m256 P = _mm256_set1_ps(p), a0 = _mm256_setzero_ps(), a1 = a0, q0 = a0, q1 = a0;
  for (size_t c = 0; c < C; c += 16) {
    __m256 d0 = _mm256_sub_ps(ld(x + c), P), d1 = _mm256_sub_ps(ld(x + c + 8), P);
    a0 = _mm256_add_ps(a0, d0); a1 = _mm256_add_ps(a1, d1); q0 = _mm256_fmadd_ps(d0, d0, q0); q1 = _mm256_fmadd_ps(d1, d1, q1);
  }
  *sq = hs(_mm256_add_ps(q0, q1));
  return hs(_mm256_add_ps(a0, a1));
}
static float sq_pass(const float *x, float m) {
  __m256 M = _mm256_set1_ps(m), a0 = _mm256_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
  for (size_t c = 0; c < C; c += 32) {
    __m256 d0 = _mm256_sub_ps(ld(x + c), M), d1 = _mm256_sub_ps(ld(x + c + 8), M), d2 = _mm256_sub_ps(ld(x + c + 16), M), d3 = _mm256_sub_ps(ld(x + c + 24), M);
    a0 = _mm256_fmadd_ps(d0, d0, a0); a1 = _mm256_fmadd_ps(d1, d1, a1); a2 = _mm256_fmadd_ps(d2, d2, a2); a3 = _mm256_fmadd_ps(d3, d3, a3);
  }
  return hs(_mm256_add_ps(_mm256_add_ps(a0, a1), _mm256_add_ps(a2, a3)));
}
/* out pass; nx: next row to prefetch (or NULL); acc: if nonzero also sum next row (pipelined) */
static float out_pass(const float *x, const float *g, const float *b, float *y, float m, float rs, const float *nx, int mode, float np) {
  __m256 M = _mm256_set1_ps(m), RS = _mm256_set1_ps(rs), P = _mm256_set1_ps(np), a0 = _mm256_setzero_ps(), a1 = a0;
  for (size_t c = 0; c < C; c += 16) {
    __m256 v0 = _mm256_mul_ps(_mm256_sub_ps(ld(x + c), M), RS), v1 = _mm256_mul_ps(_mm256_sub_ps(ld(x + c + 8), M), RS);
    v0 = _mm256_fmadd_ps(v0, ld(g + c), ld(b + c)); v1 = _mm256_fmadd_ps(v1, ld(g + c + 8), ld(b + c + 8));
    _mm256_stream_ps(y + c, v0); _mm256_stream_ps(y + c + 8, v1);
    if ((mode == 1 || mode == 3 || mode == 4) && nx) _mm_prefetch((const char *)(nx + c), _MM_HINT_T1);
    if (mode == 2 && nx) { a0 = _mm256_add_ps(a0, _mm256_sub_ps(ld(nx + c), P)); a1 = _mm256_add_ps(a1, _mm256_sub_ps(ld(nx + c + 8), P)); }
  }
  return hs(_mm256_add_ps(a0, a1));
}
/* mode 0: plain; 1: prefetch next row in out loop; 2: next row's sum pass fused into out loop */
static void ln(const float *x, const float *g, const float *b, float *y, int mode) {
#pragma omp parallel
  {
    int t = omp_get_thread_num(), n = omp_get_num_threads();
    size_t r0 = R * t / n, r1 = R * (t + 1) / n;
    float s = 0; int have = 0;
    for (size_t r = r0; r < r1; r++) {
      const float *xr = x + r * C;
      float p = xr[0];
      float m, var;
      if (mode == 4) { float q; s = sum2_pass(xr, p, &q); float md = s / C; m = p + md; var = q / C - md * md; }
      else { if (!have) s = sum_pass(xr, p);
      m = p + s / C;
      var = sq_pass(xr, m) / C; }
      float rs = 1.0f / sqrtf(var + 1e-5f);
      const float *nx = mode == 3 ? (r + 2 < r1 ? xr + 2 * C : NULL) : (r + 1 < r1 ? xr + C : NULL);
      float np = (mode == 2 && nx) ? nx[0] : 0;
      s = out_pass(xr, g, b, y + r * C, m, rs, nx, mode, np);
      have = (mode == 2 && nx);
    }
  }
}
int main(int argc, char **argv) {
  R = strtoul(argv[1], 0, 10); C = strtoul(argv[2], 0, 10); int N = argc > 3 ? atoi(argv[3]) : 20;
  float *xs[8], *ys[8]; for (int q = 0; q < 8; q++) { xs[q] = big(R * C * 4); ys[q] = big(R * C * 4); memset(ys[q], 0, R * C * 4); }
  float *x = xs[0], *y = ys[0], *g = aligned_alloc(64, C * 4), *b = aligned_alloc(64, C * 4);
  for (int q = 0; q < 8; q++) for (size_t i = 0; i < R * C; i++) xs[q][i] = (float)(rand() % 1000) / 100.0f;
  for (size_t i = 0; i < C; i++) { g[i] = 1.0f + i % 7 * 0.01f; b[i] = i % 5 * 0.1f; }
  memset(y, 0, R * C * 4);
  enum { K = 6 };
  double *t[K]; for (int k = 0; k < K; k++) t[k] = calloc(N, sizeof(double));
  for (int it = -3; it < N; it++)
    for (int k = 0; k < K; k++) {
      int q = ((it + 3) * K + k) % 8; x = xs[q]; y = ys[q];
      double t0 = omp_get_wtime();
      if (k == 0) copy32(x, y); else ln(x, g, b, y, k - 1);
      double dt = omp_get_wtime() - t0;
      if (it >= 0) t[k][it] = dt;
    }
  const char *nm[K] = {"copy", "ln plain", "ln prefetch", "ln pipelined", "ln prefetch+2", "ln 1pass+pf"};
  double cp = 0;
  for (int k = 0; k < K; k++) {
    qsort(t[k], N, sizeof(double), cmpd);
    double gb = 2.0 * R * C * 4 / t[k][N / 2] / 1e9;
    if (k == 0) cp = gb;
    printf("%zux%zu %-14s %6.1f GB/s  %.2f of copy\n", R, C, nm[k], gb, gb / cp);
  }
  return 0;
}
