/* The identity of a device under which tuning results are stored (see db.h). */
#include "db.h"
#include "internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static clnorm_status fail(char *err, size_t err_size, clnorm_status status, const char *what,
                          cl_int code) {
  if (err && err_size)
    snprintf(err, err_size, "clGetDeviceInfo(%s) failed: %s (%d)", what,
             clnorm__cl_error_name(code), (int)code);
  return status;
}

/* Reads a string of any length, keeps what fits, and trims the trailing spaces some drivers pad
 * their names with, so the identity does not depend on padding. */
static cl_int device_string(cl_device_id device, cl_device_info what, char *buf, size_t size) {
  size_t needed = 0;
  buf[0] = '\0';
  cl_int err = clGetDeviceInfo(device, what, 0, NULL, &needed);
  if (err != CL_SUCCESS)
    return err;
  char *text = malloc(needed + 1);
  if (!text)
    return CL_OUT_OF_HOST_MEMORY;
  err = clGetDeviceInfo(device, what, needed, text, NULL);
  text[needed] = '\0';
  if (err == CL_SUCCESS) {
    snprintf(buf, size, "%s", text);
    size_t len = strlen(buf);
    while (len > 0 && (buf[len - 1] == ' ' || buf[len - 1] == '\t' || buf[len - 1] == '\n'))
      buf[--len] = '\0';
  }
  free(text);
  return err;
}

clnorm_status clnorm__device_identity(cl_device_id device, clnorm_device_identity *out, char *err,
                                      size_t err_size) {
  if (err && err_size)
    err[0] = '\0';
  if (!device || !out) {
    if (err && err_size)
      snprintf(err, err_size, "%s is NULL", device ? "out" : "device");
    return CLNORM_E_INVALID_ARG;
  }
  memset(out, 0, sizeof *out);
  const struct {
    cl_device_info what;
    const char *name;
    char *field;
    size_t size;
  } strings[] = {
      {CL_DEVICE_VENDOR, "CL_DEVICE_VENDOR", out->vendor, sizeof out->vendor},
      {CL_DEVICE_NAME, "CL_DEVICE_NAME", out->name, sizeof out->name},
      {CL_DRIVER_VERSION, "CL_DRIVER_VERSION", out->driver_version, sizeof out->driver_version},
      {CL_DEVICE_VERSION, "CL_DEVICE_VERSION", out->cl_version, sizeof out->cl_version},
  };
  for (size_t i = 0; i < sizeof strings / sizeof strings[0]; i++) {
    const cl_int code = device_string(device, strings[i].what, strings[i].field, strings[i].size);
    if (code != CL_SUCCESS)
      return fail(err, err_size, CLNORM_E_OPENCL, strings[i].name, code);
  }
  cl_int code =
      clGetDeviceInfo(device, CL_DEVICE_VENDOR_ID, sizeof out->vendor_id, &out->vendor_id, NULL);
  if (code != CL_SUCCESS)
    return fail(err, err_size, CLNORM_E_OPENCL, "CL_DEVICE_VENDOR_ID", code);
  code = clGetDeviceInfo(device, CL_DEVICE_MAX_COMPUTE_UNITS, sizeof out->compute_units,
                         &out->compute_units, NULL);
  if (code != CL_SUCCESS)
    return fail(err, err_size, CLNORM_E_OPENCL, "CL_DEVICE_MAX_COMPUTE_UNITS", code);
  code = clGetDeviceInfo(device, CL_DEVICE_MAX_CLOCK_FREQUENCY, sizeof out->max_clock_mhz,
                         &out->max_clock_mhz, NULL);
  if (code != CL_SUCCESS)
    return fail(err, err_size, CLNORM_E_OPENCL, "CL_DEVICE_MAX_CLOCK_FREQUENCY", code);
  code = clGetDeviceInfo(device, CL_DEVICE_LOCAL_MEM_SIZE, sizeof out->local_mem, &out->local_mem,
                         NULL);
  if (code != CL_SUCCESS)
    return fail(err, err_size, CLNORM_E_OPENCL, "CL_DEVICE_LOCAL_MEM_SIZE", code);
  return CLNORM_OK;
}

int clnorm__identity_equal(const clnorm_device_identity *a, const clnorm_device_identity *b) {
  return a->vendor_id == b->vendor_id && a->compute_units == b->compute_units &&
         a->max_clock_mhz == b->max_clock_mhz && a->local_mem == b->local_mem &&
         strcmp(a->vendor, b->vendor) == 0 && strcmp(a->name, b->name) == 0 &&
         strcmp(a->driver_version, b->driver_version) == 0 &&
         strcmp(a->cl_version, b->cl_version) == 0;
}

int clnorm__identity_same_device(const clnorm_device_identity *a,
                                 const clnorm_device_identity *b) {
  return a->vendor_id == b->vendor_id && a->compute_units == b->compute_units &&
         a->local_mem == b->local_mem && strcmp(a->vendor, b->vendor) == 0 &&
         strcmp(a->name, b->name) == 0;
}

void clnorm__driver_family(const char *cl_version, char *out, size_t size) {
  if (!size)
    return;
  out[0] = '\0';
  const char *p = cl_version;
  if (strncmp(p, "OpenCL ", 7) != 0)
    return;
  p += 7;
  while (*p && *p != ' ')
    p++; /* the version number */
  while (*p == ' ')
    p++;
  size_t n = 0;
  while (p[n] && p[n] != ' ' && n + 1 < size)
    n++;
  memcpy(out, p, n);
  out[n] = '\0';
}

void clnorm__device_arch(cl_uint vendor_id, const char *name, unsigned nv_sm, char *out,
                         size_t size) {
  if (!size)
    return;
  out[0] = '\0';
  if (vendor_id == 0x10de && nv_sm >= 10)
    snprintf(out, size, "sm_%u", nv_sm);
  else if (vendor_id == 0x1002 && strncmp(name, "gfx", 3) == 0)
    snprintf(out, size, "%.*s", (int)strcspn(name, ":"), name);
}
