build-s3/src/log/wal_writer.o: src/log/wal_writer.c src/base/alloc.h \
 src/base/clock.h src/base/diag.h src/log/logstore_int.h src/base/buf.h \
 src/base/i64map.h src/log/log_meta.h src/base/status.h \
 src/log/logstore.h src/base/chunk.h src/meta/meta.h \
 src/objstore/objstore.h src/log/read_cache.h src/log/wal_format.h
src/base/alloc.h:
src/base/clock.h:
src/base/diag.h:
src/log/logstore_int.h:
src/base/buf.h:
src/base/i64map.h:
src/log/log_meta.h:
src/base/status.h:
src/log/logstore.h:
src/base/chunk.h:
src/meta/meta.h:
src/objstore/objstore.h:
src/log/read_cache.h:
src/log/wal_format.h:
