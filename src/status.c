#include "internal.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

const char *clnorm_status_string(clnorm_status status) {
  switch (status) {
#define X(name, value, text)                                                                       \
  case name:                                                                                       \
    return text;
    CLNORM_STATUS_MAP(X)
#undef X
  }
  return "unknown status";
}

const char *clnorm_version_string(void) { return CLNORM_VERSION_STRING; }

const char *clnorm_version(void) { return clnorm_version_string(); }

unsigned clnorm_version_number(void) { return CLNORM_VERSION_NUMBER; }

/* The message belongs to the thread that made the failing call, so concurrent calls on one
 * context never see each other's text. */
static CLNORM_THREAD_LOCAL struct {
  const clnorm_ctx *ctx;
  char text[4096];
} last_error;

clnorm_status clnorm__fail(const clnorm_ctx *ctx, clnorm_status status, const char *fmt, ...) {
  va_list args;
  va_start(args, fmt);
  last_error.ctx = ctx;
  vsnprintf(last_error.text, sizeof last_error.text, fmt, args);
  va_end(args);
  return status;
}

void clnorm__clear_error(const clnorm_ctx *ctx) {
  if (last_error.ctx == ctx)
    last_error.text[0] = '\0';
}

const char *clnorm_ctx_errmsg(const clnorm_ctx *ctx) {
  return last_error.ctx == ctx ? last_error.text : "";
}

const char *clnorm__cl_error_name(cl_int err) {
  switch (err) {
#define E(name)                                                                                    \
  case name:                                                                                       \
    return #name;
    E(CL_SUCCESS)
    E(CL_DEVICE_NOT_FOUND)
    E(CL_DEVICE_NOT_AVAILABLE)
    E(CL_COMPILER_NOT_AVAILABLE)
    E(CL_MEM_OBJECT_ALLOCATION_FAILURE)
    E(CL_OUT_OF_RESOURCES)
    E(CL_OUT_OF_HOST_MEMORY)
    E(CL_PROFILING_INFO_NOT_AVAILABLE)
    E(CL_MEM_COPY_OVERLAP)
    E(CL_BUILD_PROGRAM_FAILURE)
    E(CL_MISALIGNED_SUB_BUFFER_OFFSET)
    E(CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST)
    E(CL_INVALID_VALUE)
    E(CL_INVALID_DEVICE_TYPE)
    E(CL_INVALID_PLATFORM)
    E(CL_INVALID_DEVICE)
    E(CL_INVALID_CONTEXT)
    E(CL_INVALID_QUEUE_PROPERTIES)
    E(CL_INVALID_COMMAND_QUEUE)
    E(CL_INVALID_HOST_PTR)
    E(CL_INVALID_MEM_OBJECT)
    E(CL_INVALID_BINARY)
    E(CL_INVALID_BUILD_OPTIONS)
    E(CL_INVALID_PROGRAM)
    E(CL_INVALID_PROGRAM_EXECUTABLE)
    E(CL_INVALID_KERNEL_NAME)
    E(CL_INVALID_KERNEL_DEFINITION)
    E(CL_INVALID_KERNEL)
    E(CL_INVALID_ARG_INDEX)
    E(CL_INVALID_ARG_VALUE)
    E(CL_INVALID_ARG_SIZE)
    E(CL_INVALID_KERNEL_ARGS)
    E(CL_INVALID_WORK_DIMENSION)
    E(CL_INVALID_WORK_GROUP_SIZE)
    E(CL_INVALID_WORK_ITEM_SIZE)
    E(CL_INVALID_GLOBAL_OFFSET)
    E(CL_INVALID_EVENT_WAIT_LIST)
    E(CL_INVALID_EVENT)
    E(CL_INVALID_OPERATION)
    E(CL_INVALID_BUFFER_SIZE)
    E(CL_INVALID_GLOBAL_WORK_SIZE)
#undef E
  default:
    return "unknown OpenCL error";
  }
}
