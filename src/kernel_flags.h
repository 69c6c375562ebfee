/* The bits of the kernels' `flags` argument: which optional buffers a call gave. One list for the
 * host (launch.c) and, later, the kernels (OpenCL C's preprocessor and enums read it as well).
 * Until cl/common.cl includes it, its HAS_* values must equal these: test_names compares them
 * with the embedded source. */
#ifndef CLNORM_KERNEL_FLAGS_H
#define CLNORM_KERNEL_FLAGS_H

#define CLNORM_KERNEL_FLAG_MAP(X)                                                                  \
  X(HAS_GAMMA, 1u)                                                                                 \
  X(HAS_BETA, 2u)                                                                                  \
  X(HAS_MEAN, 4u)                                                                                  \
  X(HAS_RSTD, 8u)                                                                                  \
  X(HAS_SUM, 16u)                                                                                  \
  X(HAS_DGAMMA, 32u)                                                                               \
  X(HAS_DBETA, 64u)

#define CLNORM_KERNEL_FLAG(name, value) enum { CLNORM_##name = value };
CLNORM_KERNEL_FLAG_MAP(CLNORM_KERNEL_FLAG)
#undef CLNORM_KERNEL_FLAG

#endif
