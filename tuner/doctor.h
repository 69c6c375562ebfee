/* normtune doctor: what a user needs when clnorm is slow or wrong: the OpenCL platforms and
 * devices found, the ICD files the loader reads, the tuning database (path, access, results per
 * device and whether they are stale) and the program-binary cache. */
#ifndef CLNORM_DOCTOR_H
#define CLNORM_DOCTOR_H

#include "db.h"

#include <stdint.h>

/* Exit statuses of `normtune doctor`: the most serious finding. */
#define DOCTOR_OK 0        /* nothing wrong (notes only) */
#define DOCTOR_WARNING 3   /* clnorm runs, untuned or partly: no database or no current results */
                           /* for a device here, stale results, a database tune cannot write */
#define DOCTOR_NO_OPENCL 4 /* no OpenCL platform or no device: clnorm cannot run at all */
#define DOCTOR_BAD_DB 5    /* the database exists but cannot be read (permissions, corrupt, not */
                           /* a clnorm database, newer schema): the library runs untuned */

/* Prints the report on standard output; db_option is --db (NULL: the default path); results are
 * current under hashes (this build's). Each warning and problem comes with a line saying what to
 * do. Returns a DOCTOR_ status. */
int doctor_run(const char *db_option, clnorm_kernel_hashes hashes);

#endif
