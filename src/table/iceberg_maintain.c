#include "table/iceberg_table_int.h"

/* The index of path in rm, or -1. */
static ssize_t removal_find(const removal_t *rm, const char *path)
{
    for (size_t i = 0; i < rm->n; i++)
        if (!strcmp(rm->paths[i], path)) return (ssize_t)i;
    return -1;
}

/* Format version 3: the record of a data manifest without a first row id
 * gets the next ones, as many as its files without one hold (spec "First
 * Row ID Assignment"); delete manifests get none. */
static void assign_row_ids(mlist_build_t *mb, ls_ice_mfile_t *m, const ls_ice_mentry_t *e, size_t n)
{
    if (mb->fv < 3 || m->content != LS_ICE_CONTENT_DATA) return;
    m->has_first_row_id = true;
    m->first_row_id = mb->next_row_id;
    for (size_t k = 0; k < n; k++)
        if (!e[k].df.has_first_row_id) mb->next_row_id += e[k].df.record_count;
}

static void mlist_add(mlist_build_t *mb, ls_ice_table_t *t, ls_ice_mfile_t *m,
                      const ls_ice_mentry_t *e, size_t n)
{
    assign_row_ids(mb, m, e, n);
    ls_ice_mlist_add(mb->w, mb->fv, m, &t->spec, e, n);
}

/* A parent's list record copied as it is; in v3 a data manifest written
 * before the table's first v3 snapshot gets its first row id now, covering
 * all its rows (the spec's "simple and valid approach"). */
static void mlist_copy(mlist_build_t *mb, const ls_av_t *r)
{
    int64_t first = -1;
    if (mb->fv >= 3 && ls_ice_av_long(r, "content", NULL, 0) == LS_ICE_CONTENT_DATA) {
        first = ls_ice_av_long(r, "first_row_id", NULL, -1);
        if (first < 0) {
            first = mb->next_row_id;
            mb->next_row_id += ls_ice_av_long(r, "added_rows_count", NULL, 0) +
                               ls_ice_av_long(r, "existing_rows_count", NULL, 0);
        }
    }
    ls_ice_mlist_copy(mb->w, mb->fv, r, first);
}

/* First row id inheritance (spec "First Row ID Inheritance"): the data
 * files of the manifest the list record r names that have no first row id
 * get the manifest's plus the rows of such files before them, so they keep
 * it when written into another manifest. Nothing when r has none. */
static void inherit_row_ids(const ls_av_t *r, ls_ice_mentry_t *e, size_t ne)
{
    int64_t next = ls_ice_av_long(r, "first_row_id", NULL, -1);
    if (next < 0 || ls_ice_av_long(r, "content", NULL, 0) != LS_ICE_CONTENT_DATA) return;
    for (size_t k = 0; k < ne; k++)
        if (!e[k].df.has_first_row_id) {
            e[k].df.has_first_row_id = true;
            e[k].df.first_row_id = next;
            next += e[k].df.record_count;
        }
}

/* Entries of a parent manifest with their inherited snapshot id and
 * sequence numbers made explicit (spec "Sequence Number Inheritance"), so
 * they keep them when written into a manifest of a later snapshot. */
static void make_explicit(ls_ice_mentry_t *e, int64_t msnap, int64_t mseq)
{
    if (e->snapshot_id < 0) e->snapshot_id = msnap;
    if (e->seq < 0) e->seq = mseq;
    if (e->file_seq < 0) e->file_seq = mseq;
}

/* Moves the live (ADDED, EXISTING) entries of e[0..ne), decoded from the
 * manifest the list record r names, to the end of *all (n entries, cap
 * slots), their snapshot ids and sequence numbers made explicit; frees the
 * DELETED ones and e. */
void ls_ice_take_live(const ls_av_t *r, ls_ice_mentry_t *e, size_t ne, ls_ice_mentry_t **all,
                      size_t *n, size_t *cap)
{
    int64_t mseq = ls_ice_av_long(r, "sequence_number", NULL, 0);
    int64_t msnap = ls_ice_av_long(r, "added_snapshot_id", NULL, 0);
    for (size_t k = 0; k < ne; k++) {
        if (e[k].status == LS_ICE_DELETED) {
            ls_ice_datafile_clear(&e[k].df);
            continue;
        }
        if (*n == *cap) {
            *cap = *cap ? *cap * 2 : 64;
            *all = ls_realloc(*all, *cap * sizeof **all);
        }
        (*all)[*n] = e[k]; /* takes the data file */
        make_explicit(&(*all)[(*n)++], msnap, mseq);
    }
    ls_free(e);
}

/* A rewrite: the parent list record r names a manifest of entries e[0..ne)
 * (decoded). When it holds a live file rm removes, writes it again with
 * those entries DELETED (by this snapshot) and the others EXISTING, adds
 * that to the list and returns 1; 0 when it holds none (the caller copies
 * the record as it is). Entries DELETED before are dropped. */
static int rewrite_manifest(ls_ice_table_t *t, mlist_build_t *mb, const ls_av_t *r,
                            ls_ice_mentry_t *e, size_t ne, ls_status *st)
{
    bool hit = false;
    for (size_t k = 0; k < ne && !hit; k++)
        hit = e[k].status != LS_ICE_DELETED && removal_find(mb->rm, e[k].df.path) >= 0;
    if (!hit) return 0;
    int64_t mseq = ls_ice_av_long(r, "sequence_number", NULL, 0);
    int64_t msnap = ls_ice_av_long(r, "added_snapshot_id", NULL, 0);
    ls_ice_mentry_t *out = LS_NEWN(ls_ice_mentry_t, ne);
    size_t n = 0;
    ls_ice_mfile_t m = {.spec_id = t->spec.spec_id,
                        .content = ne ? e[0].df.content : LS_ICE_CONTENT_DATA,
                        .seq = mb->seq,
                        .added_snapshot_id = mb->snap_id};
    int64_t min_seq = INT64_MAX;
    for (size_t k = 0; k < ne; k++) {
        if (e[k].status == LS_ICE_DELETED) continue;
        ls_ice_mentry_t *o = &out[n++];
        *o = e[k]; /* a shallow copy: e keeps the data file */
        make_explicit(o, msnap, mseq);
        ssize_t i = removal_find(mb->rm, o->df.path);
        if (i >= 0) {
            o->status = LS_ICE_DELETED;
            o->snapshot_id = mb->snap_id;
            mb->rm->found[i] = true;
            if (o->df.content == LS_ICE_CONTENT_DATA) {
                mb->rm->rows += o->df.record_count;
                mb->rm->bytes += o->df.file_size;
            } else {
                mb->rm->del_files++;
                mb->rm->del_rows += o->df.record_count;
                mb->rm->del_bytes += o->df.file_size;
            }
            m.deleted_files++;
            m.deleted_rows += o->df.record_count;
        } else {
            o->status = LS_ICE_EXISTING;
            m.existing_files++;
            m.existing_rows += o->df.record_count;
        }
        if (o->seq < min_seq) min_seq = o->seq;
    }
    char *path = NULL;
    *st = ls_ice_put_manifest(t, out, n, &path, &m.length);
    if (*st == LS_OK) {
        m.path = path;
        m.min_seq = min_seq == INT64_MAX ? mb->seq : min_seq;
        mlist_add(mb, t, &m, out, n);
        mb->replaced++;
        mb->created++;
    }
    ls_free(path);
    ls_free(out);
    return 1;
}

/* Reads the manifest a list record r names into e[0..*ne), with raw as
 * scratch. LS_EINVAL (reason in t->err) for one this writer cannot read back
 * (equality deletes among them): its files cannot be accounted for. */
ls_status ls_ice_read_manifest(ls_ice_table_t *t, const ls_av_t *r, ls_buf_t *raw,
                               ls_ice_mentry_t **e, size_t *ne)
{
    const char *path = ls_ice_av_str(r, "manifest_path");
    int64_t content = ls_ice_av_long(r, "content", NULL, 0);
    if (!path || (content != LS_ICE_CONTENT_DATA && content != LS_ICE_CONTENT_POSITION_DELETES)) {
        snprintf(t->err, sizeof t->err, "the table has equality delete files");
        return LS_EINVAL;
    }
    ls_status st = ls_ice_table_get_file(t, path, raw);
    if (st == LS_OK)
        st = ls_ice_manifest_decode(raw->data, raw->len, &t->spec, e, ne, t->err, sizeof t->err);
    if (st == LS_OK) inherit_row_ids(r, *e, *ne);
    return st;
}

/* A rewrite carries the parent's manifests: those holding a removed file
 * are written again (rewrite_manifest), the others copied; no merging. A
 * manifest this writer cannot read back makes the rewrite fail
 * (LS_EINVAL): its files cannot be checked. */
static ls_status carry_for_rewrite(ls_ice_table_t *t, mlist_build_t *mb, const ls_ocf_file_t *f)
{
    ls_status st = LS_OK;
    ls_buf_t raw;
    ls_buf_init(&raw);
    for (size_t i = 0; i < f->nrecords && st == LS_OK; i++) {
        const ls_av_t *r = &f->records[i];
        ls_ice_mentry_t *e;
        size_t ne;
        if ((st = ls_ice_read_manifest(t, r, &raw, &e, &ne)) != LS_OK) break;
        if (!rewrite_manifest(t, mb, r, e, ne, &st)) mlist_copy(mb, r);
        ls_ice_mentries_free(e, ne);
    }
    ls_buf_free(&raw);
    return st;
}

/* Merges the parent list records idx[0..n) into one manifest added to the
 * list; inputs this writer cannot read back are copied instead. */
static ls_status merge_bin(ls_ice_table_t *t, mlist_build_t *mb, const ls_ocf_file_t *f,
                           const size_t *idx, size_t n)
{
    ls_ice_mentry_t *all = NULL;
    size_t nall = 0, cap = 0;
    int64_t min_seq = INT64_MAX, rows = 0;
    ls_status st = LS_OK;
    ls_buf_t raw;
    ls_buf_init(&raw);
    for (size_t i = 0; i < n && st == LS_OK; i++) {
        const ls_av_t *r = &f->records[idx[i]];
        const char *path = ls_ice_av_str(r, "manifest_path");
        st = path ? ls_ice_table_get_file(t, path, &raw) : LS_ECORRUPT;
        if (st != LS_OK) break;
        ls_ice_mentry_t *e;
        size_t ne;
        char derr[200];
        if (ls_ice_manifest_decode(raw.data, raw.len, &t->spec, &e, &ne, derr, sizeof derr) !=
            LS_OK) {
            mlist_copy(mb, r); /* not ours to rewrite: keep it as it is */
            continue;
        }
        inherit_row_ids(r, e, ne);
        size_t from = nall;
        ls_ice_take_live(r, e, ne, &all, &nall, &cap);
        for (size_t k = from; k < nall; k++) {
            all[k].status = LS_ICE_EXISTING;
            if (all[k].seq < min_seq) min_seq = all[k].seq;
            rows += all[k].df.record_count;
        }
        mb->replaced++;
    }
    ls_buf_free(&raw);
    if (st == LS_OK && nall) {
        char *path = NULL;
        int64_t len = 0;
        st = ls_ice_put_manifest(t, all, nall, &path, &len);
        if (st == LS_OK) {
            ls_ice_mfile_t m = {.path = path,
                                .length = len,
                                .spec_id = t->spec.spec_id,
                                .content = all[0].df.content,
                                .seq = mb->seq,
                                .min_seq = min_seq,
                                .added_snapshot_id = mb->snap_id,
                                .existing_files = (int64_t)nall,
                                .existing_rows = rows};
            mlist_add(mb, t, &m, all, nall);
            mb->created++;
        }
        ls_free(path);
    }
    ls_ice_mentries_free(all, nall);
    return st;
}

/* The parent's manifests into the new list, merged when due: data
 * manifests with data manifests, delete manifests with delete manifests
 * (a manifest holds one kind; merging also drops the DELETED entries a
 * maintenance rewrite left, so a delete manifest whose files all went
 * leaves the list). */
static ls_status carry_manifests(ls_ice_table_t *t, mlist_build_t *mb, const ls_ocf_file_t *f,
                                 size_t added)
{
    size_t total = f->nrecords + added;
    bool due = ls_ice_prop_bool(t, "commit.manifest-merge.enabled", true) &&
               total >= (size_t)ls_ice_prop_long(t, "commit.manifest.min-count-to-merge", 100);
    int64_t target = ls_ice_prop_long(t, "commit.manifest.target-size-bytes", 8 << 20);
    bool *merged = LS_NEWN(bool, f->nrecords ? f->nrecords : 1);
    size_t *bin = LS_NEWN(size_t, f->nrecords ? f->nrecords : 1);
    size_t inputs = 0;
    ls_status st = LS_OK;
    for (int content = 0; content < 2 && st == LS_OK; content++) {
        size_t nbin = 0;
        int64_t bin_bytes = 0;
        for (size_t i = 0; due && i < f->nrecords && inputs < MERGE_MAX_INPUTS; i++) {
            const ls_av_t *r = &f->records[i];
            int64_t len = ls_ice_av_long(r, "manifest_length", NULL, 0);
            if (ls_ice_av_long(r, "content", NULL, 0) != content ||
                ls_ice_av_long(r, "partition_spec_id", NULL, -1) != t->spec.spec_id ||
                len >= target)
                continue;
            merged[i] = true;
            bin[nbin++] = i;
            inputs++;
            bin_bytes += len;
            if (bin_bytes >= target) {
                st = merge_bin(t, mb, f, bin, nbin);
                nbin = 0;
                bin_bytes = 0;
                if (st != LS_OK) break;
            }
        }
        if (st == LS_OK && nbin > 1) {
            st = merge_bin(t, mb, f, bin, nbin);
        } else if (nbin == 1) {
            merged[bin[0]] = false; /* a bin of one is left as it is */
        }
    }
    for (size_t i = 0; st == LS_OK && i < f->nrecords; i++)
        if (!merged[i]) mlist_copy(mb, &f->records[i]);
    ls_free(merged);
    ls_free(bin);
    return st;
}

ls_status ls_ice_write_manifest_list(ls_ice_table_t *t, json_t *parent, mlist_build_t *mb,
                                     const ls_ice_newman_t *nm, size_t nnm, char **path_out)
{
    int64_t pid = parent ? (int64_t)json_integer_value(json_object_get(parent, "snapshot-id")) : 0;
    mb->w = ls_ice_mlist_new(mb->fv, mb->snap_id, parent ? &pid : NULL, mb->seq, mb->next_row_id);
    /* the new manifests first (none for an append of no files) */
    for (size_t i = 0; i < nnm; i++) {
        int64_t rows = 0;
        for (size_t k = 0; k < nm[i].n; k++)
            rows += nm[i].e[k].df.record_count;
        ls_ice_mfile_t m = {.path = nm[i].path,
                            .length = nm[i].len,
                            .spec_id = t->spec.spec_id,
                            .content = nm[i].e[0].df.content,
                            .seq = mb->seq,
                            .min_seq = mb->seq,
                            .added_snapshot_id = mb->snap_id,
                            .added_files = (int64_t)nm[i].n,
                            .added_rows = rows};
        mlist_add(mb, t, &m, nm[i].e, nm[i].n);
    }
    /* then every manifest of the parent snapshot, merged when due */
    ls_status st = LS_OK;
    const char *plist = parent ? json_string_value(json_object_get(parent, "manifest-list")) : NULL;
    if (plist) {
        ls_buf_t raw;
        ls_buf_init(&raw);
        st = ls_ice_table_get_file(t, plist, &raw);
        ls_ocf_file_t f;
        if (st == LS_OK &&
            (st = ls_ocf_file_read(raw.data, raw.len, &f, t->err, sizeof t->err)) == LS_OK) {
            st = mb->rm ? carry_for_rewrite(t, mb, &f) : carry_manifests(t, mb, &f, nnm);
            ls_ocf_file_free(&f);
            if (st == LS_OK && mb->replaced) ls_crashpoint("table.manifests_merged");
        }
        ls_buf_free(&raw);
    }
    ls_buf_t out;
    ls_buf_init(&out);
    if (st == LS_OK) st = ls_ocf_finish(mb->w, &out);
    ls_ocf_free(mb->w);
    mb->w = NULL;
    if (st == LS_OK) {
        char *u = ls_ice_new_uuid();
        char *rel = ls_asprintf("metadata/snap-%lld-1-%s.avro", (long long)mb->snap_id, u);
        ls_free(u);
        char *key = ls_ice_key_of(t, rel);
        st = ls_ice_put_bytes(t, key, out.data, out.len, LS_OBJSTORE_PUT_CREATE_ONLY);
        if (st == LS_OK) *path_out = ls_asprintf("%s/%s", t->location, rel);
        ls_free(key);
        ls_free(rel);
    }
    ls_buf_free(&out);
    return st;
}

int64_t ls_ice_summary_long(json_t *summary, const char *key)
{
    const char *s = json_string_value(json_object_get(summary, key));
    return s ? strtoll(s, NULL, 10) : 0;
}

static bool ref_names(json_t *refs, json_int_t id)
{
    const char *k;
    json_t *v;
    json_object_foreach(refs, k, v) if (json_integer_value(json_object_get(v, "snapshot-id")) ==
                                        id) return true;
    return false;
}

/* The pending list of metadata meta (a new array when there is none). */
json_t *ls_ice_pending_of(json_t *meta)
{
    const char *v =
        json_string_value(json_object_get(json_object_get(meta, "properties"), PENDING_KEY));
    json_t *p = v ? json_loads(v, 0, NULL) : NULL;
    if (json_is_array(p)) return p;
    json_decref(p);
    return json_array();
}

void ls_ice_expire_plan(ls_ice_table_t *t, json_t *next, int64_t now_ms, expiry_t *x)
{
    memset(x, 0, sizeof *x);
    x->due = json_array();
    json_t *pending = ls_ice_pending_of(next);
    json_t *snaps = json_object_get(next, "snapshots");
    json_t *refs = json_object_get(next, "refs");
    json_int_t cur = json_integer_value(json_object_get(next, "current-snapshot-id"));
    size_t keep = t->snapshot_min_keep > 1 ? (size_t)t->snapshot_min_keep : 1;
    json_t *gone = json_object(); /* expired ids, as decimal keys */
    while (t->snapshot_retention_ms > 0 && json_array_size(snaps) > keep &&
           x->expired < EXPIRE_MAX_PER_COMMIT) {
        json_t *s = json_array_get(snaps, 0);
        json_int_t id = json_integer_value(json_object_get(s, "snapshot-id"));
        if (id == cur || ref_names(refs, id) ||
            json_integer_value(json_object_get(s, "timestamp-ms")) >=
                now_ms - t->snapshot_retention_ms)
            break;
        json_t *sum = json_object_get(s, "summary");
        json_t *e = json_pack("{s:I, s:I, s:b}", "at", (json_int_t)now_ms, "snapshot-id", id,
                              "removed-files",
                              ls_ice_summary_long(sum, "deleted-data-files") > 0 ||
                                  ls_ice_summary_long(sum, "removed-delete-files") > 0);
        json_t *list = json_object_get(s, "manifest-list");
        if (json_is_string(list)) json_object_set(e, "manifest-list", list);
        json_array_append_new(pending, e);
        char key[32];
        snprintf(key, sizeof key, "%lld", (long long)id);
        json_object_set_new(gone, key, json_true());
        x->expired++;
        json_array_remove(snaps, 0);
    }
    if (x->expired) {
        json_t *log = json_object_get(next, "snapshot-log"), *kept = json_array(), *e;
        size_t i;
        json_array_foreach(log, i, e)
        {
            char key[32];
            snprintf(key, sizeof key, "%lld",
                     (long long)json_integer_value(json_object_get(e, "snapshot-id")));
            if (!json_object_get(gone, key)) json_array_append(kept, e);
        }
        json_object_set_new(next, "snapshot-log", kept);
    }
    json_decref(gone);
    json_t *mlog = json_object_get(next, "metadata-log");
    size_t max = (size_t)ls_ice_prop_long(t, "write.metadata.previous-versions-max", 100);
    if (max < 1) max = 1;
    bool delete_old = ls_ice_prop_bool(t, "write.metadata.delete-after-commit.enabled", false);
    while (json_array_size(mlog) > max) {
        const char *m =
            json_string_value(json_object_get(json_array_get(mlog, 0), "metadata-file"));
        /* current until its successor was written: the next entry's time */
        json_t *succ = json_object_get(json_array_get(mlog, 1), "timestamp-ms");
        if (delete_old && m)
            json_array_append_new(pending, json_pack("{s:O, s:s}", "at", succ, "metadata-file", m));
        json_array_remove(mlog, 0);
        x->trimmed++;
    }
    /* entries whose grace is over leave the list (due); the rest stay */
    json_t *rest = json_array(), *e;
    size_t i;
    json_array_foreach(pending, i, e)
    {
        bool is_due =
            (int64_t)json_integer_value(json_object_get(e, "at")) + t->file_grace_ms <= now_ms;
        json_array_append(is_due ? x->due : rest, e);
        bool snap = json_object_get(e, "snapshot-id") != NULL;
        if (is_due && snap) x->due_snapshots = true;
        const char *l = json_string_value(json_object_get(e, "manifest-list"));
        if (!is_due && snap && !x->keep_list && l) x->keep_list = ls_strdup(l);
    }
    if (!x->keep_list) {
        const char *l =
            json_string_value(json_object_get(json_array_get(snaps, 0), "manifest-list"));
        if (l) x->keep_list = ls_strdup(l);
    }
    json_t *props = json_object_get(next, "properties");
    if (!props) json_object_set_new(next, "properties", props = json_object());
    if (json_array_size(rest)) {
        char *text = json_dumps(rest, JSON_COMPACT);
        json_object_set_new(props, PENDING_KEY, json_string(text));
        free(text);
    } else {
        json_object_del(props, PENDING_KEY);
    }
    json_decref(rest);
    json_decref(pending);
}

void ls_ice_expiry_clear(expiry_t *x)
{
    json_decref(x->due);
    ls_free(x->keep_list);
}

/* Adds the manifest paths of the list at loc to set (keys: locations). */
ls_status ls_ice_list_manifests(ls_ice_table_t *t, const char *loc, json_t *set)
{
    ls_buf_t raw;
    ls_buf_init(&raw);
    ls_status st = ls_ice_table_get_file(t, loc, &raw);
    ls_ocf_file_t f;
    if (st == LS_OK &&
        (st = ls_ocf_file_read(raw.data, raw.len, &f, t->err, sizeof t->err)) == LS_OK) {
        for (size_t i = 0; i < f.nrecords; i++) {
            const char *p = ls_ice_av_str(&f.records[i], "manifest_path");
            if (p)
                json_object_set_new(
                    set, p,
                    json_integer(ls_ice_av_long(&f.records[i], "added_snapshot_id", NULL, -1)));
        }
        ls_ocf_file_free(&f);
    }
    ls_buf_free(&raw);
    return st;
}

/* A manifest entry that keeps its data file: live (ADDED, EXISTING), or
 * DELETED by a snapshot still retained (its changes, read incrementally,
 * include the file's rows). Once the deleting snapshot has expired, every
 * retained snapshot is newer (expiry takes the oldest first) and none has
 * the file live, though the entry may stay in a manifest until the next
 * merge rewrites it. A DELETED entry without a snapshot id inherits the
 * manifest's added_snapshot_id (spec: "Snapshot ID inheritance"). */
static int64_t entry_deleted_by(const ls_av_t *rec, int64_t manifest_snapshot)
{
    if (ls_ice_av_long(rec, "status", NULL, -1) != LS_ICE_DELETED) return -1;
    const ls_av_t *sid = ls_av_field(rec, "snapshot_id");
    return sid && sid->kind == LS_AV_LONG ? sid->l : manifest_snapshot;
}

bool ls_ice_entry_keeps_file(const ls_av_t *rec, int64_t manifest_snapshot, json_t *retained)
{
    int64_t by = entry_deleted_by(rec, manifest_snapshot);
    if (by < 0) return true;
    char key[32];
    snprintf(key, sizeof key, "%lld", (long long)by);
    return json_object_get(retained, key) != NULL;
}

/* The v<N> copy of a committed metadata file ("<N %05d>-<uuid>..." or
 * "v<N>..." under metadata/), or NULL. */
char *ls_ice_published_copy(const char *loc)
{
    const char *base = strrchr(loc, '/');
    if (!base) return NULL;
    base++;
    char *end;
    long v = strtol(base[0] == 'v' ? base + 1 : base, &end, 10);
    if (v < 1 || (base[0] != 'v' && *end != '-')) return NULL;
    return ls_asprintf("%.*s/v%ld.metadata.json", (int)(base - 1 - loc), loc, v);
}

/* Deletes the data files snapshot id removed: the entries DELETED by it in
 * the manifests it wrote (those its list names with its id as adder). */
static void delete_removed_files(ls_ice_table_t *t, const char *list, int64_t id)
{
    json_t *mans = json_object();
    if (ls_ice_list_manifests(t, list, mans) == LS_OK) {
        const char *k;
        json_t *v;
        ls_buf_t raw;
        ls_buf_init(&raw);
        json_object_foreach(mans, k, v)
        {
            ls_ocf_file_t f;
            if (json_integer_value(v) != id || ls_ice_table_get_file(t, k, &raw) != LS_OK ||
                ls_ocf_file_read(raw.data, raw.len, &f, t->err, sizeof t->err) != LS_OK)
                continue; /* unreadable: its files stay (orphans, not losses) */
            for (size_t r = 0; r < f.nrecords; r++) {
                const ls_av_t *d = ls_av_field(&f.records[r], "data_file");
                const char *p = d ? ls_ice_av_str(d, "file_path") : NULL;
                if (p && entry_deleted_by(&f.records[r], id) == id) ls_ice_delete_location(t, p);
            }
            ls_ocf_file_free(&f);
        }
        ls_buf_free(&raw);
    }
    json_decref(mans);
}

void ls_ice_expire_done(ls_ice_table_t *t, const expiry_t *x)
{
    json_t *e;
    size_t i;
    if (x->expired || json_array_size(x->due)) ls_crashpoint("table.expiry_committed");
    if (x->due_snapshots) {
        json_t *gone = json_object(), *live = json_object();
        bool ok = x->keep_list && ls_ice_list_manifests(t, x->keep_list, live) == LS_OK;
        json_array_foreach(x->due, i, e)
        {
            const char *l = json_string_value(json_object_get(e, "manifest-list"));
            if (!l) continue;
            if (ls_ice_list_manifests(t, l, gone) != LS_OK) ok = false;
            if (json_is_true(json_object_get(e, "removed-files")))
                delete_removed_files(
                    t, l, (int64_t)json_integer_value(json_object_get(e, "snapshot-id")));
        }
        const char *k;
        json_t *v;
        if (ok) /* an unreadable list: keep every manifest (orphans, not losses) */
            json_object_foreach(gone, k, v) if (!json_object_get(live, k))
                ls_ice_delete_location(t, k);
        json_decref(gone);
        json_decref(live);
    }
    json_array_foreach(x->due, i, e)
    {
        const char *l = json_string_value(json_object_get(e, "manifest-list"));
        if (l) ls_ice_delete_location(t, l);
        const char *m = json_string_value(json_object_get(e, "metadata-file"));
        if (!m) continue;
        char *copy = ls_ice_published_copy(m);
        ls_ice_delete_location(t, m);
        if (copy && strcmp(copy, m)) ls_ice_delete_location(t, copy);
        ls_free(copy);
    }
    t->maint.snapshots_expired += x->expired;
}

void ls_ice_table_set_file_grace(ls_ice_table_t *t, int64_t grace_ms)
{
    t->file_grace_ms = grace_ms > 0 ? grace_ms : 0;
}

void ls_ice_table_set_snapshot_retention(ls_ice_table_t *t, int64_t retention_ms, int min_keep)
{
    t->snapshot_retention_ms = retention_ms;
    t->snapshot_min_keep = min_keep > 1 ? min_keep : 1;
}

void ls_ice_table_maint_stats(const ls_ice_table_t *t, ls_ice_maint_stats_t *out)
{
    *out = t->maint;
}
