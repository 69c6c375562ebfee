/* normtune's device session (the OpenCL context and queues, the clnorm context, the device's
 * identity), the tuning database it writes, and the buffers of one shape on the device. */
#define _POSIX_C_SOURCE 200809L
#include "normtune.h"

void db_path(const options *o, char *buf, size_t size) {
  char err[512];
  if (o->db) {
    snprintf(buf, size, "%s", o->db);
    return;
  }
  if (clnorm__db_default_path(buf, size, err, sizeof err) != CLNORM_OK)
    die(1, "%s (give --db PATH)", err);
}

clnorm_db *open_db_read(const options *o, const char *hint, char path[DB_PATH_MAX]) {
  char own[DB_PATH_MAX], err[1024];
  path = path ? path : own;
  db_path(o, path, DB_PATH_MAX);
  clnorm_db *db = NULL;
  if (clnorm__db_open(path, CLNORM_DB_READ, &db, err, sizeof err) != CLNORM_OK)
    die(1, "%s%s", err, hint);
  return db;
}

clnorm_db *open_db_write(const char *path) {
  char err[1024], moved[4200];
  clnorm_db *db = NULL;
  if (clnorm__db_open(path, CLNORM_DB_WRITE, &db, err, sizeof err) == CLNORM_OK)
    return db;
  fprintf(stderr, "normtune: %s\n", err);
  if (clnorm__db_repair(path, moved, sizeof moved, err, sizeof err) != CLNORM_OK)
    die(1, "cannot repair the database: %s", err);
  if (moved[0])
    fprintf(stderr, "normtune: moved the bad file to %s and created a fresh database\n", moved);
  if (clnorm__db_open(path, CLNORM_DB_WRITE, &db, err, sizeof err) != CLNORM_OK)
    die(1, "%s", err);
  return db;
}

void session_open(const options *o, session *s) {
  char err[1024];
  memset(s, 0, sizeof *s);
  if (!tool_pick_device(o->device, &s->dev, err, sizeof err))
    die(1, "%s", err);
  if (!tool_open(&s->dev, &s->context, &s->queue, err, sizeof err))
    die(1, "%s", err);
  clnorm_status st = clnorm_ctx_create(s->context, s->dev.device, &s->ctx);
  if (st != CLNORM_OK)
    die(1, "clnorm_ctx_create: %s: %s", clnorm_status_string(st), clnorm_ctx_errmsg(NULL));
  if (clnorm__device_identity(s->dev.device, &s->identity, err, sizeof err) != CLNORM_OK)
    die(1, "%s", err);
  s->hashes = clnorm__kernel_hashes();
  clGetDeviceInfo(s->dev.device, CL_DEVICE_MAX_MEM_ALLOC_SIZE, sizeof s->max_alloc, &s->max_alloc,
                  NULL);
  clGetDeviceInfo(s->dev.device, CL_DEVICE_GLOBAL_MEM_SIZE, sizeof s->global_mem, &s->global_mem,
                  NULL);
  clGetDeviceInfo(s->dev.device, CL_DEVICE_GLOBAL_MEM_CACHE_SIZE, sizeof s->cache, &s->cache, NULL);
}

void session_close(session *s) {
  clnorm_ctx_destroy(s->ctx);
  if (s->plain)
    clReleaseCommandQueue(s->plain);
  clReleaseCommandQueue(s->queue);
  clReleaseContext(s->context);
}

clnorm_call call_of(const shape *sh, const operands *o) {
  clnorm_call c;
  memset(&c, 0, sizeof c);
  c.op = sh->op;
  c.dtype = sh->dtype;
  c.rows = o->rows;
  c.cols = sh->cols;
  c.eps = clnorm__op_backward(sh->op) ? 0.0f : 1e-5f;
  c.x.buf = o->mat[MAT_X];
  c.y.buf = o->mat[MAT_Y];
  c.residual.buf = o->mat[MAT_RES];
  c.sum_out.buf = o->mat[MAT_SUM];
  c.dy.buf = o->mat[MAT_DY];
  c.gamma = sh->gamma;
  c.beta = has_beta(sh->op) ? sh->beta : NULL;
  c.mean = o->mean;
  c.rstd = o->rstd;
  c.dgamma = o->dgamma;
  c.dbeta = o->dbeta;
  return c;
}

clnorm_call shape_call(const shape *sh, size_t set) { return call_of(sh, &sh->tset[set]); }

cl_mem make_buffer(session *s, size_t bytes, const void *host) {
  cl_int e;
  cl_mem m = clCreateBuffer(s->context, host ? CL_MEM_COPY_HOST_PTR : CL_MEM_READ_WRITE, bytes,
                            (void *)host, &e);
  return e == CL_SUCCESS ? m : NULL;
}

/* A buffer holding v[0..n) stored as dtype. */
static cl_mem upload(session *s, clnorm_dtype dtype, const float *v, size_t n) {
  if (dtype == CLNORM_F32)
    return make_buffer(s, n * sizeof(float), v);
  void *packed = malloc(n * 2);
  if (!packed)
    return NULL;
  clnorm_ref_pack(dtype, v, n, packed);
  cl_mem m = make_buffer(s, n * 2, packed);
  free(packed);
  return m;
}

void release(cl_mem m) {
  if (m)
    clReleaseMemObject(m);
}

static void operands_free(operands *o, int vectors) {
  for (int m = 0; m < MATS; m++)
    release(o->mat[m]);
  if (vectors) {
    release(o->mean);
    release(o->rstd);
    release(o->dgamma);
    release(o->dbeta);
  }
  memset(o, 0, sizeof *o);
}

/* Releases every buffer and the host data of sh; its size and sets' rows stay (shape_plan's),
 * loaded 0. */
static void shape_unload(shape *sh) {
  release(sh->gamma);
  release(sh->beta);
  sh->gamma = sh->beta = NULL;
  operands_free(&sh->vset, 1);
  for (size_t i = 0; i < MAX_SETS; i++) {
    operands_free(&sh->tset[i], i == 0); /* the timing sets share set 0's vectors */
    sh->tset[i].rows = i < sh->sets ? sh->rows : 0;
  }
  host_data_free(&sh->vdata);
  sh->loaded = 0;
}

void shape_free(shape *sh) {
  shape_unload(sh);
  memset(sh, 0, sizeof *sh);
}

/* Device bytes of one set of a shape's matrices, and of everything with `sets` sets (vectors,
 * and the backward's scratch for its partial weight-gradient sums: at most 256 MiB). */
static double set_bytes(clnorm_op op, clnorm_dtype dtype, size_t rows, size_t cols) {
  double bytes = 0.0;
  for (int m = 0; m < MATS; m++)
    bytes +=
        uses_matrix(op, m) ? (double)rows * (double)cols * (double)clnorm__dtype_size(dtype) : 0.0;
  return bytes;
}

static double shape_bytes(clnorm_op op, clnorm_dtype dtype, size_t rows, size_t cols, size_t sets) {
  const double scratch =
      clnorm__op_backward(op) ? fmin(256.0 * 1048576.0, 8.0 * (double)rows * (double)cols) : 0.0;
  return (double)sets * set_bytes(op, dtype, rows, cols) + scratch + 6.0 * (double)cols * 4.0 +
         2.0 * (double)rows * 4.0;
}

int shape_fits(const session *s, clnorm_op op, clnorm_dtype dtype, size_t rows, size_t cols,
               char *why, size_t why_size) {
  const double matrix = (double)rows * (double)cols * (double)clnorm__dtype_size(dtype);
  const double budget = (double)s->global_mem * 0.6;
  const double need = shape_bytes(op, dtype, rows, cols, 1);
  const struct {
    double need, limit, device_mib;
    const char *format; /* op, dtype, rows, cols, need and the device's figure in MiB */
  } limits[] = {{matrix, (double)s->max_alloc, (double)s->max_alloc / 1048576.0,
                 "%s %s %zu x %zu: one matrix is %.0f MiB, more than the device allocates at "
                 "once (CL_DEVICE_MAX_MEM_ALLOC_SIZE %.0f MiB)"},
                {need, budget, (double)s->global_mem / 1048576.0,
                 "%s %s %zu x %zu needs %.0f MiB of device buffers, more than 60%% of the "
                 "device's memory (CL_DEVICE_GLOBAL_MEM_SIZE %.0f MiB)"}};
  for (size_t i = 0; i < sizeof limits / sizeof limits[0]; i++)
    if (limits[i].need > limits[i].limit) {
      snprintf(why, why_size, limits[i].format, op_name(op), dtype_name(dtype), rows, cols,
               limits[i].need / 1048576.0, limits[i].device_mib);
      return 0;
    }
  return 1;
}

/* Uploads the inputs of `in` (rows x cols) and makes the outputs of o (its matrices where
 * shape_plan has not made them). Vectors: mean and rstd
 * (outputs, or the backward's inputs), dgamma and dbeta; left NULL with `vectors` 0. */
static int operands_make(session *s, const shape *sh, operands *o, const host_data *in,
                         const void *const packed[MATS], int vectors) {
  const clnorm_op op = sh->op;
  const size_t rows = in->rows, bytes = rows * sh->cols * sh->es;
  const int bwd = clnorm__op_backward(op);
  o->rows = rows;
  for (int m = 0; m < MATS; m++) {
    if (!uses_matrix(op, m))
      continue;
    if (!o->mat[m]) /* else made by shape_plan: the inputs are written into it */
      o->mat[m] = make_buffer(s, bytes, is_input(m) ? packed[m] : NULL);
    else if (is_input(m) && clEnqueueWriteBuffer(s->queue, o->mat[m], CL_TRUE, 0, bytes, packed[m],
                                                 0, NULL, NULL) != CL_SUCCESS)
      return 0;
    if (!o->mat[m])
      return 0;
  }
  if (!vectors)
    return 1;
  if (has_mean(op) && !(o->mean = make_buffer(s, rows * 4, bwd ? in->mean : NULL)))
    return 0;
  if (!(o->rstd = make_buffer(s, rows * 4, bwd ? in->rstd : NULL)))
    return 0;
  if (bwd && !(o->dgamma = make_buffer(s, sh->cols * sh->es, NULL)))
    return 0;
  if (bwd && has_mean(op) && !(o->dbeta = make_buffer(s, sh->cols * sh->es, NULL)))
    return 0;
  return 1;
}

/* The inputs of `in` stored as dtype: packed[m] for x, residual, dy (pointing into `in` for
 * float32; otherwise malloc'ed, freed by packed_free). 0 when out of memory. */
static int packed_make(const shape *sh, const host_data *in, const void *packed[MATS]) {
  const float *const src[MATS] = {in->x, NULL, in->res, NULL, in->dy};
  const size_t n = in->rows * in->cols;
  for (int m = 0; m < MATS; m++)
    packed[m] = NULL;
  for (int m = 0; m < MATS; m++) {
    if (!src[m] || !uses_matrix(sh->op, m))
      continue;
    if (sh->dtype == CLNORM_F32) {
      packed[m] = src[m];
      continue;
    }
    void *p = malloc(n * 2);
    if (!p)
      return 0;
    clnorm_ref_pack(sh->dtype, src[m], n, p);
    packed[m] = p;
  }
  return 1;
}

static void packed_free(const shape *sh, const void *packed[MATS]) {
  if (sh->dtype != CLNORM_F32)
    for (int m = 0; m < MATS; m++)
      free((void *)packed[m]);
}

int shape_plan(session *s, shape *sh, clnorm_op op, clnorm_dtype dtype, size_t rows, size_t cols,
               char *why, size_t why_size) {
  memset(sh, 0, sizeof *sh);
  sh->op = op;
  sh->dtype = dtype;
  sh->rows = rows;
  sh->cols = cols;
  sh->es = clnorm__dtype_size(dtype);
  const double budget = (double)s->global_mem * 0.6;
  if (!shape_fits(s, op, dtype, rows, cols, why, why_size))
    return 0;
  /* Enough sets that one pass over them is at least 4x the last-level cache (64 MiB when the
   * device does not say), within the memory budget. */
  const double cache = s->cache > 0 ? (double)s->cache : 64.0 * 1048576.0;
  size_t sets = (size_t)ceil(4.0 * cache / set_bytes(op, dtype, rows, cols));
  sets = sets < 1 ? 1 : sets > MAX_SETS ? MAX_SETS : sets;
  while (sets > 1 && shape_bytes(op, dtype, rows, cols, sets) > budget)
    sets--;
  sh->sets = sets;
  /* The timing sets' matrices, without data: the planned shape's calls are the loaded one's
   * (what the heuristic sees of a call: its matrices' row starts), at the cost of an allocation. */
  for (size_t i = 0; i < sets; i++) {
    sh->tset[i].rows = rows;
    for (int m = 0; m < MATS; m++)
      if (uses_matrix(op, m) &&
          !(sh->tset[i].mat[m] = make_buffer(s, rows * cols * sh->es, NULL))) {
        shape_free(sh);
        snprintf(why, why_size, "%s %s %zu x %zu: cannot allocate its device buffers", op_name(op),
                 dtype_name(dtype), rows, cols);
        return 0;
      }
  }
  return 1;
}

int shape_init(session *s, shape *sh, clnorm_op op, clnorm_dtype dtype, size_t rows, size_t cols,
               host_data *data, int with_vset, char *why, size_t why_size) {
  return shape_plan(s, sh, op, dtype, rows, cols, why, why_size) &&
         shape_load(s, sh, data, with_vset, why, why_size);
}

int shape_load(session *s, shape *sh, host_data *data, int with_vset, char *why, size_t why_size) {
  const clnorm_op op = sh->op;
  const clnorm_dtype dtype = sh->dtype;
  const size_t rows = sh->rows, cols = sh->cols, sets = sh->sets;
  /* The test hook of tests/tuner/tune_dispatch.sh: no shape is loaded, so that a run that needs
   * one's data says so (a resumed run must read its finished shapes back without). */
  if (getenv("NORMTUNE_TEST_NO_LOAD")) {
    snprintf(why, why_size, "%s %s %zu x %zu: not loaded (NORMTUNE_TEST_NO_LOAD)", op_name(op),
             dtype_name(dtype), rows, cols);
    shape_unload(sh);
    return 0;
  }
  const int bwd = clnorm__op_backward(op), add = clnorm__op_add(op);
  const uint64_t seed = 0x5eed0000u + cols;
  host_data own;
  host_data *in = data;
  const void *packed[MATS] = {NULL, NULL, NULL, NULL, NULL};
  int ok = 1;
  if (!in) {
    ok = host_data_make(&own, dtype, rows, cols, add, bwd, seed, 0, 0);
    in = ok ? &own : NULL;
  }
  ok = ok && (!bwd || host_stats(in, clnorm__op_rms(op)));
  ok = ok && packed_make(sh, in, packed);
  ok = ok && (sh->gamma = upload(s, dtype, in->gamma, cols)) != NULL &&
       (!has_beta(op) || (sh->beta = upload(s, dtype, in->beta, cols)) != NULL);
  for (size_t i = 0; ok && i < sets; i++) {
    ok = operands_make(s, sh, &sh->tset[i], in, packed, i == 0);
    sh->tset[i].mean = sh->tset[0].mean;
    sh->tset[i].rstd = sh->tset[0].rstd;
    sh->tset[i].dgamma = sh->tset[0].dgamma;
    sh->tset[i].dbeta = sh->tset[0].dbeta;
  }
  packed_free(sh, packed);
  /* Write every output matrix once now: the first write to a fresh buffer pays its page faults
   * (CPU devices) or lazy allocation, which would otherwise land in the timed runs of whichever
   * variant is measured first (tune: the heuristic's) as it reaches each timing set. */
  for (size_t i = 0; ok && i < sets; i++)
    ok = poison(s, sh->tset[i].mat[MAT_Y], dtype, rows * cols) == CL_SUCCESS &&
         poison(s, sh->tset[i].mat[MAT_SUM], dtype, rows * cols) == CL_SUCCESS;
  ok = ok && clFinish(s->queue) == CL_SUCCESS;
  if (ok && with_vset) {
    /* the same gamma and beta as the timing sets */
    const size_t vrows = rows < VERIFY_ROWS ? (rows < 3 ? 3 : rows) : VERIFY_ROWS;
    ok = host_data_make(&sh->vdata, dtype, vrows, cols, add, bwd, seed, 1, !bwd);
    if (ok) {
      memcpy(sh->vdata.gamma, in->gamma, cols * sizeof(float));
      memcpy(sh->vdata.beta, in->beta, cols * sizeof(float));
    }
    ok = ok && (!bwd || host_stats(&sh->vdata, clnorm__op_rms(op)));
    if (ok) {
      ok = packed_make(sh, &sh->vdata, packed) &&
           operands_make(s, sh, &sh->vset, &sh->vdata, packed, 1);
      packed_free(sh, packed);
    }
  }
  if (!data && in)
    host_data_free(&own);
  if (!ok) {
    shape_unload(sh);
    snprintf(why, why_size, "%s %s %zu x %zu: cannot allocate its host or device buffers",
             op_name(op), dtype_name(dtype), rows, cols);
    return 0;
  }
  sh->loaded = 1;
  return 1;
}

cl_int poison(session *s, cl_mem buf, clnorm_dtype dtype, size_t n) {
  if (!buf)
    return CL_SUCCESS;
  const float nan32 = NAN;
  const cl_ushort nan16 = dtype == CLNORM_F16 ? 0x7E00u : 0x7FC0u;
  if (dtype == CLNORM_F32)
    return clEnqueueFillBuffer(s->queue, buf, &nan32, sizeof nan32, 0, n * 4, 0, NULL, NULL);
  return clEnqueueFillBuffer(s->queue, buf, &nan16, sizeof nan16, 0, n * 2, 0, NULL, NULL);
}

cl_int read_rows(session *s, cl_mem buf, clnorm_dtype dtype, size_t cols, const size_t *idx,
                 size_t n, float *out) {
  const size_t es = clnorm__dtype_size(dtype), row = cols * es;
  void *tmp = malloc(idx ? row : n * row);
  if (!tmp)
    return CL_OUT_OF_HOST_MEMORY;
  cl_int err = CL_SUCCESS;
  if (!idx) {
    err = clEnqueueReadBuffer(s->queue, buf, CL_TRUE, 0, n * row, tmp, 0, NULL, NULL);
    if (err == CL_SUCCESS)
      clnorm_ref_unpack(dtype, tmp, n * cols, out);
  }
  for (size_t k = 0; idx && k < n && err == CL_SUCCESS; k++) {
    err = clEnqueueReadBuffer(s->queue, buf, CL_TRUE, idx[k] * row, row, tmp, 0, NULL, NULL);
    if (err == CL_SUCCESS)
      clnorm_ref_unpack(dtype, tmp, cols, out + k * cols);
  }
  free(tmp);
  return err;
}

float *gather(const float *m, size_t cols, const size_t *idx, size_t n, int *fail) {
  if (!m)
    return NULL;
  float *out = malloc(n * cols * sizeof(float));
  if (!out) {
    *fail = 1;
    return NULL;
  }
  for (size_t k = 0; k < n; k++)
    memcpy(out + k * cols, m + idx[k] * cols, cols * sizeof(float));
  return out;
}

void session_load_tuning(const options *o, session *s, const char *doing) {
  char path[4096];
  db_path(o, path, sizeof path);
  if (clnorm_ctx_load_tuning(s->ctx, path) != CLNORM_OK) {
    /* without the clear, a --db that cannot be read would leave the default database's winners */
    clnorm__tuning_clear(s->ctx);
    fprintf(stderr, "normtune: %s: %s without tuned results\n", clnorm_ctx_errmsg(s->ctx), doing);
  }
}
