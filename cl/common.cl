/* Shared by every kernel family: parameters, vector types and the reductions across the
 * work-items of one row. Parameters arrive as -D options; the defaults below make the file
 * compile on its own. */
#ifndef WG
#define WG 256
#endif
#ifndef TPR /* work-items per row; divides WG */
#define TPR WG
#endif
#ifndef VEC
#define VEC 4
#endif
#ifndef HOLD /* vectors of the row held in private memory per work-item; 0: re-read */
#define HOLD 0
#endif
#ifndef REDUCE /* 0 local-memory tree, 1 sub-group, 2 NVIDIA shuffle (inline PTX) */
#define REDUCE 0
#endif
#ifndef STATS /* 0 Welford/Chan, 1 two-pass */
#define STATS 0
#endif
#ifndef DTYPE /* storage type of the rows, gamma and beta: 0 float, 1 half, 2 bfloat16 */
#define DTYPE 0
#endif
#ifndef PREFETCH /* 1: prefetch the next row during the output loop (CPU devices, clang) */
#define PREFETCH 0
#endif
#ifndef ADD /* 1: the row is x + residual (rounded to the storage type) */
#define ADD 0
#endif
#ifndef UNALIGNED /* 1: row starts need only the element's alignment (CPU devices) */
#define UNALIGNED 0
#endif
#ifndef HWHALF /* 1: half vectors convert through x86 F16C instructions (cl/common.cl) */
#define HWHALF 0
#endif
#ifndef RAW16 /* 1: 16-bit rows move as vectors of uint, two elements in each (RAW_LOAD below) */
#define RAW16 0
#endif
#ifndef PTX /* NVIDIA's platform, which takes inline PTX: its compute capability (90: Hopper), or 1
             where unknown; 0 elsewhere */
#define PTX 0
#endif
#ifndef RMS /* 1: RMSNorm, 0: LayerNorm (cl/forward.cl, split.cl, backward.cl) */
#define RMS 0
#endif
#ifndef SPLIT /* 1: cl/backward.cl builds its split-row kernels (bwd_sums, bwd_split) */
#define SPLIT 0
#endif
#ifndef RVEC /* columns per work-item of bwd_reduce (cl/backward.cl): 1 (GPUs) or 16 (CPUs) */
#define RVEC 1
#endif
#ifndef STREAM /* 1: streaming (non-temporal) stores (PoCL's CPU device; PUT below) */
#define STREAM 0
#endif
#ifndef RBUF /* floats of a work-item's private row buffer, 0 for none (RB below) */
#define RBUF 0
#endif

#define RPG (WG / TPR) /* rows per work-group */

#if REDUCE == 1
#pragma OPENCL EXTENSION cl_khr_subgroups : enable
#endif

#define CAT_(a, b) a##b
#define CAT(a, b) CAT_(a, b)

#if VEC == 1
typedef float floatv;
typedef uint uintv;
typedef ushort ushortv;
#define HSUM(v) (v)
#define VSUFFIX
#elif VEC == 2
typedef float2 floatv;
typedef uint2 uintv;
typedef ushort2 ushortv;
typedef uint uinth; /* VEC / 2 uints: the bits of VEC 16-bit elements */
#define HSUFFIX 
#define HSUM(v) ((v).s0 + (v).s1)
#define VSUFFIX 2
#elif VEC == 4
typedef float4 floatv;
typedef uint4 uintv;
typedef ushort4 ushortv;
typedef uint2 uinth; /* VEC / 2 uints: the bits of VEC 16-bit elements */
#define HSUFFIX 2
#define HSUM(v) (((v).s0 + (v).s1) + ((v).s2 + (v).s3))
#define VSUFFIX 4
#elif VEC == 8
typedef float8 floatv;
typedef uint8 uintv;
typedef ushort8 ushortv;
typedef uint4 uinth; /* VEC / 2 uints: the bits of VEC 16-bit elements */
#define HSUFFIX 4
#define HSUM(v) hsum4((v).lo + (v).hi)
#define VSUFFIX 8
#elif VEC == 16
typedef float16 floatv;
typedef uint16 uintv;
typedef ushort16 ushortv;
typedef uint8 uinth; /* VEC / 2 uints: the bits of VEC 16-bit elements */
#define HSUFFIX 8
#define HSUM(v) hsum4(((v).lo.lo + (v).lo.hi) + ((v).hi.lo + (v).hi.hi))
#define VSUFFIX 16
#else
#error "VEC must be 1, 2, 4, 8 or 16"
#endif

/* PUT(p, v): *p = v. With STREAM (PoCL's CPU device: the host passes -DSTREAM=1 where the
 * compiler is clang) a streaming store, which goes to memory without first reading the line into
 * the cache: a norm then moves the bytes a copy moves. Outputs only; nothing reads them back in
 * the same kernel. */
#if STREAM
#define PUT(p, v) __builtin_nontemporal_store((v), (p))
#else
#define PUT(p, v) (*(p) = (v))
#endif

/* UNALIGNED (CPU devices, where a vector load or store at any address costs what an aligned one
 * does): the host keeps the vector width whatever the row starts are, and vectors move through
 * vloadN/vstoreN, which need only the element's alignment, instead of through vector pointers.
 * A streaming store needs the vector's own alignment (x86's movntps faults without it), so with
 * STREAM a row whose start is not aligned is written with plain stores. VLOAD(T, p, i): vector i
 * of the row at p (T: the vector pointer type); VPUT(VT, p, i, v): v (a VT) stored as vector i,
 * streaming where p is aligned (the test is the same for the whole row; the compiler hoists it
 * out of the loop). */
#define V_ALIGNED(p) (((size_t)(p) & (VEC * sizeof(*(p)) - 1)) == 0)
#if UNALIGNED && VEC > 1
#define VLOAD(T, p, i) CAT(vload, VEC)((i), (p))
#if STREAM
#define VPUT(VT, p, i, v)                                                                          \
  do {                                                                                             \
    if (V_ALIGNED(p))                                                                              \
      PUT(&((__global VT *)(p))[(i)], (v));                                                        \
    else                                                                                           \
      CAT(vstore, VEC)((v), (i), (p));                                                             \
  } while (0)
#else
#define VPUT(VT, p, i, v) CAT(vstore, VEC)((v), (i), (p))
#endif
#else /* the host keeps every row start aligned to VEC elements */
#define VLOAD(T, p, i) (((T)(p))[(i)])
#define VPUT(VT, p, i, v) PUT(&((__global VT *)(p))[(i)], (v))
#endif

/* NEXT_ROW(p, stride, ok, n): with PREFETCH (PoCL's CPU device, one work-item per row) the row
 * after p when ok says it is one of the call's and its n elements are at most 128 KiB, else NULL.
 * PREFETCH_V(p, i): a hint to bring vector i of the row at p into the L2 cache, where p is not
 * NULL. The output loop of a row prefetches the row its work-item takes next, so that reading
 * the next row from memory overlaps writing this one: without it a core reads, then writes, and
 * waits at the start of every row for the hardware prefetcher to pick up the new stream. Rows
 * of 256 KiB ran slower with it (docs/DEVICES.md), so longer rows are left to the hardware.
 * The address goes through an integer because clang's builtin takes a generic pointer; a CPU
 * device has one address space, and an x86 prefetch never faults. */
#if PREFETCH && TPR == 1
#define NEXT_ROW(p, stride, ok, n)                                                                 \
  ((ok) && (size_t)(n) * sizeof(stype) <= 131072 ? (p) + (stride) : 0)
/* one prefetch per 64-byte line: every vector at 64 bytes or more, every k-th below */
#define PREFETCH_EVERY (VEC * sizeof(stype) >= 64 ? 1 : 64 / (VEC * sizeof(stype)))
#define PREFETCH_V(p, i)                                                                           \
  do {                                                                                             \
    if ((p) && (i) % PREFETCH_EVERY == 0)                                                          \
      __builtin_prefetch((const void *)(size_t)((p) + (size_t)(i) * VEC), 0, 2);                   \
  } while (0)
#else
#define NEXT_ROW(p, stride, ok, n) ((__global const stype *)0)
#define PREFETCH_V(p, i) ((void)(p))
#endif

/* RAW16 (NVIDIA's platform; CLNORM_RAW16): 16-bit rows load and store as vectors of VEC / 2 uints,
 * the bits of two elements in each, and convert in registers. NVIDIA's OpenCL compiler makes
 * scalar 2-byte accesses of vloada_half8 / vstorea_half8_rte and 8-byte ones of a ushort8 (PTX has
 * no 16-byte vector of 16-bit elements), where a uint4 is one 16-byte access (docs/DEVICES.md).
 * RAW_LOAD(p, i): vector i of the row at p, as bits; RAW_PUT(p, i, u): its bits stored. */
#define RAW_LOAD(p, i) (((__global const uinth *)(p))[(i)])
#define RAW_PUT(p, i, u) PUT(&((__global uinth *)(p))[(i)], (u))

/* Storage types. Rows, gamma and beta are `stype` in global memory and floats in registers:
 * loads convert to float, stores round to nearest even (NaN stays NaN). half is used only
 * through vload_half/vstore_half, which are core OpenCL (no cl_khr_fp16 needed). */
#if DTYPE == 0
typedef float stype;
#define LOAD1(p, i) ((p)[(i)])
#define STORE1(p, i, v) PUT(&(p)[(i)], (v))
#define LOADV(p, i) VLOAD(__global const floatv *, (p), (i))
#define STOREV(p, i, v) VPUT(floatv, (p), (i), (v))
#define ROUND1(v) (v)
#define ROUNDV(v) (v)
#elif DTYPE == 1
typedef half stype;
#if STREAM
/* PoCL's CPU device: PoCL's scalar half conversions are software routines (about 40 cycles an
 * element on x86; docs/DEVICES.md), its 4-wide and wider ones the hardware's (F16C). Single
 * elements go through the 4-wide ones; outputs are rounded into a register, then written with
 * one streaming store of the bits. */
inline float half_from_bits1(ushort bits) {
  const ushort4 b = (ushort4)(bits, 0, 0, 0);
  return vloada_half4(0, (__private const half *)&b).s0;
}
inline float half_load1(__global const half *p, size_t i) {
  return half_from_bits1(((__global const ushort *)p)[i]);
}
inline ushort half_bits1(float v) {
  ushort4 b;
  vstorea_half4_rte((float4)(v), 0, (__private half *)&b);
  return b.s0;
}
#define LOAD1(p, i) half_load1((p), (i))
#define STORE1(p, i, v) PUT(&((__global ushort *)(p))[(i)], half_bits1(v))
/* HWHALF (PoCL's CPU device; CLNORM_HW_HALF): where the kernel compiler targets x86 with F16C,
 * vectors of 8 halves, and of 16 with AVX-512F, convert through the instructions themselves,
 * vcvtph2ps and vcvtps2ph (rounding to nearest even, as vstore_half_rte). PoCL 5 builds its
 * vloada_half16 from two 8-wide conversions and an insert, and its stores alike. Vectors of 16
 * without AVX-512F take the built-ins: two 8-wide conversions written here ran 1.35x slower than
 * PoCL 3.1's vloada_half16 on an AVX2 CPU, its clang splitting each load into moves and shuffles
 * (docs/DEVICES.md). Elsewhere (other compilers, other CPUs, other widths) the built-ins below,
 * which give the same bits but for a NaN's payload (PoCL 3.1's vstore_half_rte writes 7fff where
 * vcvtps2ph writes 7e00; test_ops store compares the two). */
#ifdef __has_builtin
#define HAS_BUILTIN(f) __has_builtin(f)
#else
#define HAS_BUILTIN(f) 0
#endif
#if HWHALF && defined(__x86_64__) && defined(__F16C__) && VEC == 8 &&                           \
    HAS_BUILTIN(__builtin_ia32_vcvtph2ps256) && HAS_BUILTIN(__builtin_ia32_vcvtps2ph256)
#define X86_HALF 1
#elif HWHALF && defined(__x86_64__) && defined(__AVX512F__) && VEC == 16 &&                      \
    HAS_BUILTIN(__builtin_ia32_vcvtph2ps512_mask) && HAS_BUILTIN(__builtin_ia32_vcvtps2ph512_mask)
#define X86_HALF 1
#endif
#if X86_HALF
/* the built-ins' vector types: VEC halves as shorts, VEC floats */
typedef short x86_hv __attribute__((__vector_size__(2 * VEC)));
typedef float x86_fv __attribute__((__vector_size__(4 * VEC)));
#if VEC == 8
inline float8 x86_h2f(ushort8 b) {
  return __builtin_astype(__builtin_ia32_vcvtph2ps256(__builtin_astype(b, x86_hv)), float8);
}
/* 0: to nearest even */
inline ushort8 x86_f2h(float8 v) {
  return __builtin_astype(__builtin_ia32_vcvtps2ph256(__builtin_astype(v, x86_fv), 0), ushort8);
}
#else
/* all 16 lanes (mask 0xFFFF); 4: the rounding of MXCSR, which a conversion to float never uses */
inline float16 x86_h2f(ushort16 b) {
  const x86_fv unused = __builtin_astype((float16)(0.0f), x86_fv);
  return __builtin_astype(
      __builtin_ia32_vcvtph2ps512_mask(__builtin_astype(b, x86_hv), unused, (ushort)0xFFFF, 4),
      float16);
}
/* 0: to nearest even */
inline ushort16 x86_f2h(float16 v) {
  const x86_hv unused = __builtin_astype((ushort16)(0), x86_hv);
  return __builtin_astype(
      __builtin_ia32_vcvtps2ph512_mask(__builtin_astype(v, x86_fv), 0, unused, (ushort)0xFFFF),
      ushort16);
}
#endif
#endif
#if X86_HALF
#define LOADV(p, i) x86_h2f(VLOAD(__global const ushortv *, (__global const ushort *)(p), (i)))
#define STOREV(p, i, v) VPUT(ushortv, (__global ushort *)(p), (i), x86_f2h(v))
#elif VEC == 1
#define LOADV(p, i) LOAD1((p), (i))
#define STOREV(p, i, v) STORE1((p), (i), (v))
#else
#if UNALIGNED
#define LOADV(p, i) CAT(vload_half, VEC)((i), (p))
#else /* the host keeps every row start aligned to VEC elements */
#define LOADV(p, i) CAT(vloada_half, VEC)((i), (p))
#endif
/* into a register (private, aligned), then its bits to memory */
#define VSTORE_HALF(v, i, p) CAT(CAT(vstorea_half, VEC), _rte)((v), (i), (p))
#define STOREV(p, i, v)                                                                            \
  do {                                                                                             \
    ushortv bits_;                                                                                 \
    VSTORE_HALF((v), 0, (__private half *)&bits_);                                                 \
    VPUT(ushortv, (__global ushort *)(p), (i), bits_);                                             \
  } while (0)
#endif
#else
#define LOAD1(p, i) vload_half((i), (p))
#if VEC == 1
#define LOADV(p, i) vload_half((i), (p))
#define VSTORE_HALF(v, i, p) vstore_half_rte((v), (i), (p))
#elif RAW16 && !UNALIGNED
/* Pairs of halves in a uint: to floats and back, low half first (element 0 at the lower address:
 * every OpenCL GPU is little-endian). On NVIDIA's platform through PTX's conversions, one
 * instruction an element; elsewhere through the built-ins on a register. */
#if PTX
inline float2 h_unpack2(uint u) {
  float lo, hi;
  asm("{.reg .b16 l, h; mov.b32 {l, h}, %2; cvt.f32.f16 %0, l; cvt.f32.f16 %1, h;}"
      : "=f"(lo), "=f"(hi)
      : "r"(u));
  return (float2)(lo, hi);
}
/* to nearest even, as vstore_half_rte */
inline uint h_pack2(float2 v) {
  uint r;
  asm("{.reg .b16 l, h; cvt.rn.f16.f32 l, %1; cvt.rn.f16.f32 h, %2; mov.b32 %0, {l, h};}"
      : "=r"(r)
      : "f"(v.s0), "f"(v.s1));
  return r;
}
#else
inline float2 h_unpack2(uint u) { return vload_half2(0, (__private const half *)&u); }
inline uint h_pack2(float2 v) {
  uint r;
  vstore_half2_rte(v, 0, (__private half *)&r);
  return r;
}
#endif
inline float4 h_unpack4(uint2 u) { return (float4)(h_unpack2(u.s0), h_unpack2(u.s1)); }
inline float8 h_unpack8(uint4 u) { return (float8)(h_unpack4(u.lo), h_unpack4(u.hi)); }
inline float16 h_unpack16(uint8 u) { return (float16)(h_unpack8(u.lo), h_unpack8(u.hi)); }
inline uint2 h_pack4(float4 v) { return (uint2)(h_pack2(v.lo), h_pack2(v.hi)); }
inline uint4 h_pack8(float8 v) { return (uint4)(h_pack4(v.lo), h_pack4(v.hi)); }
inline uint8 h_pack16(float16 v) { return (uint8)(h_pack8(v.lo), h_pack8(v.hi)); }
#define LOADV(p, i) CAT(h_unpack, VEC)(RAW_LOAD((p), (i)))
#define VSTORE_HALF(v, i, p) RAW_PUT((p), (i), CAT(h_pack, VEC)(v))
#define UNRAW(r) CAT(h_unpack, VEC)(r)
#define PACKR(v) CAT(h_pack, VEC)(v)
#elif UNALIGNED
#define LOADV(p, i) CAT(vload_half, VEC)((i), (p))
#define VSTORE_HALF(v, i, p) CAT(CAT(vstore_half, VEC), _rte)((v), (i), (p))
#else /* the host keeps every row start aligned to VEC elements */
#define LOADV(p, i) CAT(vloada_half, VEC)((i), (p))
#define VSTORE_HALF(v, i, p) CAT(CAT(vstorea_half, VEC), _rte)((v), (i), (p))
#endif
#define STORE1(p, i, v) vstore_half_rte((v), (i), (p))
#define STOREV(p, i, v) VSTORE_HALF((v), (i), (p))
#endif
/* The float nearest to v among half's values (ties to even), as vstore_half_rte rounds. */
#define HALF_ROUND(T, UT, AS_U, AS_F, v)                                                           \
  {                                                                                                \
    const UT b = AS_U(v);                                                                          \
    /* normal halves: keep 10 fraction bits; subnormal ones: multiples of 2^-24 */                 \
    const T normal = AS_F((b + (UT)0xFFFu + ((b >> 13) & (UT)1u)) & (UT)0xFFFFE000u);              \
    const T subnormal = rint((v) * 16777216.0f) * (1.0f / 16777216.0f);                            \
    T r = fabs(v) < 6.103515625e-05f ? subnormal : normal;                                         \
    r = fabs(r) > 65504.0f ? copysign((T)INFINITY, (v)) : r;                                       \
    return isnan(v) ? (v) : r;                                                                     \
  }
#if STREAM
/* PoCL's CPU device: the same rounding through the hardware's conversions (F16C on x86), one
 * instruction each way where HALF_ROUND takes a dozen; the fused add rounds in every pass.
 * Single elements through the 4-wide conversions, as above. */
inline float round1(float v) { return half_from_bits1(half_bits1(v)); }
#if X86_HALF
inline floatv roundv(floatv v) { return x86_h2f(x86_f2h(v)); }
#elif VEC == 1
inline floatv roundv(floatv v) { return round1(v); }
#else
inline floatv roundv(floatv v) {
  ushortv b;
  VSTORE_HALF(v, 0, (__private half *)&b);
  return LOADV((__private const half *)&b, 0);
}
#endif
#else
inline float round1(float v) HALF_ROUND(float, uint, as_uint, as_float, v)
inline floatv roundv(floatv v)
    HALF_ROUND(floatv, uintv, CAT(as_uint, VSUFFIX), CAT(as_float, VSUFFIX), v)
#endif
#define ROUND1(v) round1(v)
#define ROUNDV(v) roundv(v)
#elif DTYPE == 2
typedef ushort stype;
/* bfloat16: the upper half of a float's bits, rounded to nearest even; NaN kept quiet. */
#define BF16_BITS(T, UT, AS_U, v)                                                                  \
  {                                                                                                \
    const UT b = AS_U(v);                                                                          \
    const UT r = (b + (UT)0x7FFFu + ((b >> 16) & (UT)1u)) & (UT)0xFFFF0000u;                       \
    return isnan(v) ? (b | (UT)0x00400000u) & (UT)0xFFFF0000u : r;                                 \
  }
inline uint bf16_bits1(float v) BF16_BITS(float, uint, as_uint, v)
inline uintv bf16_bitsv(floatv v) BF16_BITS(floatv, uintv, CAT(as_uint, VSUFFIX), v)
#define LOAD1(p, i) as_float((uint)(p)[(i)] << 16)
#define STORE1(p, i, v) PUT(&(p)[(i)], (ushort)(bf16_bits1(v) >> 16))
#if RAW16 && !UNALIGNED && VEC > 1
/* Pairs of elements in a uint, low half first (element 0 at the lower address) */
inline floatv bf16_unpack(uinth u) {
  floatv f;
  f.even = CAT(as_float, HSUFFIX)(u << 16);
  f.odd = CAT(as_float, HSUFFIX)(u & (uinth)0xFFFF0000u);
  return f;
}
#if PTX >= 80
/* Two floats to nearest even in one instruction (sm_80 and later), low half first; a NaN stays a
 * NaN (its payload is not kept) */
inline uint bf16_pack2(float lo, float hi) {
  uint r;
  asm("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(r) : "f"(hi), "f"(lo));
  return r;
}
#if VEC == 2
inline uinth bf16_pack(floatv v) { return bf16_pack2(v.s0, v.s1); }
#else
inline uinth bf16_pack(floatv v) {
  uinth r;
  const CAT(float, HSUFFIX) lo = v.even, hi = v.odd;
#if VEC == 4
  r = (uint2)(bf16_pack2(lo.s0, hi.s0), bf16_pack2(lo.s1, hi.s1));
#elif VEC == 8
  r = (uint4)(bf16_pack2(lo.s0, hi.s0), bf16_pack2(lo.s1, hi.s1), bf16_pack2(lo.s2, hi.s2),
              bf16_pack2(lo.s3, hi.s3));
#else
  r = (uint8)(bf16_pack2(lo.s0, hi.s0), bf16_pack2(lo.s1, hi.s1), bf16_pack2(lo.s2, hi.s2),
              bf16_pack2(lo.s3, hi.s3), bf16_pack2(lo.s4, hi.s4), bf16_pack2(lo.s5, hi.s5),
              bf16_pack2(lo.s6, hi.s6), bf16_pack2(lo.s7, hi.s7));
#endif
  return r;
}
#endif
#else
inline uinth bf16_pack(floatv v) {
  const uintv b = bf16_bitsv(v);
  return (b.even >> 16) | (b.odd & (uinth)0xFFFF0000u);
}
#endif
#define LOADV(p, i) bf16_unpack(RAW_LOAD((p), (i)))
#define STOREV(p, i, v) RAW_PUT((p), (i), bf16_pack(v))
#define UNRAW(r) bf16_unpack(r)
#define PACKR(v) bf16_pack(v)
#else
#define LOADV(p, i)                                                                                \
  CAT(as_float, VSUFFIX)                                                                           \
  (CAT(convert_uint, VSUFFIX)(VLOAD(__global const ushortv *, (p), (i))) << 16)
#define STOREV(p, i, v)                                                                            \
  VPUT(ushortv, (p), (i), CAT(convert_ushort, VSUFFIX)(bf16_bitsv(v) >> 16))
#endif
#define ROUND1(v) as_float(bf16_bits1(v))
#define ROUNDV(v) CAT(as_float, VSUFFIX)(bf16_bitsv(v))
#else
#error "DTYPE must be 0, 1 or 2"
#endif

/* rawv: a vector of the row as loaded, before its conversion to floats (UNRAW): the bits of
 * VEC 16-bit elements in VEC / 2 uints under RAW16, else floatv. LOADR(p, i): vector i of the
 * row at p as rawv. A kernel that keeps loaded vectors for a while (the weights below) keeps
 * them so: half the registers for 16-bit rows. */
#ifdef UNRAW
typedef uinth rawv;
#define LOADR(p, i) RAW_LOAD((p), (i))
#else
typedef floatv rawv;
#define LOADR(p, i) LOADV((p), (i))
#define UNRAW(r) (r)
#endif

inline float hsum4(float4 v) { return (v.s0 + v.s1) + (v.s2 + v.s3); }

/* The work of a launch is n units (row chunks, column tiles) dealt out to its groups in contiguous,
 * balanced ranges: group g takes units [SPAN_FIRST(n), SPAN_END(n)), n / groups of them rounded
 * down or up, and every unit goes to one group. That is the unit of its own id where there are as
 * many groups as units, one or two consecutive units where there are a few more units than groups
 * (bwd_split on a GPU, whose last unit is the columns past the last whole vector), and about n /
 * groups where the host keeps the grid fixed (PoCL before 6: docs/DEVICES.md). A CPU runs a group
 * on one core, so a range goes through memory in order, where units g, g + groups, ... sent each
 * core through memory in strides: the backward's split kernels ran 1.5-1.7x faster so on PoCL 3.1
 * (4096 x 4096). The range is the same for the whole group, so every work-item meets the same
 * barriers. The forward kernels keep their stride over blocks of rows: with this loop PoCL 3.1
 * built their row loops into 128-bit loads and inserts and they ran at half the speed
 * (docs/DEVICES.md); the forward split kernels gained nothing from it. */
#define SPAN_FIRST(n) ((ulong)get_group_id(0) * (ulong)(n) / (ulong)get_num_groups(0))
#define SPAN_END(n) (((ulong)get_group_id(0) + 1) * (ulong)(n) / (ulong)get_num_groups(0))

/* Welford/Chan partial statistics: n values, their mean and sum of squared deviations. */
typedef struct {
  float n, mean, m2;
} stats_t;

inline stats_t stats_merge(stats_t a, stats_t b) {
  const float n = a.n + b.n;
  if (n == 0.0f) /* both empty: keep the empty state (no 0/0) */
    return a;
  const float delta = b.mean - a.mean;
  const float wb = b.n / n;
  stats_t r;
  r.n = n;
  r.mean = a.mean + delta * wb;
  r.m2 = a.m2 + b.m2 + delta * delta * a.n * wb;
  return r;
}

#if REDUCE == 2
/* Butterfly exchange inside a warp; every lane of the warp executes it. */
inline float shfl_xor(float v, uint lane_mask) {
  float r;
  asm volatile("shfl.sync.bfly.b32 %0, %1, %2, 0x1f, 0xffffffff;"
               : "=f"(r)
               : "f"(v), "r"(lane_mask));
  return r;
}
#define WARP 32
#endif

/* The last barrier of a row's reduction also fences global memory. Every work-item of a row
 * reads the row's first element (LayerNorm's pivot) before the reduction, and the work-item that
 * owns that element may write it after (y == x, in place): a barrier that fences only local
 * memory leaves that read and write unordered (OpenCL 1.2, 3.6.2), a race that Oclgrind reports.
 * Shuffle-only reductions (REDUCE 2, TPR <= WARP) have no barrier: there the pivot feeds the
 * value each lane contributes, so its read completes before the owner's write can begin. */
#define ROW_DONE_FENCE (CLK_LOCAL_MEM_FENCE | CLK_GLOBAL_MEM_FENCE)

/* ROW_SCRATCH(n): the local memory of a row's reductions, n floats, where a row has several
 * work-items (TPR > 1); one work-item a row reduces nothing. */
#if TPR > 1
#define ROW_SCRATCH(n) __local float scratch[n]
#else
#define ROW_SCRATCH(n) __local float *scratch = 0
#endif

/* ROW_REDUCE(R, v): the body of a reduction of v over the TPR work-items of this row, which
 * returns the row's total to every one of them; every work-item of the group must reach it (it
 * contains barriers). R names the kind of v by the statements that combine it, each in the order
 * of floating-point operations of its kind: R##_ZERO(v) empties v; R##_SHFL(v, m) merges into v
 * the v of lane ^ m (REDUCE 2), R##_SG(v) the v of the sub-group's work-items (REDUCE 1); slot j
 * of `scratch` holds one v: R##_PUT(j, v) stores it, R##_GET(v, j) reads it, R##_ADD(v, j)
 * merges it into v and R##_TREE(j, k) slot k into slot j; R##_WARPS(v) merges into v the slots of
 * the row's warps in order (REDUCE 2, TPR > WARP; slot w: warp w of the group). */
#define ROW_IDS                                                                                    \
  const uint lid = get_local_id(0);                                                                \
  const uint lane = lid % TPR;                                                                     \
  const uint base = lid - lane
#if TPR == 1
#define ROW_REDUCE(R, v) return v
#elif REDUCE == 2
#if TPR > WARP
/* then the row's warps, each one's total in a slot */
#define ROW_WARPS(R, v)                                                                            \
  if (lid % WARP == 0)                                                                             \
    R##_PUT(lid / WARP, v);                                                                        \
  barrier(CLK_LOCAL_MEM_FENCE);                                                                    \
  R##_ZERO(v);                                                                                     \
  R##_WARPS(v);                                                                                    \
  barrier(ROW_DONE_FENCE);
#else
#define ROW_WARPS(R, v)
#endif
#define ROW_REDUCE(R, v)                                                                           \
  ROW_IDS;                                                                                         \
  for (uint m = (TPR < WARP ? TPR : WARP) / 2; m > 0; m >>= 1)                                     \
    R##_SHFL(v, m);                                                                                \
  ROW_WARPS(R, v)                                                                                  \
  return v
#elif REDUCE == 1 /* one row per group (TPR == WG), any sub-group size */
#define ROW_REDUCE(R, v)                                                                           \
  ROW_IDS;                                                                                         \
  R##_SG(v);                                                                                       \
  if (get_sub_group_local_id() == 0)                                                               \
    R##_PUT(get_sub_group_id(), v);                                                                \
  barrier(CLK_LOCAL_MEM_FENCE);                                                                    \
  R##_ZERO(v);                                                                                     \
  const uint groups = get_num_sub_groups();                                                        \
  for (uint g = 0; g < groups; g++)                                                                \
    R##_ADD(v, g);                                                                                 \
  barrier(ROW_DONE_FENCE);                                                                         \
  return v
#else
#define ROW_REDUCE(R, v)                                                                           \
  ROW_IDS;                                                                                         \
  R##_PUT(lid, v);                                                                                 \
  barrier(CLK_LOCAL_MEM_FENCE);                                                                    \
  for (uint h = TPR / 2; h > 0; h >>= 1) {                                                         \
    if (lane < h)                                                                                  \
      R##_TREE(lid, lid + h);                                                                      \
    barrier(CLK_LOCAL_MEM_FENCE);                                                                  \
  }                                                                                                \
  R##_GET(v, base);                                                                                \
  barrier(ROW_DONE_FENCE);                                                                         \
  return v
#endif

/* A float, merged by addition (row_sum) */
#define SUM1_ZERO(v) ((v) = 0.0f)
#define SUM1_SHFL(v, m) ((v) += shfl_xor((v), (m)))
#define SUM1_SG(v) ((v) = sub_group_reduce_add(v))
#define SUM1_PUT(j, v) (scratch[(j)] = (v))
#define SUM1_GET(v, j) ((v) = scratch[(j)])
#define SUM1_ADD(v, j) ((v) += scratch[(j)])
#define SUM1_TREE(j, k) (scratch[(j)] += scratch[(k)])
#define SUM1_WARPS(v)                                                                              \
  for (uint w = 0; w < TPR / WARP; w++) {                                                          \
    SUM1_ADD((v), base / WARP + w);                                                                \
  }

/* Sum of v over the TPR work-items of this row; every work-item of the group must call it
 * (it contains barriers) and every one receives the row's total. `scratch` holds WG floats. */
inline float row_sum(float v, __local float *scratch) { ROW_REDUCE(SUM1, v); }

/* Two floats, each as SUM1, x first (row_sum2); slot j is floats 2 * j and 2 * j + 1 */
#define SUM2_ZERO(v) ((v) = 0.0f)
#define SUM2_SHFL(v, m) (SUM1_SHFL((v).x, (m)), SUM1_SHFL((v).y, (m)))
#define SUM2_SG(v) (SUM1_SG((v).x), SUM1_SG((v).y))
#define SUM2_PUT(j, v) (SUM1_PUT(2 * (j), (v).x), SUM1_PUT(2 * (j) + 1, (v).y))
#define SUM2_GET(v, j) ((v) = (float2)(scratch[2 * (j)], scratch[2 * (j) + 1]))
#define SUM2_ADD(v, j) (SUM1_ADD((v).x, 2 * (j)), SUM1_ADD((v).y, 2 * (j) + 1))
#define SUM2_TREE(j, k) (SUM1_TREE(2 * (j), 2 * (k)), SUM1_TREE(2 * (j) + 1, 2 * (k) + 1))
#define SUM2_WARPS(v)                                                                              \
  for (uint w = 0; w < TPR / WARP; w++) {                                                          \
    SUM2_ADD((v), base / WARP + w);                                                                \
  }

/* row_sum of two values at once (one set of barriers for both); same rules as row_sum.
 * `scratch` holds 2 * WG floats. */
inline float2 row_sum2(float2 v, __local float *scratch) { ROW_REDUCE(SUM2, v); }

/* STATS_LOAD(s, p, j): s = the statistics at p[j], p[j + 1], p[j + 2] (n, mean, m2), in any
 * address space; STATS_MERGE_AT(s, p, j): s merged with them (Chan). */
#define STATS_LOAD(s, p, j) ((s).n = (p)[(j)], (s).mean = (p)[(j) + 1], (s).m2 = (p)[(j) + 2])
#define STATS_MERGE_AT(s, p, j)                                                                    \
  do {                                                                                             \
    stats_t o_;                                                                                    \
    STATS_LOAD(o_, (p), (j));                                                                      \
    (s) = stats_merge((s), o_);                                                                    \
  } while (0)

/* A stats_t, merged by stats_merge (row_stats); slot j is floats 3 * j to 3 * j + 2 */
#define CHAN_ZERO(v) ((v).n = 0.0f, (v).mean = 0.0f, (v).m2 = 0.0f)
#define CHAN_SHFL(v, m)                                                                            \
  do {                                                                                             \
    stats_t o_;                                                                                    \
    o_.n = shfl_xor((v).n, (m));                                                                   \
    o_.mean = shfl_xor((v).mean, (m));                                                             \
    o_.m2 = shfl_xor((v).m2, (m));                                                                 \
    (v) = stats_merge((v), o_);                                                                    \
  } while (0)
/* parallel-axis form: the sub-group's mean from sums, then the deviations around it */
#define CHAN_SG(v)                                                                                 \
  do {                                                                                             \
    const float n_ = sub_group_reduce_add((v).n);                                                  \
    const float mean_ = n_ > 0.0f ? sub_group_reduce_add((v).n * (v).mean) / n_ : 0.0f;            \
    const float dm_ = (v).mean - mean_;                                                            \
    (v).m2 = sub_group_reduce_add((v).m2 + (v).n * dm_ * dm_);                                     \
    (v).n = n_;                                                                                    \
    (v).mean = mean_;                                                                              \
  } while (0)
#define CHAN_PUT(j, v)                                                                             \
  (scratch[3 * (j)] = (v).n, scratch[3 * (j) + 1] = (v).mean, scratch[3 * (j) + 2] = (v).m2)
#define CHAN_GET(v, j) STATS_LOAD((v), scratch, 3 * (j))
#define CHAN_ADD(v, j) STATS_MERGE_AT((v), scratch, 3 * (j))
#define CHAN_TREE(j, k)                                                                            \
  do {                                                                                             \
    stats_t a_, b_;                                                                                \
    CHAN_GET(a_, (j));                                                                             \
    CHAN_GET(b_, (k));                                                                             \
    a_ = stats_merge(a_, b_);                                                                      \
    CHAN_PUT((j), a_);                                                                             \
  } while (0)
/* This loop counts from the row's first warp, the sums' from 0: clang keeps this form a loop where
 * it unrolls the other (the same merges in the same order); each keeps its own, so that no
 * kernel's code changes. */
#define CHAN_WARPS(v)                                                                              \
  for (uint w = base / WARP; w < (base + TPR) / WARP; w++) {                                       \
    CHAN_ADD((v), w);                                                                              \
  }

/* Chan merge of the partial statistics of the row's TPR work-items; same rules as row_sum.
 * `scratch` holds 3 * WG floats. */
inline stats_t row_stats(stats_t s, __local float *scratch) { ROW_REDUCE(CHAN, s); }

/* ROW_WELFORD(FOR, GETV, end): the work-item's Welford/Chan statistics of d = x - pivot over its
 * part of the row, merged over the row's work-items (row_stats): declares stats_t st. FOR is the
 * loop over the work-item's vectors, GETV(i, k) vector i there (k: its slot when held); then the
 * elements from nvec * VEC to `end`, one per work-item in turn (SRC1). Welford over blocks of at
 * most 256 vectors, each block merged into the running statistics (Chan): a work-item may own a
 * million elements, and one long Welford recurrence drifts by about 1e-4 over that many updates.
 * One division per vector, not one per lane. Every lane of the vector saw wn values: the lanes
 * are merged, then the scalar tail. */
#define ROW_WELFORD(FOR, GETV, end)                                                                \
  floatv wmean = 0.0f, wm2 = 0.0f, bmean = 0.0f, bm2 = 0.0f;                                      \
  float wn = 0.0f, bn = 0.0f;                                                                      \
  FOR {                                                                                            \
    const floatv xv = GETV(i, k);                                                                  \
    const floatv d = xv - pivot;                                                                   \
    bn += 1.0f;                                                                                    \
    const floatv delta = d - bmean;                                                                \
    bmean += delta * (1.0f / bn);                                                                  \
    bm2 += delta * (d - bmean);                                                                    \
    if (bn == 256.0f) {                                                                            \
      const float n = wn + bn;                                                                     \
      const floatv dm = bmean - wmean;                                                             \
      wmean += dm * (bn / n);                                                                      \
      wm2 += bm2 + dm * dm * (wn * bn / n);                                                        \
      wn = n;                                                                                      \
      bn = 0.0f;                                                                                   \
      bmean = 0.0f;                                                                                \
      bm2 = 0.0f;                                                                                  \
    }                                                                                              \
  }                                                                                                \
  if (bn > 0.0f) {                                                                                 \
    const float n = wn + bn;                                                                       \
    const floatv dm = bmean - wmean;                                                               \
    wmean += dm * (bn / n);                                                                        \
    wm2 += bm2 + dm * dm * (wn * bn / n);                                                          \
    wn = n;                                                                                        \
  }                                                                                                \
  stats_t st;                                                                                      \
  st.n = wn * VEC;                                                                                 \
  st.mean = HSUM(wmean) / VEC;                                                                     \
  const floatv dm = wmean - st.mean;                                                               \
  st.m2 = HSUM(wm2) + wn * HSUM(dm * dm);                                                          \
  for (uint i = nvec * VEC + lane; i < end; i += TPR) {                                            \
    const float d = SRC1(i) - pivot;                                                               \
    st.n += 1.0f;                                                                                  \
    const float delta = d - st.mean;                                                               \
    st.mean += delta / st.n;                                                                       \
    st.m2 += delta * (d - st.mean);                                                                \
  }                                                                                                \
  st = row_stats(st, scratch)

/* The forward kernels' rows: block b of RPG rows; a group takes blocks g, g + groups, ...: one
 * block per group when the grid covers the rows, fewer groups than blocks where the host keeps
 * the grid fixed (PoCL before 6: docs/DEVICES.md). The condition is the same for the whole group,
 * so every work-item meets the same barriers. ROW_OF_BLOCK(b) declares the work-item's row of
 * block b, whether there is one (active: work-items past the last row still take part in the
 * barriers of the reductions), its vectors and elements (0 when not active), and where it starts
 * in x (xr) and, with ADD, in the residual (rr; row 0 when not active, so that every address
 * stays in the buffers). */
#if ADD
#define RES_OF_ROW __global const stype *rr = res + r_off + (active ? row : 0) * r_stride;
#else
#define RES_OF_ROW
#endif
#define ROW_OF_BLOCK(b)                                                                            \
  const ulong row = b * RPG + lid / TPR;                                                           \
  const bool active = row < rows;                                                                  \
  const uint nvec = active ? cols / VEC : 0;                                                       \
  const uint ncols = active ? cols : 0;                                                            \
  __global const stype *xr = x + x_off + (active ? row : 0) * x_stride;                           \
  RES_OF_ROW

/* The row's values: x, or x + residual rounded to the storage type (fused residual add). `xr`
 * and `rr` point at element 0 of the row and are VEC-aligned (the host narrows VEC until every
 * row start is). */
#if ADD
#define SRCV_AT(xp, rp, i) ROUNDV(LOADV((xp), (i)) + LOADV((rp), (i)))
#define SRC1(i) ROUND1(LOAD1(xr, (i)) + LOAD1(rr, (i)))
#else
#define SRCV_AT(xp, rp, i) LOADV((xp), (i))
#define SRC1(i) LOAD1(xr, (i))
#endif
#define SRCV(i) SRCV_AT(xr, rr, (i))

/* Iteration over the work-item's vectors of the row: i is the vector index in the row, k the
 * slot in private memory when the row is held. */
/* A held row is loaded whole before any of it is used (HELD_DECL): every load of the work-item is
 * then in flight at once. Loads inside the loop that uses them, each behind its own `i < nvec`
 * branch, waited for one another: NVIDIA's compiler issues each after the previous one's
 * arithmetic, so a work-item paid a memory latency per vector (docs/DEVICES.md). */
#if HOLD > 0
#define FOR_VECS(i, k, nv)                                                                         \
  for (uint k = 0, i = lane; k < HOLD; k++, i += TPR)                                              \
    if (i < (nv))
/* The held row stays as loaded (rawv: 16-bit elements in pairs under RAW16, half the registers
 * of floats, which on NVIDIA let twice the work-items in) and converts where it is used.
 * ROUND_HELD(v): the fused add's value v rounded to the storage type, as held: PACKR rounds as a
 * store does, so that the held bits are the rounded value exactly. */
#ifdef PACKR
#define ROUND_HELD(v) PACKR(v)
#else
#define ROUND_HELD(v) ROUNDV(v)
#endif
#if ADD
#define HELD_DECL                                                                                  \
  rawv held[HOLD];                                                                                 \
  {                                                                                                \
    rawv hx_[HOLD], hr_[HOLD];                                                                     \
    for (uint k_ = 0, i_ = lane; k_ < HOLD; k_++, i_ += TPR) {                                     \
      hx_[k_] = i_ < nvec ? LOADR(xr, i_) : (rawv)(0);                                             \
      hr_[k_] = i_ < nvec ? LOADR(rr, i_) : (rawv)(0);                                             \
    }                                                                                              \
    for (uint k_ = 0; k_ < HOLD; k_++)                                                             \
      held[k_] = ROUND_HELD(UNRAW(hx_[k_]) + UNRAW(hr_[k_]));                                      \
  }
#else
#define HELD_DECL                                                                                  \
  rawv held[HOLD];                                                                                 \
  for (uint k_ = 0, i_ = lane; k_ < HOLD; k_++, i_ += TPR)                                         \
    held[k_] = i_ < nvec ? LOADR(xr, i_) : (rawv)(0)
#endif
#define HELD_GET(i, k) UNRAW(held[(k)])
#define HELD_GET_AT(xp, rp, i, k) UNRAW(held[(k)])
#else
#define FOR_VECS(i, k, nv) for (uint i = lane, k = 0; i < (nv); i += TPR, k++)
#define HELD_DECL
#define HELD_GET(i, k) SRCV(i)
#define HELD_GET_AT(xp, rp, i, k) SRCV_AT((xp), (rp), (i))
#endif

/* WEIGHTS_DECL(gp, bp, use_g, use_b): with a held row of at most 64 bytes per work-item (WPRE),
 * the work-item's vectors of gamma (gp) and beta (bp) are loaded with the row, before the
 * reduction, so that their latency passes during it; as rawv, where the output loop converts them.
 * Larger held rows would spill. GAMMA_V(gp, i, k), BETA_V(bp, i, k): vector i (slot k) of each.
 * Without WPRE they load in the output loop. The rows start at element 0 (OUT_HEAD is 0 for held
 * rows). */
#define WPRE (HOLD > 0 && HOLD * VEC * (DTYPE == 0 ? 4 : 2) <= 64)
#if WPRE
#define WEIGHTS_DECL(gp, bp, use_g, use_b)                                                         \
  rawv w_g[HOLD], w_b[HOLD];                                                                       \
  for (uint k_ = 0, i_ = lane; k_ < HOLD; k_++, i_ += TPR) {                                       \
    w_g[k_] = (use_g) && i_ < nvec ? LOADR((gp), i_) : (rawv)(0);                                  \
    w_b[k_] = (use_b) && i_ < nvec ? LOADR((bp), i_) : (rawv)(0);                                  \
  }
#define GAMMA_V(gp, i, k) UNRAW(w_g[(k)])
#define BETA_V(bp, i, k) UNRAW(w_b[(k)])
#else
#define WEIGHTS_DECL(gp, bp, use_g, use_b)
#define GAMMA_V(gp, i, k) LOADV((gp), (i))
#define BETA_V(bp, i, k) LOADV((bp), (i))
#endif

/* RB: the private row buffer of RBUF floats (the host's -DRBUF; a CPU device) in the fused-add
 * forward kernels with one work-item per row, the row not held, 16-bit rows. The first pass stores
 * the row's values (x + residual, rounded to the storage type) as floats in the buffer when the
 * row has at most RBUF elements; the later passes read them from there instead of reading both
 * rows, converting and rounding again. On a CPU that work, not memory, bounds those kernels (PoCL
 * 5, 16 cores: add_layernorm float16 and bfloat16 1.2-1.4x, docs/PERFORMANCE.md). The plain ops
 * ran slower with it (one conversion saved per element, a buffer of 32 KiB written and read), so
 * they re-read the row. The values are the same either way: so are the outputs' bits.
 * LayerNorm's Welford statistics read the row once, so only its two-pass kernels take the buffer.
 * RB_PUTV(b, i, v): v stored as vector i of b, and returned; RB_GETV(b, i): vector i of b; b is
 * a private float pointer at any float alignment. RB_KEEP1(b, j, h): h, kept as element j of b
 * when the row is buffered (the kernel's `rb`); RB_READ1(b, j): element j of the row, from b when
 * it is buffered, else from the rows (SRC1). Without RB, h and SRC1(j). */
#if RBUF > 0 && ADD && TPR == 1 && HOLD == 0 && DTYPE != 0 && (RMS || STATS != 0)
#define RB 1
#if VEC == 1
inline float rb_putv(__private float *b, uint i, float v) {
  b[i] = v;
  return v;
}
#define RB_GETV(b, i) ((b)[(i)])
#else
inline floatv rb_putv(__private float *b, uint i, floatv v) {
  CAT(vstore, VEC)(v, i, b);
  return v;
}
#define RB_GETV(b, i) CAT(vload, VEC)((i), (b))
#endif
#define RB_PUTV(b, i, v) rb_putv((b), (i), (v))
#define RB_KEEP1(b, j, h) (rb ? ((b)[(j)] = (h)) : (h))
#define RB_READ1(b, j) (rb ? (b)[(j)] : SRC1(j))
#else
#define RB 0
#define RB_KEEP1(b, j, h) (h)
#define RB_READ1(b, j) SRC1(j)
#endif

/* ADD_SUM_OUT(i, h): in a forward kernel's output loop, the fused add's part for vector i whose
 * value (x + residual, rounded) is h: stored to sum_out where the call asked for it (`so`,
 * `has_sum`), and the next row's residual prefetched (`rn`). Nothing without ADD. */
#if ADD
#define ADD_SUM_OUT(i, h)                                                                          \
  do {                                                                                             \
    if (has_sum)                                                                                   \
      STOREV(so, (i), (h));                                                                        \
    PREFETCH_V(rn, (i));                                                                           \
  } while (0)
#else
#define ADD_SUM_OUT(i, h) ((void)0)
#endif

/* OUT_HEAD(p, n): where the output loop of a row starts its vectors, in elements from the row's
 * start p (n elements). With UNALIGNED and STREAM (a CPU, one work-item per row, the row not
 * held) the first element at which p is aligned to a vector, so that the output vectors stream
 * (VPUT) whatever the row's alignment; the elements before it are written one by one, and the
 * inputs are read at any alignment (vloadN). 0 everywhere else: the host aligns the rows. */
#if UNALIGNED && STREAM && TPR == 1 && HOLD == 0 && VEC > 1
#define OUT_HEAD(p, n)                                                                             \
  min((uint)(n), (uint)((VEC - ((size_t)(p) / sizeof(*(p))) % VEC) % VEC))
#else
#define OUT_HEAD(p, n) 0u
#endif

/* tot += v by Kahan summation; comp carries what tot lost (floatv). */
#define KAHAN_ADD(tot, comp, v)                                                                    \
  do {                                                                                             \
    const floatv y_k = (v) - (comp);                                                               \
    const floatv t_k = (tot) + y_k;                                                                \
    (comp) = (t_k - (tot)) - y_k;                                                                  \
    (tot) = t_k;                                                                                   \
  } while (0)

/* out = the sum over the work-item's vectors of the row (i = lane, lane + TPR, ...) of TERM(i),
 * a floatv, for rows that are not held. Four accumulators, so that the adds do not wait on one
 * another (on a CPU one chain of dependent vector adds is slower than the cache delivers the
 * row); blocks of 256 vectors, each added to the total by Kahan summation, so that a work-item
 * owning a million elements loses no more than one owning a thousand. No index overflows for
 * any nvec < 2^32; with TPR > 1 a lane's i can step past end_ (the i < end_ test). */
#define SUM_UNHELD(out, TERM)                                                                      \
  do {                                                                                             \
    floatv tot_ = 0.0f, comp_ = 0.0f;                                                              \
    uint i = lane;                                                                                 \
    while (i < nvec) {                                                                             \
      const uint end_ = nvec - i > 256u * TPR ? i + 256u * TPR : nvec;                             \
      floatv a0_ = 0.0f, a1_ = 0.0f, a2_ = 0.0f, a3_ = 0.0f;                                       \
      for (; i < end_ && end_ - i > 3u * TPR; i += 4u * TPR) {                                     \
        a0_ += TERM(i);                                                                            \
        a1_ += TERM(i + TPR);                                                                      \
        a2_ += TERM(i + 2u * TPR);                                                                 \
        a3_ += TERM(i + 3u * TPR);                                                                 \
      }                                                                                            \
      for (; i < end_; i += TPR)                                                                   \
        a0_ += TERM(i);                                                                            \
      KAHAN_ADD(tot_, comp_, (a0_ + a1_) + (a2_ + a3_));                                           \
    }                                                                                              \
    out = HSUM(tot_);                                                                              \
  } while (0)

/* out = the sum of TERM(i) and out2 = the sum of its squares over the work-item's vectors of the
 * row, as SUM_UNHELD; two accumulators of each and blocks of 64 vectors, so that every partial
 * sum takes at most 32 terms (LayerNorm's one-pass variance scales their rounding). The squares
 * go through squarev, which clang does not contract into an FMA with the add: on x86 a square of
 * a subnormal then rounds to 0 without the microcode assist an FMA takes (issue 25 point 4). */
#define SUM2_UNHELD(out, out2, TERM)                                                               \
  do {                                                                                             \
    floatv tot_ = 0.0f, comp_ = 0.0f, tot2_ = 0.0f, comp2_ = 0.0f;                                 \
    uint i = lane;                                                                                 \
    while (i < nvec) {                                                                             \
      const uint end_ = nvec - i > 64u * TPR ? i + 64u * TPR : nvec;                               \
      floatv a0_ = 0.0f, a1_ = 0.0f, q0_ = 0.0f, q1_ = 0.0f;                                       \
      for (; i < end_ && end_ - i > TPR; i += 2u * TPR) {                                          \
        const floatv d0_ = TERM(i), d1_ = TERM(i + TPR);                                           \
        a0_ += d0_;                                                                                \
        a1_ += d1_;                                                                                \
        q0_ += squarev(d0_);                                                                       \
        q1_ += squarev(d1_);                                                                       \
      }                                                                                            \
      for (; i < end_; i += TPR) {                                                                 \
        const floatv d0_ = TERM(i);                                                                \
        a0_ += d0_;                                                                                \
        q0_ += squarev(d0_);                                                                       \
      }                                                                                            \
      KAHAN_ADD(tot_, comp_, a0_ + a1_);                                                           \
      KAHAN_ADD(tot2_, comp2_, q0_ + q1_);                                                         \
    }                                                                                              \
    out = HSUM(tot_);                                                                              \
    out2 = HSUM(tot2_);                                                                            \
  } while (0)

inline floatv squarev(floatv v) { return v * v; }

/* Bits of the kernels' `flags` argument: which optional buffers were given. */
#define HAS_GAMMA 1u
#define HAS_BETA 2u
#define HAS_MEAN 4u
#define HAS_RSTD 8u
#define HAS_SUM 16u
#define HAS_DGAMMA 32u
#define HAS_DBETA 64u

/* Rows whose float32 statistics over- or underflow (issue 25). A row's plain statistics stand
 * unless its variance (RMSNorm: mean square) is not finite, or, with eps, below VAR_LO: each
 * square that underflowed lost at most 2^-149, which beside VAR_LO or an eps of at least VAR_LO
 * is at most 2^-49 of the sum. Such a rare row takes its statistics again from its values scaled
 * by sc = 2^k from its largest |x|, exact in floating point, so that no square over- or
 * underflows (RARE_ROW). */
#define VAR_LO 0x1p-100f
#define RARE_ROW(var, eps) (!((var) + (eps) >= VAR_LO && (var) <= FLT_MAX))

/* 2^k, for -126 <= k <= 127 */
inline float pow2i(int k) { return as_float((uint)(k + 127) << 23); }

/* The bits of |v| as unsigned integers: ordered as the values are, and a NaN above every Inf,
 * so that their maximum is the row's largest |x|, or a NaN or an Inf where the row has one. */
#if VEC == 1
#define ABS_BITS(v) (as_uint(v) & 0x7FFFFFFFu)
inline uint hmax_bits(uint v) { return v; }
#else
#define ABS_BITS(v) (CAT(as_uint, VSUFFIX)(v) & (uintv)0x7FFFFFFFu)
inline uint hmax_bits(uintv v) {
#if VEC == 16
  const uint8 a = max(v.lo, v.hi);
  const uint4 b = max(a.lo, a.hi);
#elif VEC == 8
  const uint4 b = max(v.lo, v.hi);
#elif VEC == 4
  const uint4 b = v;
#endif
#if VEC == 2
  return max(v.s0, v.s1);
#else
  return max(max(b.s0, b.s1), max(b.s2, b.s3));
#endif
}
#endif

/* The exponent k of the scale of values whose largest |x| has the bits mb (finite, not 0): the
 * largest |x| times 2^k is in [1, 2) where that keeps 2^k and 2^-k normal floats, else as near
 * as they allow. */
inline int scale_exp(uint mb) {
  const int e = mb >= 0x00800000u ? (int)(mb >> 23) - 127 : (int)(31 - clz(mb)) - 149;
  return clamp(-e, -126, 126);
}

/* Whether the rstd of values scaled by sc is rsqrt(eps), taken unscaled, given the variance
 * (RMSNorm: mean square) var_s of the scaled values and e2 = eps sc^2: where e2 overflows the
 * variance is negligible beside eps; a variance of 0 leaves eps alone (e2 may have underflowed). */
inline bool rare_unscaled(float var_s, float e2) { return var_s == 0.0f || isinf(e2); }

/* That rstd: rsqrt(var_s + eps sc^2) * sc, or rsqrt(eps) (rare_unscaled). */
inline float rare_rstd(float var_s, float eps, float sc) {
  const float e2 = eps * sc * sc;
  if (rare_unscaled(var_s, e2))
    return rsqrt(eps);
  return rsqrt(var_s + e2) * sc;
}

/* out = the sum of TERM1(j) over the elements j < `end` of a row, taken by one work-item (the rare
 * rows): blocks of 256 elements, added by Kahan summation. Scalar: rare rows only, and the code
 * every program compiles stays small (PoCL compiled the vector form's programs 36% slower). */
#define RARE_SUM(out, TERM1, end)                                                                  \
  do {                                                                                             \
    float tot_ = 0.0f, comp_ = 0.0f;                                                               \
    for (uint j0_ = 0; j0_ < (end); j0_ += 256u) {                                                 \
      const uint e_ = min((uint)(end), j0_ + 256u);                                                \
      float a_ = 0.0f;                                                                             \
      for (uint j = j0_; j < e_; j++)                                                              \
        a_ += TERM1(j);                                                                            \
      const float y_ = a_ - comp_, t_ = tot_ + y_;                                                 \
      comp_ = (t_ - tot_) - y_;                                                                    \
      tot_ = t_;                                                                                   \
    }                                                                                              \
    out = tot_;                                                                                    \
  } while (0)

/* out = the bits of the largest |value| of a row (SRC1: xr and rr), as RARE_SUM */
#define RARE_MAX_BITS(out, end)                                                                    \
  do {                                                                                             \
    uint m_ = 0;                                                                                   \
    for (uint j = 0; j < (end); j++)                                                               \
      m_ = max(m_, as_uint(SRC1(j)) & 0x7FFFFFFFu);                                                \
    out = m_;                                                                                      \
  } while (0)

/* A uint, merged by max (row_max_bits; the bits of |x| as ABS_BITS gives them, in float slots) */
#define MAXB_ZERO(v) ((v) = 0u)
#define MAXB_SHFL(v, m) ((v) = max((v), as_uint(shfl_xor(as_float(v), (m)))))
#define MAXB_SG(v) ((v) = sub_group_reduce_max(v))
#define MAXB_PUT(j, v) (scratch[(j)] = as_float(v))
#define MAXB_GET(v, j) ((v) = as_uint(scratch[(j)]))
#define MAXB_ADD(v, j) ((v) = max((v), as_uint(scratch[(j)])))
#define MAXB_TREE(j, k) (scratch[(j)] = as_float(max(as_uint(scratch[(j)]), as_uint(scratch[(k)]))))
#define MAXB_WARPS(v)                                                                              \
  for (uint w = 0; w < TPR / WARP; w++) {                                                          \
    MAXB_ADD((v), base / WARP + w);                                                                \
  }

/* The maximum of v over the TPR work-items of this row; the rules of row_sum. */
inline uint row_max_bits(uint v, __local float *scratch) { ROW_REDUCE(MAXB, v); }

/* SCALE_UP64: the programs of one work-item a row (not held) or, for the backward's split kernels,
 * of one work-item a group, in float32 and bfloat16 (whose values go down to 2^-149): where the
 * forward's TINY (cl/forward.cl) and the backward's BWD_TINY (cl/backward.cl) scale the rows
 * whose every value is below 2^-64 (issue 25 point 4). scale_up64(v): v 2^64 for |v| < 2^63,
 * exact, with no floating-point operation on a subnormal (on x86 one takes a microcode assist of
 * about 100 cycles): a subnormal's bits as an integer are |v| 2^149, converted exactly; a normal's
 * exponent field gets 64 more. scale_up64_1: the same for an element. */
#define SCALE_UP64 (DTYPE != 1 && (TPR == 1 && HOLD == 0 || SPLIT && WG == 1))
#if SCALE_UP64
inline floatv scale_up64(floatv v) {
  const uintv b = CAT(as_uint, VSUFFIX)(v), mag = b & 0x7FFFFFFFu;
  const floatv sub = CAT(convert_float, VSUFFIX)(CAT(as_int, VSUFFIX)(mag)) * 0x1p-85f;
  const floatv nrm = CAT(as_float, VSUFFIX)(mag + 0x20000000u);
  const floatv r = select(nrm, sub, CAT(as_int, VSUFFIX)(mag) < 0x00800000);
  return CAT(as_float, VSUFFIX)(CAT(as_uint, VSUFFIX)(r) | (b & 0x80000000u));
}
inline float scale_up64_1(float v) {
  const uint b = as_uint(v), mag = b & 0x7FFFFFFFu;
  const float r = mag < 0x00800000u ? (float)mag * 0x1p-85f : as_float(mag + 0x20000000u);
  return as_float(as_uint(r) | (b & 0x80000000u));
}
#endif
