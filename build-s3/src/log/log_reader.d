build-s3/src/log/log_reader.o: src/log/log_reader.c src/base/alloc.h \
 src/base/diag.h src/log/logstore_int.h src/base/buf.h src/base/i64map.h \
 src/log/log_meta.h src/base/status.h src/log/logstore.h src/base/chunk.h \
 src/meta/meta.h src/objstore/objstore.h src/log/read_cache.h
src/base/alloc.h:
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
