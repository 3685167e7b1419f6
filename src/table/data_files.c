/* Partitioned data files of an Iceberg table (see data_files.h).
 *
 * A finished file's PUT (the copy into the store and its fsync) runs on an
 * ls-file-put thread while the rows of the next file are encoded; at most
 * one is in flight. The thread touches only its own bytes, key and data
 * file, and the store; the file joins `files` when the next file finishes,
 * at ls_data_files_finish (which waits for it) or is dropped by
 * ls_data_files_free. So the files handed to a commit are all durable, and
 * a failed PUT fails the batch as before. */
#include "table/data_files.h"

#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "base/alloc.h"
#include "base/thread.h"

typedef struct file_put {
    ls_objstore_t *os;
    char *key;
    ls_buf_t bytes;
    ls_ice_datafile_t df;
    ls_status st;
    pthread_t th;
    bool busy; /* a file is in flight (df, bytes and key are its) */
    bool on_thread;
} file_put_t;

typedef struct files_bucket {
    ls_ice_pval_t key[LS_ICE_MAX_PART];
    ls_pq_writer_t *w;
    ls_buf_t out;
} files_bucket_t;

struct ls_data_files {
    ls_ice_table_t *t;
    const ls_pq_field_t *fields;
    size_t nfields;
    files_bucket_t *cur; /* the bucket of the row being written */
    ls_pq_opts_t opts;
    size_t target;
    const ls_ice_spec_t *spec;
    files_bucket_t **b; /* pointers: writers point at their bucket's buffer */
    size_t nb;
    ls_ice_datafile_t *files;
    size_t nfiles;
    file_put_t put;
    char err[256];
};

static void *put_main(void *arg)
{
    file_put_t *p = arg;
    struct iovec iov = {p->bytes.data, p->bytes.len};
    p->st = ls_objstore_put(p->os, p->key, &iov, 1, LS_OBJSTORE_PUT_CREATE_ONLY);
    return NULL;
}

/* Waits for the file in flight; a stored file joins f->files. */
static ls_status put_join(ls_data_files_t *f)
{
    file_put_t *p = &f->put;
    if (!p->busy) return LS_OK;
    if (p->on_thread) pthread_join(p->th, NULL);
    p->busy = p->on_thread = false;
    ls_status st = p->st;
    if (st == LS_OK) {
        p->df.file_size = (int64_t)p->bytes.len;
        f->files = ls_realloc(f->files, (f->nfiles + 1) * sizeof *f->files);
        f->files[f->nfiles++] = p->df;
    } else {
        snprintf(f->err, sizeof f->err, "put %s: %s", p->key, ls_status_str(st));
        ls_ice_datafile_clear(&p->df);
    }
    memset(&p->df, 0, sizeof p->df);
    ls_free(p->key);
    p->key = NULL;
    ls_buf_free(&p->bytes);
    return st;
}

ls_data_files_t *ls_data_files_new(ls_ice_table_t *t, const ls_pq_field_t *fields, size_t nfields,
                                   const ls_pq_opts_t *opts, size_t target_file_bytes, char *err,
                                   size_t errlen)
{
    const ls_ice_spec_t *spec = ls_ice_table_spec(t);
    (void)err, (void)errlen; /* sources beyond the Kafka columns: the caller's values */
    ls_data_files_t *f = LS_NEW(ls_data_files_t);
    f->t = t;
    f->fields = fields;
    f->nfields = nfields;
    f->spec = spec;
    if (opts)
        f->opts = *opts;
    else
        ls_pq_opts_init(&f->opts);
    f->target = target_file_bytes ? target_file_bytes : (size_t)128 << 20;
    return f;
}

/* Finishes a bucket's file and starts its upload (after the previous
 * one's: put_join). */
static ls_status close_bucket(ls_data_files_t *f, files_bucket_t *b)
{
    if (!b->w) return LS_OK;
    ls_status st = ls_pq_writer_finish(b->w);
    if (st != LS_OK) {
        snprintf(f->err, sizeof f->err, "parquet: %s", ls_pq_error(b->w));
        return st;
    }
    st = put_join(f);
    if (st != LS_OK) return st;
    file_put_t *p = &f->put;
    memset(&p->df, 0, sizeof p->df);
    for (int i = 0; i < f->spec->nfields; i++) /* the file owns its values */
        ls_ice_pval_copy(&p->df.partition[i], &b->key[i]);
    ls_ice_datafile_metrics(&p->df, b->w);
    p->key = ls_ice_table_data_key(f->t, "parquet", &p->df);
    p->os = ls_ice_table_objstore(f->t);
    p->bytes = b->out; /* taken: the bucket's next file starts a new buffer */
    ls_buf_init(&b->out);
    ls_pq_writer_free(b->w);
    b->w = NULL;
    p->busy = true;
    p->on_thread = ls_thread_start(&p->th, "ls-file-put", put_main, p) == 0;
    if (!p->on_thread) put_main(p);
    return LS_OK;
}

static bool kafka_column(int source_id)
{
    return source_id == LS_RAW_FID_PARTITION || source_id == LS_RAW_FID_OFFSET ||
           source_id == LS_RAW_FID_TIMESTAMP;
}

bool ls_data_files_needs_values(const ls_data_files_t *f)
{
    for (int i = 0; i < f->spec->nfields; i++)
        if (!kafka_column(f->spec->fields[i].source_id)) return true;
    return false;
}

ls_pq_writer_t *ls_data_files_writer(ls_data_files_t *f, const ls_raw_record_t *r)
{
    return ls_data_files_writer_sv(f, r, NULL);
}

ls_pq_writer_t *ls_data_files_writer_sv(ls_data_files_t *f, const ls_raw_record_t *r,
                                        const ls_ice_sval_t *src)
{
    ls_ice_pval_t key[LS_ICE_MAX_PART];
    memset(key, 0, sizeof key);
    for (int i = 0; i < f->spec->nfields; i++) {
        const ls_ice_part_field_t *pf = &f->spec->fields[i];
        if (kafka_column(pf->source_id)) {
            int64_t v = pf->source_id == LS_RAW_FID_PARTITION ? r->partition
                        : pf->source_id == LS_RAW_FID_OFFSET  ? r->offset
                                                              : r->timestamp_ms * 1000;
            ls_ice_pval_long(&key[i], ls_ice_field_apply(pf, v));
            if (pf->transform == LS_ICE_VOID) key[i].null = 1, key[i].l = 0;
            continue;
        }
        if (!src) {
            snprintf(f->err, sizeof f->err,
                     "partition field %s: source %d is not a Kafka column and the row has no "
                     "values for it",
                     pf->name, pf->source_id);
            return NULL;
        }
        if (ls_ice_field_apply_sval(pf, &src[i], &key[i]) != LS_OK) { /* borrows src's bytes */
            snprintf(f->err, sizeof f->err, "partition field %s: a value of 4 GiB or more",
                     pf->name);
            return NULL;
        }
    }
    files_bucket_t *b = NULL;
    for (size_t i = 0; i < f->nb && !b; i++)
        if (!ls_ice_pvals_cmp(f->b[i]->key, key, f->spec->nfields)) b = f->b[i];
    if (!b) {
        f->b = ls_realloc(f->b, (f->nb + 1) * sizeof *f->b);
        b = f->b[f->nb++] = LS_NEW(files_bucket_t);
        for (int i = 0; i < f->spec->nfields; i++) /* the bucket owns its key */
            ls_ice_pval_copy(&b->key[i], &key[i]);
    }
    if (!b->w) {
        ls_buf_init(&b->out);
        b->w = ls_pq_writer_new(f->fields, f->nfields, &f->opts, &b->out, f->err, sizeof f->err);
        if (!b->w) return NULL;
    }
    f->cur = b;
    return b->w;
}

ls_status ls_data_files_row_done(ls_data_files_t *f, ls_status st)
{
    files_bucket_t *b = f->cur;
    f->cur = NULL;
    if (st != LS_OK) {
        snprintf(f->err, sizeof f->err, "parquet: %s", ls_pq_error(b->w));
        return st;
    }
    if (b->out.len + ls_pq_buffered_bytes(b->w) >= f->target) return close_bucket(f, b);
    return LS_OK;
}

ls_status ls_data_files_add_raw(ls_data_files_t *f, const ls_raw_record_t *r)
{
    ls_pq_writer_t *w = ls_data_files_writer(f, r);
    return w ? ls_data_files_row_done(f, ls_raw_write(w, r)) : LS_EINVAL;
}

ls_status ls_data_files_finish(ls_data_files_t *f, const ls_ice_datafile_t **files, size_t *n)
{
    for (size_t i = 0; i < f->nb; i++) {
        ls_status st = close_bucket(f, f->b[i]);
        if (st != LS_OK) return st;
    }
    ls_status st = put_join(f);
    if (st != LS_OK) return st;
    *files = f->files;
    *n = f->nfiles;
    return LS_OK;
}

const char *ls_data_files_error(const ls_data_files_t *f) { return f->err; }

void ls_data_files_free(ls_data_files_t *f)
{
    if (!f) return;
    put_join(f); /* a file in flight is an orphan now, like a failed commit's */
    for (size_t i = 0; i < f->nb; i++) {
        ls_pq_writer_free(f->b[i]->w);
        ls_buf_free(&f->b[i]->out);
        for (int k = 0; k < LS_ICE_MAX_PART; k++)
            ls_ice_pval_clear(&f->b[i]->key[k]);
        ls_free(f->b[i]);
    }
    ls_free(f->b);
    for (size_t i = 0; i < f->nfiles; i++)
        ls_ice_datafile_clear(&f->files[i]);
    ls_free(f->files);
    ls_free(f);
}
