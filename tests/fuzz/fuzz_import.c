/* libFuzzer target: `normtune import` reads JSON written on another machine, so clnorm__db_import
 * gets the fuzz input as it is. Rejected input must leave the database as it was and say why;
 * accepted input must list, choose winners, look up, export and import again (into a second
 * database) to the same export. Each input starts from empty databases. */
#define _POSIX_C_SOURCE 200809L
#include "db.h"
#include "db_json.h"
#include "fuzz_check.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char *path_a, *path_b;
static clnorm_db *db_a, *db_b;
static int b_used; /* db_b holds rows to clear before the next input */
static char err[1024];

static clnorm_db *open_empty(const char *path) {
  fuzz_remove_db(path);
  clnorm_db *db = NULL;
  const clnorm_status status = clnorm__db_open(path, CLNORM_DB_WRITE, &db, err, sizeof err);
  if (status != CLNORM_OK)
    fuzz_fail("opening %s: %s", path, err);
  return db;
}

int LLVMFuzzerInitialize(int *argc, char ***argv) {
  path_a = fuzz_path("import.db");
  path_b = fuzz_path("roundtrip.db");
  db_a = open_empty(path_a);
  db_b = open_empty(path_b);
  return 0;
}

#define MAX_PAIRS 8

/* What a listing saw: rows, and the distinct (device, kernel hash) pairs. */
typedef struct seen {
  size_t rows, winners;
  size_t pairs;
  clnorm_device_identity device[MAX_PAIRS];
  uint64_t hash[MAX_PAIRS];
  clnorm_result sample[MAX_PAIRS]; /* one result of each pair */
  clnorm_device_identity last_device;
  clnorm_result last; /* the previous row: ties and order */
} seen;

static int see(void *user, const clnorm_device_identity *d, const clnorm_result *r, int winner) {
  seen *s = user;
  fuzz_check_device(d);
  fuzz_check_result(r);
  if (winner && r->outcome != CLNORM_OUTCOME_OK)
    fuzz_fail("list: a winner with outcome %d", (int)r->outcome);
  s->rows++;
  s->winners += winner != 0;
  size_t i = 0;
  while (i < s->pairs && !(s->hash[i] == r->kernel_hash && fuzz_same_device(&s->device[i], d)))
    i++;
  if (i == s->pairs && i < MAX_PAIRS) {
    s->device[i] = *d;
    s->hash[i] = r->kernel_hash;
    s->sample[i] = *r;
    s->pairs++;
  }
  s->last_device = *d;
  s->last = *r;
  return 0;
}

static seen list_all(clnorm_db *db, const clnorm_device_identity *device,
                     const clnorm_kernel_hashes *hash, int winners_only) {
  seen s;
  memset(&s, 0, sizeof s);
  const clnorm_status status =
      clnorm__db_list(db, device, hash, winners_only, see, &s, err, sizeof err);
  fuzz_check_err(err, sizeof err, status, "clnorm__db_list");
  if (status != CLNORM_OK)
    fuzz_fail("list: %s", err);
  return s;
}

static char *export_text(clnorm_db *db, size_t *len) {
  char *text = NULL;
  FILE *f = open_memstream(&text, len);
  if (!f)
    fuzz_fail("open_memstream failed");
  const clnorm_status status = clnorm__db_export(db, 0, f, err, sizeof err);
  fclose(f);
  fuzz_check_err(err, sizeof err, status, "clnorm__db_export");
  if (status != CLNORM_OK)
    fuzz_fail("export: %s", err);
  return text;
}

/* The export without its "exported_at" line, which differs from one second to the next. */
static const char *after_time(const char *text) {
  const char *at = strstr(text, "\"exported_at\"");
  if (!at)
    fuzz_fail("export without exported_at");
  return strchr(at, '\n');
}

/* Winners, stale counts and lookups of one (device, hash) pair, against the full listing. */
static void check_pair(clnorm_db *db, const clnorm_device_identity *device, uint64_t hash,
                       const clnorm_result *sample) {
  const clnorm_kernel_hashes both = {hash, hash}; /* every op's result of this hash is current */
  clnorm_result *winners = NULL;
  size_t count = 0;
  clnorm_status status = clnorm__db_winners(db, device, &both, &winners, &count, err, sizeof err);
  fuzz_check_err(err, sizeof err, status, "clnorm__db_winners");
  if (status != CLNORM_OK)
    fuzz_fail("winners: %s", err);
  fuzz_check_winners(winners, count, hash, 1);
  const seen flagged = list_all(db, device, &both, 1);
  if (flagged.rows != count)
    fuzz_fail("winners gave %zu results, the listing %zu winners", count, flagged.rows);
  for (size_t i = 0; i < count; i++) {
    clnorm_result got;
    int found = 0;
    status = clnorm__db_get(db, device, &winners[i], &got, &found, err, sizeof err);
    fuzz_check_err(err, sizeof err, status, "clnorm__db_get");
    if (status != CLNORM_OK || !found || !fuzz_same_result(&got, &winners[i]))
      fuzz_fail("get of winners[%zu]: status %d, found %d", i, (int)status, found);
  }
  free(winners);

  clnorm_db_stale stale;
  status = clnorm__db_stale(db, device, &both, &stale, err, sizeof err);
  fuzz_check_err(err, sizeof err, status, "clnorm__db_stale");
  if (status != CLNORM_OK)
    fuzz_fail("stale: %s", err);

  clnorm_result got;
  int found = 0;
  status = clnorm__db_get(db, device, sample, &got, &found, err, sizeof err);
  if (status != CLNORM_OK || !found || !fuzz_same_result(&got, sample))
    fuzz_fail("get of a listed result: status %d, found %d", (int)status, found);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  size_t imported = 99, kept = 99;
  const clnorm_status status =
      clnorm__db_import(db_a, (const char *)data, size, &imported, &kept, err, sizeof err);
  fuzz_check_err(err, sizeof err, status, "clnorm__db_import");
  const seen all = list_all(db_a, NULL, NULL, 0);
  if (status != CLNORM_OK) {
    if (imported != 0 || kept != 0 || all.rows != 0)
      fuzz_fail("a rejected import (%s) stored %zu rows (imported %zu, kept %zu)", err, all.rows,
                imported, kept);
    if (status != CLNORM_E_INVALID_ARG)
      fuzz_fail("import failed with status %d, not invalid-argument: %s", (int)status, err);
    return 0;
  }
  if (all.rows > imported || (imported > 0) != (all.rows > 0))
    fuzz_fail("import: %zu imported, %zu kept, %zu stored", imported, kept, all.rows);
  if (all.rows == 0) { /* devices without results may have been stored */
    clnorm__db_close(db_a);
    db_a = open_empty(path_a);
    return 0;
  }

  for (size_t i = 0; i < all.pairs; i++)
    check_pair(db_a, &all.device[i], all.hash[i], &all.sample[i]);
  const seen winners = list_all(db_a, NULL, NULL, 1);
  if (winners.rows != all.winners)
    fuzz_fail("%zu winners listed alone, %zu flagged in the full listing", winners.rows,
              all.winners);

  /* round trip: what was accepted exports, imports again and exports the same */
  size_t len_a = 0, len_b = 0;
  char *text_a = export_text(db_a, &len_a);
  size_t imported_b = 0, kept_b = 0;
  b_used = 1;
  const clnorm_status again =
      clnorm__db_import(db_b, text_a, len_a, &imported_b, &kept_b, err, sizeof err);
  if (again != CLNORM_OK || imported_b != all.rows || kept_b != 0)
    fuzz_fail("importing the export again: status %d (%s), %zu imported, %zu kept of %zu",
              (int)again, err, imported_b, kept_b, all.rows);
  char *text_b = export_text(db_b, &len_b);
  if (strcmp(after_time(text_a), after_time(text_b)) != 0)
    fuzz_fail("the export changed in a round trip:\n%s\n---\n%s", text_a, text_b);
  free(text_a);
  free(text_b);

  clnorm__db_close(db_a);
  db_a = open_empty(path_a);
  if (b_used) {
    clnorm__db_close(db_b);
    db_b = open_empty(path_b);
    b_used = 0;
  }
  return 0;
}
