#include "db.h"
#include "internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static cl_int device_string(cl_device_id device, cl_device_info what, char *buf, size_t size) {
  buf[0] = '\0';
  const cl_int err = clGetDeviceInfo(device, what, size, buf, NULL);
  buf[size - 1] = '\0';
  return err;
}

/* "OpenCL 3.0 PoCL 5.0+debian  Linux, ..." names a PoCL older than 6, whose kernel cache
 * (pocl commit 9184812d6 fixed it in 6.0) releases the wrong entry when one kernel runs with
 * two global sizes at once. */
static int pocl_before_6(const char *platform_version) {
  const char *p = strstr(platform_version, "PoCL ");
  if (!p)
    return 0;
  const long major = strtol(p + 5, NULL, 10);
  return major > 0 && major < 6;
}

/* ASCII case-insensitive equality (the C locale's, whatever the application's locale). */
/* `dflt`, unless the environment variable `name` is "0" or "1". */
static int env_switch(const char *name, int dflt) {
  const char *v = getenv(name);
  return v && (strcmp(v, "0") == 0 || strcmp(v, "1") == 0) ? v[0] == '1' : dflt;
}

/* A whole number from lo to hi in the environment, else 0. */
static unsigned env_count(const char *name, long lo, long hi) {
  const char *v = getenv(name);
  char *end;
  const long n = v ? strtol(v, &end, 10) : 0;
  return v && *v && *end == '\0' && n >= lo && n <= hi ? (unsigned)n : 0;
}

/* The row buffers' budget per work-group: 2 MiB, or a quarter of a thread's stack where that is
 * less (PoCL runs a group on a thread whose stack glibc sizes from the stack limit; unlimited:
 * the 2 MiB). */
static size_t row_buffer_budget(void) {
  const size_t stack = clnorm__stack_limit();
  size_t budget = CLNORM_ROW_BUFFER_GROUP_BYTES;
  if (stack && stack / 4 < budget)
    budget = stack / 4;
  return budget;
}

static clnorm_status read_device_info(clnorm_ctx *ctx) {
  clnorm_device_info *info = &ctx->info;
  cl_platform_id platform;
  CHECK_CL(ctx, device_string(ctx->device, CL_DEVICE_NAME, info->name, sizeof info->name));
  CHECK_CL(ctx, device_string(ctx->device, CL_DEVICE_VENDOR, info->vendor, sizeof info->vendor));
  CHECK_CL(ctx, clGetDeviceInfo(ctx->device, CL_DEVICE_PLATFORM, sizeof platform, &platform,
                                NULL));
  CHECK_CL(ctx, clGetPlatformInfo(platform, CL_PLATFORM_NAME, sizeof info->platform,
                                  info->platform, NULL));
  info->platform[sizeof info->platform - 1] = '\0';
  CHECK_CL(ctx, clGetDeviceInfo(ctx->device, CL_DEVICE_VENDOR_ID, sizeof info->vendor_id,
                                &info->vendor_id, NULL));
  CHECK_CL(ctx, clGetDeviceInfo(ctx->device, CL_DEVICE_TYPE, sizeof info->type, &info->type,
                                NULL));
  CHECK_CL(ctx, clGetDeviceInfo(ctx->device, CL_DEVICE_MAX_WORK_GROUP_SIZE, sizeof info->max_wg,
                                &info->max_wg, NULL));
  CHECK_CL(ctx, clGetDeviceInfo(ctx->device, CL_DEVICE_LOCAL_MEM_SIZE, sizeof info->local_mem,
                                &info->local_mem, NULL));
  CHECK_CL(ctx, clGetDeviceInfo(ctx->device, CL_DEVICE_MAX_COMPUTE_UNITS,
                                sizeof info->compute_units, &info->compute_units, NULL));
  size_t ext_size = 0;
  CHECK_CL(ctx, clGetDeviceInfo(ctx->device, CL_DEVICE_EXTENSIONS, 0, NULL, &ext_size));
  char *ext = malloc(ext_size + 1);
  RETURN_IF(ctx, !ext, CLNORM_E_NO_MEMORY, "out of host memory reading device extensions");
  const cl_int err = clGetDeviceInfo(ctx->device, CL_DEVICE_EXTENSIONS, ext_size, ext, NULL);
  ext[ext_size] = '\0';
  info->has_subgroups = err == CL_SUCCESS && strstr(ext, "cl_khr_subgroups") != NULL;
  free(ext);
  CHECK_CL(ctx, err);
  char version[128];
  CHECK_CL(ctx, device_string(ctx->device, CL_DEVICE_VERSION, version, sizeof version));
  /* The sub-group built-ins need OpenCL C 2.0 or later; OpenCL 3.0 devices (PoCL 5) may report
   * OpenCL C 1.2 as their C version yet take -cl-std=CL3.0 with the sub-group feature. */
  strcpy(info->subgroup_std, strncmp(version, "OpenCL 3", 8) == 0 ? "CL3.0" : "CL2.0");
  info->is_nvidia = strstr(info->platform, "NVIDIA") != NULL && info->vendor_id == 0x10de;
  info->ptx_sm = 0;
  if (info->is_nvidia) {
    /* cl_nv_device_attribute_query's CL_DEVICE_COMPUTE_CAPABILITY_MAJOR_NV / _MINOR_NV */
    cl_uint major = 0, minor = 0;
    if (clGetDeviceInfo(ctx->device, 0x4000, sizeof major, &major, NULL) == CL_SUCCESS &&
        clGetDeviceInfo(ctx->device, 0x4001, sizeof minor, &minor, NULL) == CL_SUCCESS &&
        major > 0 && major < 100 && minor < 10)
      info->ptx_sm = major * 10 + minor;
    else
      info->ptx_sm = 1;
  }
  clnorm__driver_family(version, info->family, sizeof info->family);
  clnorm__device_arch(info->vendor_id, info->name, info->ptx_sm, info->arch, sizeof info->arch);
  char platform_version[256];
  CHECK_CL(ctx, clGetPlatformInfo(platform, CL_PLATFORM_VERSION, sizeof platform_version,
                                  platform_version, NULL));
  platform_version[sizeof platform_version - 1] = '\0';
  info->fixed_grid = env_switch("CLNORM_FIXED_GRID", pocl_before_6(platform_version));
  /* PoCL's CPU device: streaming stores and next-row prefetches (docs/DEVICES.md) */
  const int pocl_cpu = (info->type & CL_DEVICE_TYPE_CPU) != 0 &&
                       strcmp(info->platform, "Portable Computing Language") == 0;
  info->stream_stores = env_switch("CLNORM_STREAM_STORES", pocl_cpu);
  info->prefetch = env_switch("CLNORM_PREFETCH", pocl_cpu);
  info->hw_half = env_switch("CLNORM_HW_HALF", pocl_cpu);
  info->raw16 = env_switch("CLNORM_RAW16", info->is_nvidia);
  info->reqd_wg = env_switch("CLNORM_REQD_WG", info->is_nvidia);
  info->bwd_prefetch = info->ptx_sm && env_switch("CLNORM_BWD_PREFETCH", 0);
  const int strip = env_switch("CLNORM_BWD_STRIP", -1);
  info->bwd_strip = strip == 1 ? 1 : strip == 0 ? -1 : 0;
  info->bwd_groups_per_cu = env_count("CLNORM_BWD_GROUPS_PER_CU", 1, 64);
  info->nv_maxrreg = info->ptx_sm ? env_count("CLNORM_NV_MAXRREG", 16, 255) : 0;
  const char *rvec = getenv("CLNORM_REDUCE_VEC");
  info->reduce_vec = rvec && strcmp(rvec, "1") == 0     ? 1
                     : rvec && strcmp(rvec, "16") == 0  ? 16
                     : (info->type & CL_DEVICE_TYPE_CPU) ? 16
                                                         : 1;
  info->reduce_local = 4;
  if (info->reduce_vec == 1)
    for (info->reduce_local = 8;
         info->reduce_local * 2 <= 256 && info->reduce_local * 2 <= info->max_wg;)
      info->reduce_local *= 2;
  info->no_warnings = pocl_cpu;
  info->unaligned = env_switch("CLNORM_UNALIGNED", (info->type & CL_DEVICE_TYPE_CPU) != 0);
  info->rbuf_bytes = env_switch("CLNORM_ROW_BUFFER", pocl_cpu) ? row_buffer_budget() : 0;
  return CLNORM_OK;
}

static const char *info_name(const clnorm_ctx *ctx) { return ctx->info.name; }

clnorm_status clnorm_ctx_create(cl_context context, cl_device_id device, clnorm_ctx **out) {
  RETURN_IF(NULL, !out, CLNORM_E_INVALID_ARG, "out is NULL");
  *out = NULL;
  RETURN_IF(NULL, !context, CLNORM_E_INVALID_ARG, "context is NULL");
  RETURN_IF(NULL, !device, CLNORM_E_INVALID_ARG, "device is NULL");

  cl_uint ndev = 0;
  cl_int err = clGetContextInfo(context, CL_CONTEXT_NUM_DEVICES, sizeof ndev, &ndev, NULL);
  RETURN_IF(NULL, err != CL_SUCCESS, CLNORM_E_INVALID_ARG, "context is not a valid cl_context: %s",
            clnorm__cl_error_name(err));
  cl_device_id *devices = calloc(ndev ? ndev : 1, sizeof *devices);
  RETURN_IF(NULL, !devices, CLNORM_E_NO_MEMORY, "out of host memory");
  err = clGetContextInfo(context, CL_CONTEXT_DEVICES, ndev * sizeof *devices, devices, NULL);
  int found = 0;
  for (cl_uint i = 0; err == CL_SUCCESS && i < ndev; i++)
    found |= devices[i] == device;
  free(devices);
  RETURN_IF(NULL, err != CL_SUCCESS, CLNORM_E_OPENCL, "clGetContextInfo failed: %s",
            clnorm__cl_error_name(err));
  RETURN_IF(NULL, !found, CLNORM_E_INVALID_ARG, "device is not a device of context");

  clnorm_ctx *ctx = calloc(1, sizeof *ctx);
  RETURN_IF(NULL, !ctx, CLNORM_E_NO_MEMORY, "out of host memory");
  ctx->context = context;
  ctx->device = device;
  clnorm_status status = read_device_info(ctx);
  if (status != CLNORM_OK) {
    /* The message was recorded against ctx, which the caller never sees: move it to NULL. */
    const clnorm_status s = clnorm__fail(NULL, status, "%s", clnorm_ctx_errmsg(ctx));
    free(ctx);
    return s;
  }
  if (clnorm__mutex_init(&ctx->lock) != 0) {
    free(ctx);
    return clnorm__fail(NULL, CLNORM_E_NO_MEMORY, "creating the context's mutex failed");
  }
  if (clnorm__cond_init(&ctx->built) != 0) {
    clnorm__mutex_destroy(&ctx->lock);
    free(ctx);
    return clnorm__fail(NULL, CLNORM_E_NO_MEMORY, "creating the context's condition failed");
  }
  clRetainContext(context);
  clRetainDevice(device);
  clnorm__builtin_load(ctx);
  clnorm__system_load(ctx);
  clnorm__bincache_init(ctx);
  /* A missing or bad tuning database never fails the context: calls use the built-in table and
   * the heuristic, and the log says why. */
  if (clnorm__tuning_load(ctx, NULL) != CLNORM_OK)
    clnorm__log(CLNORM_LOG_INFO, "%s", clnorm_ctx_errmsg(ctx));
  else
    clnorm__log(CLNORM_LOG_INFO, "%zu tuned results for %s (%zu of other driver versions)",
                ctx->tables[CLNORM_TABLE_TUNED].count, info_name(ctx),
                ctx->tables[CLNORM_TABLE_TUNED_OTHER].count);
  clnorm__clear_error(ctx);
  *out = ctx;
  return CLNORM_OK;
}

void clnorm_ctx_destroy(clnorm_ctx *ctx) {
  if (!ctx)
    return;
  clnorm__programs_free(ctx);
  clnorm__tuning_free(ctx);
  clnorm__bincache_free(ctx);
  clnorm__scratch_free(ctx);
  clnorm__cond_destroy(&ctx->built);
  clnorm__mutex_destroy(&ctx->lock);
  clReleaseDevice(ctx->device);
  clReleaseContext(ctx->context);
  clnorm__clear_error(ctx);
  free(ctx);
}
