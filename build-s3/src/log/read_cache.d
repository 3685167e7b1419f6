build-s3/src/log/read_cache.o: src/log/read_cache.c src/log/read_cache.h \
 src/base/chunk.h src/base/status.h src/base/alloc.h src/base/buf.h
src/log/read_cache.h:
src/base/chunk.h:
src/base/status.h:
src/base/alloc.h:
src/base/buf.h:
