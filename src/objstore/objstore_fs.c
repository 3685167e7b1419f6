/* ls_objstore fs backend: objects are regular files under a root directory.
 *
 * Layout: key "a/b/c" is the file <root>/a/b/c. <root>/tmp/ holds objects
 * being written, so the top-level component "tmp" is reserved (keys "tmp" and
 * "tmp/..." are LS_EINVAL) and list never shows it. Because keys are paths, the
 * store cannot hold both "a/b" and "a/b/c" (the second put is LS_EINVAL).
 *
 * Invariants:
 *  - a file exists under its key only once it is complete: put writes
 *    tmp/<pid>-<seq>.part (same filesystem as the root, so rename is atomic),
 *    fsyncs it, renames it into place, then fsyncs the parent directory. With
 *    fsync disabled the same steps run without the fsyncs: atomic, not durable.
 *  - every directory above a key is durable in its parent before put returns:
 *    the put that creates a directory fsyncs its parent; a put that finds one
 *    existing fsyncs its parent too unless this store already made it durable
 *    (dircache: a direct-mapped set of path hashes, a bounded cache whose
 *    misses only cost an extra fsync). A concurrent put may have created the
 *    directory and not fsynced its parent yet, which is why "exists" alone
 *    is not enough.
 *  - CREATE_ONLY uses renameat2(RENAME_NOREPLACE), or link()+unlink() where the
 *    filesystem lacks it, so "exists" is decided atomically by the kernel.
 *  - directories are never removed by del (emptied ones stay): pruning them
 *    would race with puts creating files inside and would make dircache lie.
 *    Deletes are not fsynced: an object that reappears after a crash is
 *    garbage the next GC pass deletes again.
 *  - temp files left by a crashed process are removed at open; files whose
 *    owner pid is still alive (another store on the same root) are kept.
 *
 * Threads: every call may run on any thread concurrently; the shared mutable
 * state is dircache, whose slots are read and written atomically (error
 * detail goes to the calling thread's buffer, ls_objstore_errbuf). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/alloc.h"
#include "base/diag.h"
#include "base/hash.h"
#include "objstore/objstore.h"

#define FS_TMP_DIR "tmp"
#define FS_IOV_CHUNK 64
#define FS_DIRCACHE_SLOTS 1024

typedef struct fs_store {
    ls_objstore_t base;
    char *root; /* as given, for messages */
    int rootfd;
    int fsync_enabled;
    uint64_t dircache[FS_DIRCACHE_SLOTS]; /* hashes of directories known durable */
} fs_store_t;

static unsigned long fs_tmp_seq; /* process-wide, atomic: temp names never collide */

static void fs_set_err(fs_store_t *fs, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void fs_set_err(fs_store_t *fs, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(ls_objstore_errbuf(), LS_OBJSTORE_ERRMSG_CAP, fmt, ap);
    va_end(ap);
}

/* Maps an errno from a syscall on <root>/path to a status, recording detail. */
static ls_status fs_fail(fs_store_t *fs, int errnum, const char *op, const char *path)
{
    char eb[128];
    const char *es = strerror_r(errnum, eb, sizeof eb);
    fs_set_err(fs, "%s %s/%s: %s (errno %d)", op, fs->root, path, es, errnum);
    LS_WARN_RL("objstore", "fs: %s", ls_objstore_errbuf());
    return (errnum == ENOSPC || errnum == EDQUOT) ? LS_ENOSPC : LS_EIO;
}

static uint64_t fs_path_hash(const char *p)
{
    return ls_hash_str(LS_HASH_INIT, p) | 1; /* 0 marks an empty slot */
}

/* write: a key the broker writes (ls_objstore_key_valid); else any key a
 * listing may return (ls_objstore_key_readable). */
static ls_status fs_check_key(fs_store_t *fs, const char *key, int write)
{
    if (!(write ? ls_objstore_key_valid(key) : ls_objstore_key_readable(key))) {
        fs_set_err(fs, "invalid object key '%s'", key ? key : "(null)");
        return LS_EINVAL;
    }
    if (strcmp(key, FS_TMP_DIR) == 0 || strncmp(key, FS_TMP_DIR "/", sizeof FS_TMP_DIR) == 0) {
        fs_set_err(fs, "object key '%s' uses the reserved top-level '" FS_TMP_DIR "'", key);
        return LS_EINVAL;
    }
    return LS_OK;
}

/* Parent directory of a key relative to the root ("" for the root itself). */
static void fs_parent(const char *key, char *out)
{
    const char *slash = strrchr(key, '/');
    size_t n = slash ? (size_t)(slash - key) : 0;
    memcpy(out, key, n);
    out[n] = 0;
}

static ls_status fs_fsync_dir(fs_store_t *fs, const char *dir)
{
    if (!fs->fsync_enabled) return LS_OK;
    if (!dir[0]) return fsync(fs->rootfd) == 0 ? LS_OK : fs_fail(fs, errno, "fsync", ".");
    int fd = openat(fs->rootfd, dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) return fs_fail(fs, errno, "open", dir);
    ls_status st = LS_OK;
    if (fsync(fd) != 0) st = fs_fail(fs, errno, "fsync", dir);
    close(fd);
    return st;
}

/* Creates the directories above key and makes each durable in its parent. */
static ls_status fs_mkdirs(fs_store_t *fs, const char *key)
{
    char path[LS_OBJSTORE_KEY_MAX + 1];
    snprintf(path, sizeof path, "%s", key);
    for (char *p = strchr(path, '/'); p; p = strchr(p + 1, '/')) {
        *p = 0;
        if (mkdirat(fs->rootfd, path, 0755) != 0 && errno != EEXIST) {
            int e = errno;
            if (e == ENOTDIR) {
                fs_set_err(fs, "object key '%s' collides with object '%s'", key, path);
                return LS_EINVAL;
            }
            return fs_fail(fs, e, "mkdir", path);
        }
        uint64_t h = fs_path_hash(path);
        uint64_t *slot = &fs->dircache[h % FS_DIRCACHE_SLOTS];
        if (fs->fsync_enabled && __atomic_load_n(slot, __ATOMIC_ACQUIRE) != h) {
            char parent[LS_OBJSTORE_KEY_MAX + 1];
            fs_parent(path, parent);
            ls_status st = fs_fsync_dir(fs, parent);
            if (st != LS_OK) return st;
            __atomic_store_n(slot, h, __ATOMIC_RELEASE);
        }
        *p = '/';
    }
    return LS_OK;
}

static ls_status fs_write_all(fs_store_t *fs, int fd, const char *path, const struct iovec *iov,
                              int iovcnt)
{
    int i = 0;
    size_t off = 0; /* bytes of iov[i] already written */
    while (i < iovcnt) {
        struct iovec v[FS_IOV_CHUNK];
        int nv = 0;
        for (int j = i; j < iovcnt && nv < FS_IOV_CHUNK; j++) {
            size_t skip = j == i ? off : 0;
            if (iov[j].iov_len == skip) continue;
            v[nv].iov_base = (char *)iov[j].iov_base + skip;
            v[nv].iov_len = iov[j].iov_len - skip;
            nv++;
        }
        if (nv == 0) break;
        ssize_t w = writev(fd, v, nv);
        if (w < 0) {
            if (errno == EINTR) continue;
            return fs_fail(fs, errno, "write", path);
        }
        if (w == 0) return fs_fail(fs, EIO, "write (no progress)", path);
        size_t left = (size_t)w;
        while (i < iovcnt && left >= iov[i].iov_len - off) {
            left -= iov[i].iov_len - off;
            i++;
            off = 0;
        }
        off += left;
    }
    return LS_OK;
}

/* rename(tmp, key) failing with EEXIST if key exists. 0 or -1 with errno. */
static int fs_rename_noreplace(fs_store_t *fs, const char *tmp, const char *key)
{
    if (renameat2(fs->rootfd, tmp, fs->rootfd, key, RENAME_NOREPLACE) == 0) return 0;
    if (errno != EINVAL && errno != ENOSYS && errno != ENOTSUP) return -1;
    /* the filesystem lacks RENAME_NOREPLACE: link() is atomic create-only too */
    if (linkat(fs->rootfd, tmp, fs->rootfd, key, 0) != 0) return -1;
    unlinkat(fs->rootfd, tmp, 0);
    return 0;
}

static ls_status fs_publish(fs_store_t *fs, const char *tmp, const char *key, int create_only)
{
    ls_status st = fs_mkdirs(fs, key);
    if (st != LS_OK) return st;
    int rc = create_only ? fs_rename_noreplace(fs, tmp, key)
                         : renameat(fs->rootfd, tmp, fs->rootfd, key);
    if (rc != 0) {
        int e = errno;
        if (e == EEXIST && create_only) {
            fs_set_err(fs, "put %s: object exists (create-only)", key);
            return LS_EEXISTS;
        }
        if (e == EISDIR || e == ENOTDIR || e == ENOTEMPTY || e == EEXIST) {
            fs_set_err(fs, "object key '%s' collides with a directory of other objects", key);
            return LS_EINVAL;
        }
        return fs_fail(fs, e, "rename into", key);
    }
    char parent[LS_OBJSTORE_KEY_MAX + 1];
    fs_parent(key, parent);
    return fs_fsync_dir(fs, parent);
}

static ls_status fs_put(ls_objstore_t *os, const char *key, const struct iovec *iov, int iovcnt,
                        int flags)
{
    fs_store_t *fs = (fs_store_t *)os;
    ls_status st = fs_check_key(fs, key, 1);
    if (st != LS_OK) return st;
    if (iovcnt < 0 || (iovcnt > 0 && !iov) || (flags & ~LS_OBJSTORE_PUT_CREATE_ONLY)) {
        fs_set_err(fs, "put %s: invalid arguments", key);
        return LS_EINVAL;
    }
    char tmp[64];
    snprintf(tmp, sizeof tmp, FS_TMP_DIR "/%ld-%lu.part", (long)getpid(),
             __atomic_add_fetch(&fs_tmp_seq, 1, __ATOMIC_RELAXED));
    int fd = openat(fs->rootfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (fd < 0) return fs_fail(fs, errno, "create", tmp);
    st = fs_write_all(fs, fd, tmp, iov, iovcnt);
    if (st != LS_OK) goto close_fd;
    if (fs->fsync_enabled && fsync(fd) != 0) {
        st = fs_fail(fs, errno, "fsync", tmp);
        goto close_fd;
    }
    int rc = close(fd);
    fd = -1;
    if (rc != 0) {
        st = fs_fail(fs, errno, "close", tmp);
        goto unlink_tmp;
    }
    st = fs_publish(fs, tmp, key, flags & LS_OBJSTORE_PUT_CREATE_ONLY);
    if (st != LS_OK) goto unlink_tmp;
    return LS_OK;

close_fd:
    close(fd);
unlink_tmp:
    unlinkat(fs->rootfd, tmp, 0);
    return st;
}

/* Opens key for reading [off, off + len) clamped to its size: *fd (to close)
 * and *n, the bytes there are (0: nothing, *fd is -1). */
static ls_status fs_open_range(fs_store_t *fs, const char *key, uint64_t off, uint64_t len, int *fd,
                               uint64_t *n)
{
    *fd = -1;
    *n = 0;
    ls_status st = fs_check_key(fs, key, 0);
    if (st != LS_OK) return st;
    int f = openat(fs->rootfd, key, O_RDONLY | O_CLOEXEC);
    if (f < 0) {
        if (errno == ENOENT || errno == ENOTDIR) return LS_ENOTFOUND;
        return fs_fail(fs, errno, "open", key);
    }
    struct stat sb;
    if (fstat(f, &sb) != 0) {
        st = fs_fail(fs, errno, "stat", key);
    } else if (!S_ISREG(sb.st_mode)) {
        st = LS_ENOTFOUND;
    } else if (off < (uint64_t)sb.st_size) {
        uint64_t size = (uint64_t)sb.st_size;
        *n = size - off < len ? size - off : len;
        if (*n > (uint64_t)SIZE_MAX / 2) {
            fs_set_err(fs, "get %s: range of %llu bytes is too large", key, (unsigned long long)*n);
            st = LS_EINVAL;
        }
    }
    if (st != LS_OK || *n == 0) {
        close(f);
        *n = 0;
        return st;
    }
    *fd = f;
    return LS_OK;
}

static ls_status fs_pread_all(fs_store_t *fs, int fd, const char *key, uint64_t off, uint8_t *dst,
                              size_t n)
{
    size_t got = 0;
    while (got < n) {
        ssize_t r = pread(fd, dst + got, n - got, (off_t)(off + got));
        if (r < 0) {
            if (errno == EINTR) continue;
            return fs_fail(fs, errno, "read", key);
        }
        if (r == 0) return fs_fail(fs, EIO, "read (object shorter than its size)", key);
        got += (size_t)r;
    }
    return LS_OK;
}

static ls_status fs_get(ls_objstore_t *os, const char *key, uint64_t off, uint64_t len,
                        ls_buf_t *out)
{
    fs_store_t *fs = (fs_store_t *)os;
    out->len = 0;
    int fd;
    uint64_t n;
    ls_status st = fs_open_range(fs, key, off, len, &fd, &n);
    if (st != LS_OK || n == 0) return st;
    ls_buf_reserve(out, (size_t)n);
    st = fs_pread_all(fs, fd, key, off, out->data, (size_t)n);
    if (st == LS_OK) out->len = (size_t)n;
    close(fd);
    return st;
}

/* Ranges from FS_MAP_MIN bytes up are mapped rather than copied: a cold
 * catch-up spent a quarter of the broker's CPU in pread's copy and another
 * fifth faulting in and zeroing the buffers it copied into (perf,
 * 2026-12-04); a mapping of the page cache costs neither. The pages are
 * populated at once with MADV_POPULATE_READ, which reports an I/O error as an
 * error (then the range is read with pread, which reports it the usual way)
 * instead of a SIGBUS on first touch. Objects are immutable and replaced by
 * rename, never truncated, so a mapping stays valid after a delete. The
 * mapping is private and writable: the read cache rewrites batch base
 * offsets in place (read_cache.c, only where they differ), and such a write
 * copies just that page. What is
 * left: a populated page the kernel later reclaims (clean page cache under
 * memory pressure) and fails to read back would raise SIGBUS — the risk every
 * mmap reader (Kafka's index files included) accepts. */
#define FS_MAP_MIN (256u * 1024)
#ifndef MADV_POPULATE_READ
#define MADV_POPULATE_READ 22
#endif

static ls_status fs_get_chunk(ls_objstore_t *os, const char *key, uint64_t off, uint64_t len,
                              ls_chunk_t **out)
{
    fs_store_t *fs = (fs_store_t *)os;
    *out = NULL;
    int fd;
    uint64_t n;
    ls_status st = fs_open_range(fs, key, off, len, &fd, &n);
    if (st != LS_OK) return st;
    if (n == 0) {
        *out = ls_chunk_new(0);
        return LS_OK;
    }
    if (n >= FS_MAP_MIN) {
        uint64_t page = (uint64_t)sysconf(_SC_PAGESIZE);
        uint64_t start = off - off % page;
        size_t maplen = (size_t)(off + n - start);
        void *map = mmap(NULL, maplen, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, (off_t)start);
        if (map != MAP_FAILED) {
            if (madvise(map, maplen, MADV_POPULATE_READ) == 0) {
                close(fd);
                *out = ls_chunk_mapped(map, maplen, (uint8_t *)map + (off - start), (size_t)n);
                return LS_OK;
            }
            munmap(map, maplen);
        }
    }
    ls_chunk_t *c = ls_chunk_new((size_t)n);
    st = fs_pread_all(fs, fd, key, off, c->data, (size_t)n);
    close(fd);
    if (st != LS_OK) {
        ls_chunk_release(c);
        return st;
    }
    *out = c;
    return LS_OK;
}

static ls_status fs_map(ls_objstore_t *os, const char *key, ls_chunk_t **out)
{
    fs_store_t *fs = (fs_store_t *)os;
    *out = NULL;
    int fd;
    uint64_t n;
    ls_status st = fs_open_range(fs, key, 0, UINT64_MAX, &fd, &n);
    if (st != LS_OK) return st;
    if (n == 0) {
        close(fd);
        *out = ls_chunk_new(0);
        return LS_OK;
    }
    void *map = mmap(NULL, (size_t)n, PROT_READ, MAP_PRIVATE, fd, 0);
    int e = errno;
    close(fd);
    if (map == MAP_FAILED) return fs_fail(fs, e, "mmap", key);
    *out = ls_chunk_mapped(map, (size_t)n, map, (size_t)n);
    return LS_OK;
}

static ls_status fs_head(ls_objstore_t *os, const char *key, ls_objinfo_t *info)
{
    fs_store_t *fs = (fs_store_t *)os;
    ls_status st = fs_check_key(fs, key, 0);
    if (st != LS_OK) return st;
    struct stat sb;
    if (fstatat(fs->rootfd, key, &sb, AT_SYMLINK_NOFOLLOW) != 0) {
        if (errno == ENOENT || errno == ENOTDIR) return LS_ENOTFOUND;
        return fs_fail(fs, errno, "stat", key);
    }
    if (!S_ISREG(sb.st_mode)) return LS_ENOTFOUND;
    info->key = NULL;
    info->size = (uint64_t)sb.st_size;
    info->mtime_ms = (int64_t)sb.st_mtim.tv_sec * 1000 + sb.st_mtim.tv_nsec / 1000000;
    return LS_OK;
}

static ls_status fs_del(ls_objstore_t *os, const char *key)
{
    fs_store_t *fs = (fs_store_t *)os;
    ls_status st = fs_check_key(fs, key, 0);
    if (st != LS_OK) return st;
    if (unlinkat(fs->rootfd, key, 0) != 0) {
        if (errno == ENOENT || errno == ENOTDIR || errno == EISDIR) return LS_OK;
        return fs_fail(fs, errno, "unlink", key);
    }
    return LS_OK;
}

typedef struct fs_listing {
    ls_objinfo_t *v;
    size_t n, cap;
} fs_listing_t;

static int fs_info_cmp(const void *a, const void *b)
{
    return strcmp(((const ls_objinfo_t *)a)->key, ((const ls_objinfo_t *)b)->key);
}

/* Adds the objects under directory dir ("" = root) whose keys start with prefix. */
static ls_status fs_walk(fs_store_t *fs, const char *dir, const char *prefix, size_t plen,
                         fs_listing_t *acc)
{
    int dfd = openat(fs->rootfd, dir[0] ? dir : ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd < 0) {
        if (errno == ENOENT || errno == ENOTDIR) return LS_OK;
        return fs_fail(fs, errno, "open", dir[0] ? dir : ".");
    }
    DIR *d = fdopendir(dfd);
    if (!d) {
        int e = errno;
        close(dfd);
        return fs_fail(fs, e, "opendir", dir[0] ? dir : ".");
    }
    ls_status st = LS_OK;
    for (;;) {
        errno = 0;
        struct dirent *de = readdir(d);
        if (!de) {
            if (errno) st = fs_fail(fs, errno, "readdir", dir[0] ? dir : ".");
            break;
        }
        const char *name = de->d_name;
        if (strcmp(name, ".") == 0 || strcmp(name, "..") == 0) continue;
        if (!dir[0] && strcmp(name, FS_TMP_DIR) == 0) continue;
        char *key = dir[0] ? ls_asprintf("%s/%s", dir, name) : ls_strdup(name);
        size_t klen = strlen(key);
        /* keep only keys on the way to, or under, the prefix */
        if (!ls_objstore_key_readable(key) || memcmp(key, prefix, klen < plen ? klen : plen) != 0)
            goto skip;
        struct stat sb;
        if (fstatat(dfd, name, &sb, AT_SYMLINK_NOFOLLOW) != 0) {
            if (errno == ENOENT) goto skip; /* deleted while we listed */
            st = fs_fail(fs, errno, "stat", key);
            ls_free(key);
            break;
        }
        if (S_ISDIR(sb.st_mode)) {
            if (klen >= plen || prefix[klen] == '/') st = fs_walk(fs, key, prefix, plen, acc);
            ls_free(key);
            if (st != LS_OK) break;
            continue;
        }
        if (!S_ISREG(sb.st_mode) || klen < plen) goto skip;
        if (acc->n == acc->cap) {
            acc->cap = acc->cap ? acc->cap * 2 : 64;
            acc->v = ls_realloc(acc->v, acc->cap * sizeof *acc->v);
        }
        acc->v[acc->n].key = key;
        acc->v[acc->n].size = (uint64_t)sb.st_size;
        acc->v[acc->n].mtime_ms = (int64_t)sb.st_mtim.tv_sec * 1000 + sb.st_mtim.tv_nsec / 1000000;
        acc->n++;
        continue;
    skip:
        ls_free(key);
    }
    closedir(d);
    return st;
}

static ls_status fs_list(ls_objstore_t *os, const char *prefix, ls_objinfo_t **out, size_t *n)
{
    fs_store_t *fs = (fs_store_t *)os;
    *out = NULL;
    *n = 0;
    if (!prefix) prefix = "";
    if (!ls_objstore_prefix_valid(prefix)) {
        fs_set_err(fs, "invalid list prefix '%s'", prefix);
        return LS_EINVAL;
    }
    if (strncmp(prefix, FS_TMP_DIR "/", sizeof FS_TMP_DIR) == 0)
        return LS_OK; /* the reserved temp area holds no objects */
    /* start at the deepest directory the prefix names completely */
    char dir[LS_OBJSTORE_KEY_MAX + 1];
    fs_parent(prefix, dir);
    fs_listing_t acc = {0};
    ls_status st = fs_walk(fs, dir, prefix, strlen(prefix), &acc);
    if (st != LS_OK) {
        ls_objinfo_free(acc.v, acc.n);
        return st;
    }
    if (acc.n) qsort(acc.v, acc.n, sizeof *acc.v, fs_info_cmp);
    *out = acc.v;
    *n = acc.n;
    return LS_OK;
}

static void fs_close(ls_objstore_t *os)
{
    fs_store_t *fs = (fs_store_t *)os;
    close(fs->rootfd);
    ls_free(fs->root);
    ls_free(fs);
}

/* A hard link published like a put (a temp name renamed over dst): the
 * bytes are written once, and deleting either name leaves the other. */
static ls_status fs_copy(ls_objstore_t *os, const char *src, const char *dst)
{
    fs_store_t *fs = (fs_store_t *)os;
    ls_status st = fs_check_key(fs, src, 0);
    if (st == LS_OK) st = fs_check_key(fs, dst, 1);
    if (st != LS_OK) return st;
    char tmp[64];
    snprintf(tmp, sizeof tmp, FS_TMP_DIR "/%ld-%lu.part", (long)getpid(),
             __atomic_add_fetch(&fs_tmp_seq, 1, __ATOMIC_RELAXED));
    if (linkat(fs->rootfd, src, fs->rootfd, tmp, 0) != 0) {
        int e = errno;
        if (e == ENOENT || e == ENOTDIR) {
            fs_set_err(fs, "copy %s: no such object", src);
            return LS_ENOTFOUND;
        }
        return fs_fail(fs, e, "link", src);
    }
    st = fs_publish(fs, tmp, dst, 0);
    if (st != LS_OK) unlinkat(fs->rootfd, tmp, 0);
    return st;
}

static const ls_objstore_ops_t fs_ops = {
    .name = "fs",
    .put = fs_put,
    .get = fs_get,
    .get_chunk = fs_get_chunk,
    .map = fs_map,
    .head = fs_head,
    .del = fs_del,
    .list = fs_list,
    .close = fs_close,
    .copy = fs_copy,
};

static int fs_pid_alive(long pid)
{
    if (pid <= 0) return 0;
    if (pid == (long)getpid()) return 1;
    return kill((pid_t)pid, 0) == 0 || errno == EPERM;
}

/* Removes temp files whose writer is gone (crashed mid-put). */
static void fs_clean_tmp(int rootfd, const char *root)
{
    int dfd = openat(rootfd, FS_TMP_DIR, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd < 0) return;
    DIR *d = fdopendir(dfd);
    if (!d) {
        close(dfd);
        return;
    }
    int removed = 0;
    struct dirent *de;
    while ((de = readdir(d))) {
        if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0) continue;
        char *end;
        long pid = strtol(de->d_name, &end, 10);
        if (end != de->d_name && *end == '-' && fs_pid_alive(pid)) continue;
        if (unlinkat(dfd, de->d_name, 0) == 0) removed++;
    }
    closedir(d);
    if (removed)
        LS_INFO("objstore", "fs: removed %d leftover temp file(s) under %s/" FS_TMP_DIR, removed,
                root);
}

static int fs_mkdir_p(const char *dir)
{
    char *path = ls_strdup(dir);
    int rc = 0;
    for (char *p = path + 1; *p; p++) {
        if (*p != '/') continue;
        *p = 0;
        if (mkdir(path, 0755) != 0 && errno != EEXIST) rc = -1;
        *p = '/';
        if (rc) goto out;
    }
    if (mkdir(path, 0755) != 0 && errno != EEXIST) rc = -1;
out:
    ls_free(path);
    return rc;
}

ls_objstore_t *ls_objstore_fs_open(const char *dir, int fsync_enabled, char *err, size_t errlen)
{
    char eb[128];
    if (!err || errlen == 0) err = eb, errlen = sizeof eb;
    err[0] = 0;
    if (!dir || !*dir) {
        snprintf(err, errlen, "object store directory is empty");
        return NULL;
    }
    if (fs_mkdir_p(dir) != 0) {
        snprintf(err, errlen, "cannot create object store directory %s: %s", dir, strerror(errno));
        return NULL;
    }
    int rootfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (rootfd < 0) {
        snprintf(err, errlen, "cannot open object store directory %s: %s", dir, strerror(errno));
        return NULL;
    }
    if (mkdirat(rootfd, FS_TMP_DIR, 0755) != 0 && errno != EEXIST) {
        snprintf(err, errlen, "cannot create %s/" FS_TMP_DIR ": %s", dir, strerror(errno));
        goto close_root;
    }
    fs_clean_tmp(rootfd, dir);
    fs_store_t *fs = LS_NEW(fs_store_t);
    fs->base.ops = &fs_ops;
    fs->root = ls_strdup(dir);
    fs->rootfd = rootfd;
    fs->fsync_enabled = fsync_enabled;
    return &fs->base;

close_root:
    close(rootfd);
    return NULL;
}
