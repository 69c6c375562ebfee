/* Checks shared by the fuzz targets: what the tuning database hands back must be something the
 * library can use, whatever the input. A failed check aborts, which libFuzzer reports as a crash
 * with the input that caused it. */
#ifndef CLNORM_FUZZ_CHECK_H
#define CLNORM_FUZZ_CHECK_H

#include "db.h"

#include <stddef.h>

/* Prints the message and aborts. */
void fuzz_fail(const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 1, 2), noreturn))
#endif
    ;

/* A private temporary directory (in $FUZZ_TMPDIR, else /dev/shm, else $TMPDIR, else /tmp),
 * removed with the files named by fuzz_path at exit (not after a crash: scripts/fuzz.sh gives
 * each run a FUZZ_TMPDIR it removes). */
const char *fuzz_dir(void);

/* "<fuzz_dir()>/<name>"; the file and its -wal, -shm and -journal files are removed at exit. */
const char *fuzz_path(const char *name);

/* Removes path and its -wal, -shm and -journal files. */
void fuzz_remove_db(const char *path);

/* An error message must be a NUL-terminated string within err_size bytes; non-empty on failure,
 * empty on success. */
void fuzz_check_err(const char *err, size_t err_size, clnorm_status status, const char *call);

/* Every field of a device identity or result that the database hands out is in the range the
 * library accepts for storing it (db.c's result_valid and device_valid, written out again). */
void fuzz_check_device(const clnorm_device_identity *d);
void fuzz_check_result(const clnorm_result *r);

/* Field by field, NaN equal to NaN. */
int fuzz_same_result(const clnorm_result *a, const clnorm_result *b);
int fuzz_same_device(const clnorm_device_identity *a, const clnorm_device_identity *b);

/* Negative, zero or positive as a and b's (op, dtype, cols, row_class) compare, in this order. */
int fuzz_shape_cmp(const clnorm_result *a, const clnorm_result *b);

/* Checks a winners array the way the library then uses it (tuned.c, dispatch.c): "ok" entries of
 * this kernel hash, sorted by shape (one per shape when one_per_shape; a damaged file's index may
 * split a shape), each variant run through the variant checks the dispatcher applies (nothing
 * may crash or overflow in them). */
void fuzz_check_winners(const clnorm_result *winners, size_t count, uint64_t kernel_hash,
                        int one_per_shape);

#endif
