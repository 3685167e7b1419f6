/* Materialization policy: field table, validation, resolution.
 *
 * One table (fields[]) declares every field: key, built-in default, accepted
 * values (the text error messages and the CLI show), documentation and a
 * parser that validates a value (and fills the typed member of ls_policy_t).
 * A parser accepts exactly the values the broker acts on: one it does not act
 * on (an unconfigured catalog name, a sort order) is refused, naming the key, the value
 * and what is supported, never stored and ignored. Validation at the edges
 * (Kafka configs, broker configuration, namespace properties) and resolution
 * of stored values use the same parser, so a value that was accepted always
 * resolves, and one stored before the parser refused it (catalog and
 * sort.order values other than builtin and none, accepted but not applied
 * until s28) fails resolution with that same message: the table is held
 * back and the log names the stream, key, layer and value. */
#include "stream/policy.h"

#include "base/catalog_conf.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define MIN_TARGET_FILE_BYTES ((int64_t)1024)
#define MAX_TARGET_FILE_BYTES ((int64_t)1 << 30)
#define MAX_COMMIT_INTERVAL_MS ((int64_t)86400000)
#define MIN_SNAPSHOT_RETENTION_MS ((int64_t)1000)
#define MAX_SNAPSHOT_RETENTION_MS ((int64_t)31536000000)
#define MAX_FILE_DELETE_DELAY_MS ((int64_t)86400000)
#define MAX_TABLE_NAME 249

/* Parses v into p (p may be a scratch policy); 0 or -1 with why filled. */
typedef ls_status (*parse_fn)(const char *v, ls_policy_t *p, char *why, size_t cap);

typedef struct field_def {
    const char *key;
    const char *def;
    const char *accepted;
    const char *doc;
    parse_fn parse;
} field_def_t;

static void put(char *why, size_t cap, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void put(char *why, size_t cap, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, cap, fmt, ap);
    va_end(ap);
}

static int one_of(const char *v, const char *const *opts)
{
    for (int i = 0; opts[i]; i++)
        if (strcmp(v, opts[i]) == 0) return i;
    return -1;
}

static int parse_int(const char *v, int64_t lo, int64_t hi, int64_t *out)
{
    if (!*v) return -1;
    char *end;
    errno = 0;
    long long x = strtoll(v, &end, 10);
    if (errno || *end || x < lo || x > hi) return -1;
    *out = x;
    return 0;
}

static bool name_char(char ch)
{
    return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
           ch == '.' || ch == '_' || ch == '-';
}

static ls_status p_enabled(const char *v, ls_policy_t *p, char *why, size_t cap)
{
    static const char *const opts[] = {"false", "true", NULL};
    int i = one_of(v, opts);
    if (i < 0) return LS_EINVAL;
    p->enabled = i == 1;
    return LS_OK;
}

/* builtin, or the name of an external catalog of the broker configuration
 * (catalog.<name>.*, installed before any policy is checked). */
static ls_status p_catalog(const char *v, ls_policy_t *p, char *why, size_t cap)
{
    if (strcmp(v, LS_POLICY_BUILTIN_CATALOG) == 0 || ls_catalog_conf_get(v)) return LS_OK;
    char names[256];
    ls_catalog_conf_names(names, sizeof names);
    put(why, cap, "no catalog named '%s' is configured (configured: builtin%s%s)", v,
        names[0] ? ", " : "", names);
    return LS_EINVAL;
}

static ls_status p_name(const char *v, ls_policy_t *p, char *why, size_t cap)
{
    if (!*v) return LS_EINVAL;
    for (const char *c = v; *c;) {
        if (*c == '{') {
            if (strncmp(c, "{topic}", 7) == 0)
                c += 7;
            else if (strncmp(c, "{namespace}", 11) == 0)
                c += 11;
            else {
                put(why, cap, "unknown placeholder at '%.20s'", c);
                return LS_EINVAL;
            }
        } else if (!name_char(*c)) {
            put(why, cap, "character '%c' is not allowed", *c);
            return LS_EINVAL;
        } else {
            c++;
        }
    }
    /* the longest expansion must fit: placeholders expand to <= 249 chars each */
    char probe[4 * MAX_TABLE_NAME + 8];
    ls_policy_t q = *p;
    q.value[LS_POLICY_NAME] = v;
    char w2[128];
    if (ls_policy_table_name(&q, "n", "t", probe, sizeof probe, w2, sizeof w2) != LS_OK) {
        put(why, cap, "%s", w2);
        return LS_EINVAL;
    }
    return LS_OK;
}

/* "none" | item[,item...]; item: day | hour (of timestamp) | T(col) for T in
 * identity, year, month, day, hour, void | bucket(N, col) | truncate(W, col);
 * col one of the Kafka columns partition (int), offset (long), timestamp
 * (timestamptz), with the types the Iceberg spec allows per transform, or
 * a typed table's value field (its column name, a dotted path through
 * structs) or key field (_kafka_key_typed[.path]), whose type is checked
 * against the transform when the table's schema is known (materialize.c).
 * No column twice with one transform, nor with two time transforms (Iceberg
 * refuses such redundant partitions). */
static const char *const part_cols[] = {"partition", "timestamp", "offset"};
static const char *const part_tr[] = {"identity", "hour",   "day",      "month",
                                      "year",     "bucket", "truncate", "void"};

/* A field path: segments of [A-Za-z0-9_$-] joined by '.'. */
static bool field_path_ok(const char *s)
{
    if (!*s || *s == '.') return false;
    for (const char *c = s; *c; c++) {
        bool word = (*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') ||
                    (*c >= '0' && *c <= '9') || *c == '_' || *c == '$' || *c == '-';
        if (!word && !(*c == '.' && c[1] && c[1] != '.')) return false;
    }
    return true;
}

static bool part_is_time(ls_policy_transform t)
{
    return t >= LS_POLICY_HOUR && t <= LS_POLICY_YEAR;
}

/* One item s[0..n): LS_OK with *out, or LS_EINVAL with why. */
static ls_status part_item(const char *s, size_t n, ls_policy_part_t *out, char *why, size_t cap)
{
    char buf[160];
    if (n >= sizeof buf) {
        put(why, cap, "'%.40s...' is not a partition field", s);
        return LS_EINVAL;
    }
    /* copy without spaces: "bucket( 16 , partition )" reads as bucket(16,partition) */
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        if (s[i] != ' ') buf[k++] = s[i];
    buf[k] = 0;
    memset(out, 0, sizeof *out);
    if (!strcmp(buf, "day") || !strcmp(buf, "hour")) {
        out->column = LS_POLICY_COL_TIMESTAMP;
        out->transform = buf[0] == 'd' ? LS_POLICY_DAY : LS_POLICY_HOUR;
        return LS_OK;
    }
    char *lp = strchr(buf, '(');
    size_t bl = strlen(buf);
    if (!lp || buf[bl - 1] != ')') {
        put(why, cap, "'%.*s' is not a partition field (expected transform(column))", (int)n, s);
        return LS_EINVAL;
    }
    *lp = 0;
    buf[bl - 1] = 0;
    char *arg = lp + 1;
    int t = -1;
    for (int i = 0; i < (int)(sizeof part_tr / sizeof part_tr[0]); i++)
        if (!strcmp(buf, part_tr[i])) t = i;
    if (t < 0) {
        put(why, cap, "'%s' is not a partition transform", buf);
        return LS_EINVAL;
    }
    out->transform = (ls_policy_transform)t;
    if (t == LS_POLICY_BUCKET || t == LS_POLICY_TRUNCATE) {
        char *comma = strchr(arg, ',');
        int64_t v;
        if (!comma) {
            put(why, cap, "%s needs a parameter: %s(%s, column)", buf, buf,
                t == LS_POLICY_BUCKET ? "N" : "W");
            return LS_EINVAL;
        }
        *comma = 0;
        if (parse_int(arg, 1, 0x7fffffff, &v) != 0) {
            put(why, cap, "%s(%s, ...): %s must be an integer from 1 to 2147483647", buf, arg,
                t == LS_POLICY_BUCKET ? "the bucket count" : "the width");
            return LS_EINVAL;
        }
        out->param = (int)v;
        arg = comma + 1;
    }
    int c = -1;
    for (int i = 0; i < 3; i++)
        if (!strcmp(arg, part_cols[i])) c = i;
    if (c < 0) {
        if (!field_path_ok(arg) || strlen(arg) >= sizeof out->field) {
            put(why, cap,
                "%s(%s): '%s' is neither a Kafka column (partition, offset, timestamp) nor a "
                "field path (names of [A-Za-z0-9_$-] joined by '.', under %zu characters)",
                buf, arg, arg, sizeof out->field);
            return LS_EINVAL;
        }
        out->column = LS_POLICY_COL_FIELD;
        snprintf(out->field, sizeof out->field, "%s", arg);
        return LS_OK;
    }
    out->column = (ls_policy_column)c;
    bool ts = c == LS_POLICY_COL_TIMESTAMP;
    bool ok = t == LS_POLICY_VOID || (ts ? t != LS_POLICY_IDENTITY && t != LS_POLICY_TRUNCATE
                                         : !part_is_time(out->transform));
    if (!ok) {
        put(why, cap, "%s does not apply to %s (type %s)", buf, arg,
            ts                          ? "timestamptz"
            : c == LS_POLICY_COL_OFFSET ? "long"
                                        : "int");
        return LS_EINVAL;
    }
    return LS_OK;
}

static ls_status p_partition(const char *v, ls_policy_t *p, char *why, size_t cap)
{
    p->npart = 0;
    if (strcmp(v, "none") == 0) return LS_OK;
    const char *s = v;
    for (;;) {
        /* items split at commas outside parentheses */
        size_t len = 0;
        int depth = 0;
        while (s[len] && (s[len] != ',' || depth > 0)) {
            depth += s[len] == '(' ? 1 : s[len] == ')' ? -1 : 0;
            len++;
        }
        ls_policy_part_t it;
        if (part_item(s, len, &it, why, cap) != 0) return LS_EINVAL;
        for (int i = 0; i < p->npart; i++) {
            const ls_policy_part_t *o = &p->part[i];
            if (o->column != it.column || strcmp(o->field, it.field)) continue;
            if (o->transform == it.transform ||
                (part_is_time(o->transform) && part_is_time(it.transform))) {
                put(why, cap, "column %s is partitioned twice by %s",
                    it.column == LS_POLICY_COL_FIELD ? it.field : part_cols[it.column],
                    part_is_time(it.transform) ? "time transforms" : part_tr[it.transform]);
                return LS_EINVAL;
            }
        }
        if (p->npart == LS_POLICY_MAX_PART) {
            put(why, cap, "at most %d partition fields", LS_POLICY_MAX_PART);
            return LS_EINVAL;
        }
        p->part[p->npart++] = it;
        if (!s[len]) return LS_OK;
        s += len + 1;
    }
}

static ls_status p_target(const char *v, ls_policy_t *p, char *why, size_t cap)
{
    return parse_int(v, MIN_TARGET_FILE_BYTES, MAX_TARGET_FILE_BYTES, &p->target_file_bytes) == 0
               ? LS_OK
               : LS_EINVAL;
}

static ls_status p_compression(const char *v, ls_policy_t *p, char *why, size_t cap)
{
    static const char *const opts[] = {"zstd", "snappy", "gzip", "none", NULL};
    return one_of(v, opts) < 0 ? LS_EINVAL : LS_OK;
}

static ls_status p_interval(const char *v, ls_policy_t *p, char *why, size_t cap)
{
    return parse_int(v, LS_POLICY_MIN_COMMIT_INTERVAL_MS, MAX_COMMIT_INTERVAL_MS,
                     &p->commit_interval_ms) == 0
               ? LS_OK
               : LS_EINVAL;
}

static ls_status p_start(const char *v, ls_policy_t *p, char *why, size_t cap)
{
    static const char *const opts[] = {"earliest", "latest", NULL};
    int i = one_of(v, opts);
    if (i < 0) return LS_EINVAL;
    p->start_latest = i == 1;
    return LS_OK;
}

static ls_status p_write_mode(const char *v, ls_policy_t *p, char *why, size_t cap)
{
    static const char *const opts[] = {"append", "upsert", NULL};
    int i = one_of(v, opts);
    p->upsert = i == 1;
    return i < 0 ? LS_EINVAL : LS_OK;
}

static ls_status p_sort(const char *v, ls_policy_t *p, char *why, size_t cap)
{
    if (strcmp(v, "none") == 0) return LS_OK;
    put(why, cap, "rows are written in arrival order; sorting data files is not supported");
    return LS_EINVAL;
}

static ls_status p_snapshot_retention(const char *v, ls_policy_t *p, char *why, size_t cap)
{
    if (strcmp(v, "0") == 0) {
        p->snapshot_retention_ms = 0;
        return LS_OK;
    }
    return parse_int(v, MIN_SNAPSHOT_RETENTION_MS, MAX_SNAPSHOT_RETENTION_MS,
                     &p->snapshot_retention_ms) == 0
               ? LS_OK
               : LS_EINVAL;
}

static ls_status p_snapshot_min(const char *v, ls_policy_t *p, char *why, size_t cap)
{
    return parse_int(v, 1, 100000, &p->snapshot_retention_min) == 0 ? LS_OK : LS_EINVAL;
}

static ls_status p_file_delay(const char *v, ls_policy_t *p, char *why, size_t cap)
{
    return parse_int(v, 0, MAX_FILE_DELETE_DELAY_MS, &p->file_delete_delay_ms) == 0 ? LS_OK
                                                                                    : LS_EINVAL;
}

static ls_status p_errors(const char *v, ls_policy_t *p, char *why, size_t cap)
{
    static const char *const opts[] = {"fail", "skip", "dead-letter", NULL};
    int i = one_of(v, opts);
    p->error_skip = i == 1;
    p->error_dlq = i == 2;
    return i < 0 ? LS_EINVAL : LS_OK;
}

static ls_status p_value_format(const char *v, ls_policy_t *p, char *why, size_t cap)
{
    static const char *const opts[] = {"raw", "schema-registry", "schema-registry-latest", "json",
                                       NULL};
    int i = one_of(v, opts);
    p->value_typed = i >= 1;
    p->value_latest = i == 2;
    p->value_json = i == 3;
    return i < 0 ? LS_EINVAL : LS_OK;
}

static ls_status p_key_format(const char *v, ls_policy_t *p, char *why, size_t cap)
{
    static const char *const opts[] = {"raw", "schema-registry", "schema-registry-latest", NULL};
    int i = one_of(v, opts);
    p->key_typed = i >= 1;
    p->key_latest = i == 2;
    return i < 0 ? LS_EINVAL : LS_OK;
}

#define STRATEGY_CLASS_PREFIX "io.confluent.kafka.serializers.subject."
static const char *const strategies[] = {"TopicNameStrategy", "RecordNameStrategy",
                                         "TopicRecordNameStrategy", NULL};

/* A strategy's short name or Confluent's class name. */
static int strategy_of(const char *v)
{
    if (!strncmp(v, STRATEGY_CLASS_PREFIX, strlen(STRATEGY_CLASS_PREFIX)))
        v += strlen(STRATEGY_CLASS_PREFIX);
    return one_of(v, strategies);
}

static ls_status p_value_strategy(const char *v, ls_policy_t *p, char *why, size_t cap)
{
    int i = strategy_of(v);
    p->value_strategy = i < 0 ? LS_POLICY_TOPIC_NAME : (ls_policy_strategy)i;
    return i < 0 ? LS_EINVAL : LS_OK;
}

static ls_status p_key_strategy(const char *v, ls_policy_t *p, char *why, size_t cap)
{
    int i = strategy_of(v);
    p->key_strategy = i < 0 ? LS_POLICY_TOPIC_NAME : (ls_policy_strategy)i;
    return i < 0 ? LS_EINVAL : LS_OK;
}

/* "" | name[,name...]: Avro field names ([A-Za-z_][A-Za-z0-9_]*), distinct,
 * at most LS_POLICY_MAX_PK; spaces around names are allowed. */
static ls_status pk_split(const char *v, char names[][LS_POLICY_MAX_PK_NAME], int *count, char *why,
                          size_t cap)
{
    int n = 0;
    *count = 0;
    const char *s = v;
    while (*s == ' ')
        s++;
    if (!*s) return LS_OK;
    for (;;) {
        while (*s == ' ')
            s++;
        size_t len = strcspn(s, ","), tl = len;
        while (tl && s[tl - 1] == ' ')
            tl--;
        bool ok = tl > 0 && tl < LS_POLICY_MAX_PK_NAME && !(s[0] >= '0' && s[0] <= '9');
        for (size_t i = 0; i < tl && ok; i++)
            ok = (s[i] >= 'a' && s[i] <= 'z') || (s[i] >= 'A' && s[i] <= 'Z') ||
                 (s[i] >= '0' && s[i] <= '9') || s[i] == '_';
        if (!ok) {
            put(why, cap, "'%.*s' is not a field name", (int)(tl < 64 ? tl : 64), s);
            return LS_EINVAL;
        }
        if (n == LS_POLICY_MAX_PK) {
            put(why, cap, "more than %d fields", LS_POLICY_MAX_PK);
            return LS_EINVAL;
        }
        memcpy(names[n], s, tl);
        names[n][tl] = 0;
        for (int i = 0; i < n; i++)
            if (!strcmp(names[i], names[n])) {
                put(why, cap, "field %s is named twice", names[n]);
                return LS_EINVAL;
            }
        n++;
        if (!s[len]) {
            *count = n;
            return LS_OK;
        }
        s += len + 1;
    }
}

static ls_status p_primary_key(const char *v, ls_policy_t *p, char *why, size_t cap)
{
    char names[LS_POLICY_MAX_PK][LS_POLICY_MAX_PK_NAME];
    int n;
    ls_status st = pk_split(v, names, &n, why, cap);
    p->npk = n; /* 0 when the list is refused */
    return st;
}

void ls_policy_primary_key(const ls_policy_t *p, char names[][LS_POLICY_MAX_PK_NAME])
{
    char why[8];
    int n;
    (void)pk_split(p->value[LS_POLICY_PRIMARY_KEY] ? p->value[LS_POLICY_PRIMARY_KEY] : "", names,
                   &n, why, sizeof why);
}

static ls_status p_rewrite_min(const char *v, ls_policy_t *p, char *why, size_t cap)
{
    if (strcmp(v, "0") == 0) {
        p->rewrite_min_files = 0;
        return LS_OK;
    }
    return parse_int(v, 4, 1000, &p->rewrite_min_files) == 0 ? LS_OK : LS_EINVAL;
}

static ls_status p_changelog(const char *v, ls_policy_t *p, char *why, size_t cap)
{
    static const char *const opts[] = {"false", "true", NULL};
    int i = one_of(v, opts);
    p->changelog = i == 1;
    return i < 0 ? LS_EINVAL : LS_OK;
}

static ls_status p_format(const char *v, ls_policy_t *p, char *why, size_t cap)
{
    static const char *const opts[] = {"iceberg", "delta", "iceberg,delta", NULL};
    int i = one_of(v, opts);
    p->delta = i >= 1;
    return i < 0 ? LS_EINVAL : LS_OK;
}

static ls_status p_upsert_strategy(const char *v, ls_policy_t *p, char *why, size_t cap)
{
    static const char *const opts[] = {"copy-on-write", "merge-on-read", NULL};
    int i = one_of(v, opts);
    p->merge_on_read = i == 1;
    return i < 0 ? LS_EINVAL : LS_OK;
}

static ls_status p_format_version(const char *v, ls_policy_t *p, char *why, size_t cap)
{
    static const char *const opts[] = {"2", "3", NULL};
    int i = one_of(v, opts);
    p->format_version = i + 2;
    return i < 0 ? LS_EINVAL : LS_OK;
}

static ls_status p_checkpoint_interval(const char *v, ls_policy_t *p, char *why, size_t cap)
{
    return parse_int(v, 1, 100000, &p->delta_checkpoint_interval) == 0 ? LS_OK : LS_EINVAL;
}

static ls_status p_evolution(const char *v, ls_policy_t *p, char *why, size_t cap)
{
    static const char *const opts[] = {"fail", "dead-letter", "new-table", NULL};
    int i = one_of(v, opts);
    p->evolution_dlq = i == 1;
    p->evolution_new_table = i == 2;
    return i < 0 ? LS_EINVAL : LS_OK;
}

static const field_def_t fields[LS_POLICY_NFIELDS] = {
    [LS_POLICY_ENABLED] = {"lakestream.table.enabled", "false", "true, false",
                           "Materialize the topic as an Iceberg table in the compaction pass.",
                           p_enabled},
    [LS_POLICY_CATALOG] = {"lakestream.table.catalog", LS_POLICY_BUILTIN_CATALOG,
                           "builtin, or the name of a catalog.<name>.* of the broker "
                           "configuration",
                           "Catalog the table is registered in; builtin = the broker's own "
                           "(filesystem layout in the object store, served by its REST "
                           "catalog); a configured external Iceberg REST catalog's name: the "
                           "table stays in the broker's own catalog and each snapshot is "
                           "also committed to that catalog.",
                           p_catalog},
    [LS_POLICY_NAME] = {"lakestream.table.name", "{topic}",
                        "a template of [a-zA-Z0-9._-] and the placeholders {topic} and "
                        "{namespace}, expanding to 1 to 249 characters",
                        "Table name inside the stream's namespace. A new name starts a new "
                        "table.",
                        p_name},
    [LS_POLICY_PARTITION] = {"lakestream.table.partition", "day",
                             "none, or a comma-separated list of Iceberg transforms of the "
                             "Kafka columns: identity(partition|offset), bucket(N, "
                             "partition|offset|timestamp), truncate(W, partition|offset), "
                             "year|month|day|hour(timestamp) (day, hour alone: of timestamp); "
                             "or of a typed table's value field (column name, nested by "
                             "dotted path: customer.country) or key field "
                             "(_kafka_key_typed[.path]): identity, bucket(N, f), truncate(W, "
                             "f), year|month|day|hour(f), void(f), as the Iceberg spec allows "
                             "for the field's type",
                             "Partition spec of the table, applied when the table is created.",
                             p_partition},
    [LS_POLICY_TARGET_FILE_BYTES] = {"lakestream.table.target.file.bytes", "134217728",
                                     "an integer from 1024 to 1073741824",
                                     "Data files are rolled when they reach this size.", p_target},
    [LS_POLICY_COMPRESSION] = {"lakestream.table.compression", "zstd", "zstd, snappy, gzip, none",
                               "Parquet compression codec of the data files.", p_compression},
    [LS_POLICY_COMMIT_INTERVAL_MS] = {"lakestream.table.commit.interval.ms", "10000",
                                      "an integer from 1000 to 86400000",
                                      "Freshness: a record is in the table about this long after "
                                      "it was acknowledged.",
                                      p_interval},
    [LS_POLICY_START_POSITION] = {"lakestream.table.start.position", "earliest", "earliest, latest",
                                  "earliest: materialize from the log start; latest: only "
                                  "records written after the table was enabled.",
                                  p_start},
    [LS_POLICY_WRITE_MODE] = {"lakestream.table.write.mode", "append", "append, upsert",
                              "append: one row per record; upsert: one row per record key, "
                              "its latest value (a null value deletes the row), kept by "
                              "copy-on-write overwrite commits. Default: upsert for a topic "
                              "whose cleanup.policy has compact, else append.",
                              p_write_mode},
    [LS_POLICY_SORT_ORDER] = {"lakestream.table.sort.order", "none", "none",
                              "Sort order of rows inside data files: none, rows are written in "
                              "arrival order.",
                              p_sort},
    [LS_POLICY_ERROR_HANDLING] = {"lakestream.table.error.handling", "fail",
                                  "fail, skip, dead-letter",
                                  "What a record that cannot be turned into a row (typed "
                                  "tables) does: fail holds the range back and retries; skip "
                                  "leaves it out and counts it (snapshot summary "
                                  "lakestream.skipped-records); dead-letter writes it as it is "
                                  "into the raw table <name>__dlq, the reason in its header "
                                  "lakestream.dlq.error, committed in the same pass.",
                                  p_errors},
    [LS_POLICY_SNAPSHOT_RETENTION_MS] = {"lakestream.table.snapshot.retention.ms", "900000",
                                         "0 (never expire), or an integer from 1000 to "
                                         "31536000000",
                                         "Snapshots older than this expire at the next commit (the "
                                         "current one always stays), with the files only they "
                                         "referenced: time travel reaches this far back.",
                                         p_snapshot_retention},
    [LS_POLICY_SNAPSHOT_RETENTION_MIN] = {"lakestream.table.snapshot.retention.min", "1",
                                          "an integer from 1 to 100000",
                                          "The newest this many snapshots never expire, whatever "
                                          "their age.",
                                          p_snapshot_min},
    [LS_POLICY_VALUE_FORMAT] = {"lakestream.table.value.format", "raw",
                                "raw, schema-registry, schema-registry-latest, json",
                                "raw: the value as bytes; schema-registry: each value in the "
                                "Confluent wire format (schema id from the built-in registry) "
                                "becomes typed columns (Avro records; the table's schema is the "
                                "first record's, set when the table is created); "
                                "schema-registry-latest: values without the header (plain Avro "
                                "binary), decoded by the latest version of the subject "
                                "<topic>-value when a pass materializes them; json: schemaless "
                                "JSON objects, columns inferred from the values (new properties "
                                "add columns), a value that does not fit them kept whole in the "
                                "column _raw.",
                                p_value_format},
    [LS_POLICY_REWRITE_MIN_FILES] = {"lakestream.table.rewrite.min.files", "16",
                                     "0 (never rewrite), or an integer from 4 to 1000",
                                     "Small data files (below target.file.bytes) of one table "
                                     "partition are rewritten into one file, as an Iceberg "
                                     "replace commit, once at least this many line up and the "
                                     "new file is at least 4x the largest of them.",
                                     p_rewrite_min},
    [LS_POLICY_CHANGELOG] = {"lakestream.table.changelog", "false", "true, false",
                             "true: beside the table, the append-only table <name>__changelog "
                             "holds every record in the raw shape (tombstones as rows with a "
                             "null value), committed in the same pass: the change history of an "
                             "upsert table for CDC consumers.",
                             p_changelog},
    [LS_POLICY_EVOLUTION] = {"lakestream.table.evolution", "fail", "fail, dead-letter, new-table",
                             "What a typed table does with a record whose schema it cannot "
                             "evolve to (a type Iceberg cannot promote, e.g. string to int): "
                             "fail holds the table back, naming the offset, the schema ids and "
                             "the reason; dead-letter writes the record as it is into "
                             "<name>__dlq with the reason; new-table continues the table as a "
                             "new table version <name>__v2 (__v3, ...) created with the new "
                             "schema, which takes that record and everything after it (the old "
                             "version stays readable; not with write.mode=upsert). Compatible "
                             "versions (added fields, "
                             "int to long, float to double, required to optional) evolve the "
                             "table's schema in the commit that first writes them.",
                             p_evolution},
    [LS_POLICY_KEY_FORMAT] = {"lakestream.table.key.format", "raw",
                              "raw, schema-registry, schema-registry-latest",
                              "raw: the key as bytes only (_kafka_key); schema-registry: each "
                              "key in the Confluent wire format is also decoded into the typed "
                              "column _kafka_key_typed (a struct of an Avro record key's fields, "
                              "or the column of a primitive key), with the value's type "
                              "mapping, error handling and evolution rules; "
                              "schema-registry-latest: keys without the header, decoded by the "
                              "latest version of the subject <topic>-key.",
                              p_key_format},
    [LS_POLICY_VALUE_SUBJECT_STRATEGY] =
        {"lakestream.table.value.subject.name.strategy", "TopicNameStrategy",
         "TopicNameStrategy, RecordNameStrategy, "
         "TopicRecordNameStrategy (or Confluent's class names " STRATEGY_CLASS_PREFIX "*)",
         "The subject of a typed table's values: <topic>-value, "
         "the record's full name, or <topic>-<full name>. With "
         "value.format=schema-registry each record's schema id "
         "must be a version of it (else the record follows "
         "error.handling); with schema-registry-latest its "
         "latest version decodes (TopicNameStrategy only: the "
         "others need a record name the bytes do not carry).",
         p_value_strategy},
    [LS_POLICY_KEY_SUBJECT_STRATEGY] =
        {"lakestream.table.key.subject.name.strategy", "TopicNameStrategy",
         "TopicNameStrategy, RecordNameStrategy, "
         "TopicRecordNameStrategy (or Confluent's class names " STRATEGY_CLASS_PREFIX "*)",
         "The same for typed keys (<topic>-key).", p_key_strategy},
    [LS_POLICY_PRIMARY_KEY] = {"lakestream.table.primary.key", "",
                               "empty (none), or a comma-separated list of 1 to 16 top-level "
                               "fields of the typed key",
                               "The upsert identity when the key is typed: rows are one per "
                               "value of these key fields (required, not float/double), "
                               "whatever version of the key schema wrote them; the table "
                               "schema's identifier-field-ids. Needs key.format=schema-registry "
                               "(or -latest) and write.mode=upsert, and is set when the table "
                               "is created. Empty: the key's bytes are the identity.",
                               p_primary_key},
    [LS_POLICY_FILE_DELETE_DELAY_MS] =
        {"lakestream.table.file.delete.delay.ms", "300000", "an integer from 0 to 86400000",
         "How long a table file stays after no retained snapshot or current metadata references "
         "it (an expired snapshot's manifest list, manifests and removed data files; an old "
         "metadata file), so engines that loaded the table earlier (Spark caches a table for "
         "30 s, a query reads what it planned for minutes) can still read it; then a commit or "
         "the idle check deletes it. 0: deleted at once, as Iceberg's expireSnapshots does.",
         p_file_delay},
    [LS_POLICY_FORMAT] = {"lakestream.table.format", "iceberg", "iceberg, delta, iceberg,delta",
                          "Table formats the table is readable as. iceberg: an Apache Iceberg "
                          "table; delta (or iceberg,delta): also a Delta Lake table at the same "
                          "location (its _delta_log names the same data files, committed by the "
                          "same pass). The Iceberg metadata is always written: it is the "
                          "broker's record of what the table holds (docs/FORMATS.md).",
                          p_format},
    [LS_POLICY_DELTA_CHECKPOINT_INTERVAL] = {"lakestream.table.delta.checkpoint.interval", "10",
                                             "an integer from 1 to 100000",
                                             "With format delta: a Delta checkpoint "
                                             "(<version>.checkpoint.parquet and "
                                             "_delta_log/_last_checkpoint) after every commit "
                                             "whose version is a multiple of this (Delta's "
                                             "delta.checkpointInterval); log files below a "
                                             "checkpoint older than snapshot.retention.ms are "
                                             "then deleted.",
                                             p_checkpoint_interval},
    [LS_POLICY_UPSERT_STRATEGY] =
        {"lakestream.table.upsert.strategy", "copy-on-write", "copy-on-write, merge-on-read",
         "How an upsert table's commit removes the rows of keys it writes again. copy-on-write: "
         "the data files holding them are copied without them (readers read plain files); "
         "merge-on-read: one Iceberg position delete file per partition names them, and the "
         "table maintenance (rewrite.min.files) later copies the data files deletes weigh on "
         "without those rows. Needs write.mode=upsert; not with format delta. In a table of "
         "format.version 3 the deletes are deletion vectors, one per data file.",
         p_upsert_strategy},
    [LS_POLICY_FORMAT_VERSION] =
        {"lakestream.table.format.version", "2", "2, 3",
         "The Iceberg format version of the stream's tables. 3: row lineage (every row gets a "
         "_row_id that maintenance rewrites keep, and _last_updated_sequence_number) and, for "
         "merge-on-read upsert tables, deletion vectors in Puffin files instead of position "
         "delete files; readers need Iceberg 1.8 or later (Spark, Java, Trino). Tables are "
         "created at this version, and a version 2 table is upgraded to 3 at its next commit. "
         "Iceberg tables never go back: a stream whose tables are at 3 cannot be set to 2. "
         "Not with format delta.",
         p_format_version},
};

const char *ls_policy_key(ls_policy_field f) { return fields[f].key; }
const char *ls_policy_default(ls_policy_field f) { return fields[f].def; }
const char *ls_policy_accepted(ls_policy_field f) { return fields[f].accepted; }
const char *ls_policy_doc(ls_policy_field f) { return fields[f].doc; }

const char *ls_policy_source_name(ls_policy_source s)
{
    static const char *const names[] = {"stream", "namespace", "cluster", "default"};
    return names[s];
}

int ls_policy_field_of(const char *key)
{
    for (int i = 0; i < LS_POLICY_NFIELDS; i++)
        if (strcmp(fields[i].key, key) == 0) return i;
    return -1;
}

bool ls_policy_is_key(const char *key)
{
    return strncmp(key, LS_POLICY_PREFIX, strlen(LS_POLICY_PREFIX)) == 0;
}

static ls_status check_field(int f, const char *key, const char *value, ls_policy_t *scratch,
                             const char *where, char *err, size_t errlen)
{
    char why[160] = "";
    if (fields[f].parse(value, scratch, why, sizeof why) == 0) return LS_OK;
    if (!err) return LS_EINVAL;
    if (why[0])
        snprintf(err, errlen,
                 "Invalid value '%s' for configuration %s%s (%s): accepted values "
                 "are %s",
                 value, key, where, why, fields[f].accepted);
    else
        snprintf(err, errlen, "Invalid value '%s' for configuration %s%s: accepted values are %s",
                 value, key, where, fields[f].accepted);
    return LS_EINVAL;
}

ls_status ls_policy_check(const char *key, const char *value, char *err, size_t errlen)
{
    if (strcmp(key, LS_POLICY_SINCE_KEY) == 0) {
        snprintf(err, errlen, "Configuration %s is maintained by the broker and cannot be set",
                 key);
        return LS_EINVAL;
    }
    int f = ls_policy_field_of(key);
    if (f < 0) {
        char known[800] = "";
        size_t n = 0;
        for (int i = 0; i < LS_POLICY_NFIELDS && n < sizeof known; i++)
            n += (size_t)snprintf(known + n, sizeof known - n, "%s%s", i ? ", " : "",
                                  fields[i].key + strlen(LS_POLICY_PREFIX));
        snprintf(err, errlen,
                 "Unknown configuration %s: table policy keys are " LS_POLICY_PREFIX "{%s}", key,
                 known);
        return LS_EINVAL;
    }
    ls_policy_t scratch;
    memset(&scratch, 0, sizeof scratch);
    return check_field(f, key, value ? value : "", &scratch, "", err, errlen);
}

static const char *layer_get(const ls_prop_t *v, int n, const char *key)
{
    for (int i = 0; i < n; i++)
        if (v[i].key && strcmp(v[i].key, key) == 0) return v[i].value;
    return NULL;
}

/* Whether the stream layer (the topic's configs) has cleanup.policy with
 * compact in it: such a topic's table defaults to write.mode=upsert. */
static bool stream_compacted(const ls_policy_layers_t *l)
{
    const char *cp = layer_get(l->stream, l->nstream, "cleanup.policy");
    for (const char *s = cp; s && *s;) {
        s += strspn(s, " ,");
        size_t n = strcspn(s, " ,");
        if (n == 7 && !strncmp(s, "compact", 7)) return true;
        s += n;
    }
    return false;
}

ls_status ls_policy_resolve(const ls_policy_layers_t *l, ls_policy_t *out, char *err, size_t errlen)
{
    memset(out, 0, sizeof *out);
    out->enabled_since_ms = -1;
    ls_status st = LS_OK;
    for (int f = 0; f < LS_POLICY_NFIELDS; f++) {
        const char *key = fields[f].key, *v;
        if ((v = layer_get(l->stream, l->nstream, key)))
            out->source[f] = LS_POLICY_SRC_STREAM;
        else if ((v = layer_get(l->ns, l->nns, key)))
            out->source[f] = LS_POLICY_SRC_NAMESPACE;
        else if ((v = layer_get(l->cluster, l->ncluster, key)))
            out->source[f] = LS_POLICY_SRC_CLUSTER;
        else {
            v = f == LS_POLICY_WRITE_MODE && stream_compacted(l) ? "upsert" : fields[f].def;
            out->source[f] = LS_POLICY_SRC_DEFAULT;
        }
        out->value[f] = v;
        char where[48];
        snprintf(where, sizeof where, " (%s layer)", ls_policy_source_name(out->source[f]));
        /* keep resolving after a bad value so every field has a value and source */
        bool first = st == LS_OK;
        if (check_field(f, key, v, out, where, first ? err : NULL, first ? errlen : 0) != LS_OK)
            st = LS_EINVAL;
    }
    /* -latest names no schema in the bytes: only a subject known without the
     * record's name can give the version that decodes them */
    static const struct {
        ls_policy_field format, strategy;
    } pairs[] = {{LS_POLICY_VALUE_FORMAT, LS_POLICY_VALUE_SUBJECT_STRATEGY},
                 {LS_POLICY_KEY_FORMAT, LS_POLICY_KEY_SUBJECT_STRATEGY}};
    for (size_t i = 0; i < 2 && st == LS_OK; i++) {
        bool latest = i == 0 ? out->value_latest : out->key_latest;
        ls_policy_strategy sg = i == 0 ? out->value_strategy : out->key_strategy;
        if (!latest || sg == LS_POLICY_TOPIC_NAME) continue;
        ls_policy_field ff = pairs[i].format, sf = pairs[i].strategy;
        snprintf(err, errlen,
                 "Invalid value '%s' for configuration %s (%s layer): with %s=%s (%s layer) the "
                 "bytes name no schema, so the subject must be known without the record's "
                 "name: use TopicNameStrategy, or schema-registry (the Confluent header)",
                 out->value[sf], fields[sf].key, ls_policy_source_name(out->source[sf]),
                 fields[ff].key, out->value[ff], ls_policy_source_name(out->source[ff]));
        st = LS_EINVAL;
    }
    /* value.format=json infers the value's columns only */
    if (st == LS_OK && out->value_json && out->key_typed) {
        snprintf(err, errlen,
                 "Invalid value '%s' for configuration %s (%s layer): with %s=json (%s layer) "
                 "keys stay bytes (use key.format=raw)",
                 out->value[LS_POLICY_KEY_FORMAT], fields[LS_POLICY_KEY_FORMAT].key,
                 ls_policy_source_name(out->source[LS_POLICY_KEY_FORMAT]),
                 fields[LS_POLICY_VALUE_FORMAT].key,
                 ls_policy_source_name(out->source[LS_POLICY_VALUE_FORMAT]));
        st = LS_EINVAL;
    }
    /* a primary key names fields of a typed key, and only upsert tables have one */
    if (st == LS_OK && out->npk && (!out->key_typed || !out->upsert)) {
        ls_policy_field ff = !out->key_typed ? LS_POLICY_KEY_FORMAT : LS_POLICY_WRITE_MODE;
        snprintf(err, errlen,
                 "Invalid value '%s' for configuration %s (%s layer): a primary key %s, but %s "
                 "is %s (%s layer)",
                 out->value[LS_POLICY_PRIMARY_KEY], fields[LS_POLICY_PRIMARY_KEY].key,
                 ls_policy_source_name(out->source[LS_POLICY_PRIMARY_KEY]),
                 !out->key_typed ? "names fields of a typed key (key.format=schema-registry or "
                                   "schema-registry-latest)"
                                 : "is an upsert table's identity (write.mode=upsert)",
                 fields[ff].key, out->value[ff], ls_policy_source_name(out->source[ff]));
        st = LS_EINVAL;
    }
    /* a new table version of an upsert table would lack the rows of keys
     * last written before the switch: refused rather than half applied */
    if (st == LS_OK && out->evolution_new_table && out->upsert &&
        (out->value_typed || out->key_typed)) {
        snprintf(err, errlen,
                 "Invalid value 'new-table' for configuration %s (%s layer): an upsert table "
                 "(%s=upsert, %s layer) holds the latest row of every key, which a new table "
                 "version started at an incompatible schema would not; use fail or dead-letter",
                 fields[LS_POLICY_EVOLUTION].key,
                 ls_policy_source_name(out->source[LS_POLICY_EVOLUTION]),
                 fields[LS_POLICY_WRITE_MODE].key,
                 ls_policy_source_name(out->source[LS_POLICY_WRITE_MODE]));
        st = LS_EINVAL;
    }
    /* position deletes are for upsert tables, and a Delta log carries none */
    if (st == LS_OK && out->merge_on_read && (!out->upsert || out->delta)) {
        ls_policy_field ff = !out->upsert ? LS_POLICY_WRITE_MODE : LS_POLICY_FORMAT;
        snprintf(err, errlen,
                 "Invalid value 'merge-on-read' for configuration %s (%s layer): %s, but %s is "
                 "%s (%s layer)",
                 fields[LS_POLICY_UPSERT_STRATEGY].key,
                 ls_policy_source_name(out->source[LS_POLICY_UPSERT_STRATEGY]),
                 !out->upsert ? "it is how upsert tables (write.mode=upsert) remove rows"
                              : "a Delta log does not carry Iceberg position deletes",
                 fields[ff].key, out->value[ff], ls_policy_source_name(out->source[ff]));
        st = LS_EINVAL;
    }
    /* the Delta mirror names Iceberg v2 data files (no lineage columns) */
    if (st == LS_OK && out->format_version >= 3 && out->delta) {
        snprintf(err, errlen,
                 "Invalid value '3' for configuration %s (%s layer): %s is %s (%s layer), and a "
                 "Delta log mirrors format version 2 tables only",
                 fields[LS_POLICY_FORMAT_VERSION].key,
                 ls_policy_source_name(out->source[LS_POLICY_FORMAT_VERSION]),
                 fields[LS_POLICY_FORMAT].key, out->value[LS_POLICY_FORMAT],
                 ls_policy_source_name(out->source[LS_POLICY_FORMAT]));
        st = LS_EINVAL;
    }
    const char *since = layer_get(l->stream, l->nstream, LS_POLICY_SINCE_KEY);
    int64_t ms;
    if (since && parse_int(since, 0, INT64_MAX, &ms) == 0) out->enabled_since_ms = ms;
    return st;
}

ls_status ls_policy_for_stream(ls_catalog_t *cat, const ls_stream_t *s, const ls_prop_t *cluster,
                               int ncluster, ls_policy_t *out, ls_namespace_t **ns, char *err,
                               size_t errlen)
{
    *ns = ls_catalog_namespace(cat, s->ns);
    ls_policy_layers_t l = {
        s->config, s->nconfig, *ns ? (*ns)->props : NULL, *ns ? (*ns)->nprops : 0,
        cluster,   ncluster};
    return ls_policy_resolve(&l, out, err, errlen);
}

ls_status ls_policy_table_name(const ls_policy_t *p, const char *ns, const char *topic, char *out,
                               size_t cap, char *err, size_t errlen)
{
    const char *t = p->value[LS_POLICY_NAME];
    if (!t) t = fields[LS_POLICY_NAME].def;
    size_t n = 0;
    bool over = false;
    for (const char *c = t; *c && !over;) {
        const char *piece = c;
        size_t len = 1;
        if (strncmp(c, "{topic}", 7) == 0) {
            piece = topic;
            len = strlen(topic);
            c += 7;
        } else if (strncmp(c, "{namespace}", 11) == 0) {
            piece = ns;
            len = strlen(ns);
            c += 11;
        } else {
            c++;
        }
        if (n + len >= cap || n + len > MAX_TABLE_NAME)
            over = true;
        else {
            memcpy(out + n, piece, len);
            n += len;
        }
    }
    out[n < cap ? n : 0] = 0;
    if (over || n == 0 || strcmp(out, ".") == 0 || strcmp(out, "..") == 0) {
        snprintf(err, errlen,
                 "%s '%s' gives an invalid table name for %s/%s: it must expand to 1 to %d "
                 "characters, not '.' or '..'",
                 fields[LS_POLICY_NAME].key, t, ns, topic, MAX_TABLE_NAME);
        return LS_EINVAL;
    }
    return LS_OK;
}

const char *ls_policy_since_after(const ls_policy_t *before, const ls_policy_t *after,
                                  int64_t now_ms, char *buf, size_t cap)
{
    if (!after->enabled) return NULL;
    if (before && before->enabled) {
        if (before->enabled_since_ms < 0) return NULL;
        snprintf(buf, cap, "%lld", (long long)before->enabled_since_ms);
        return buf;
    }
    snprintf(buf, cap, "%lld", (long long)now_ms);
    return buf;
}
