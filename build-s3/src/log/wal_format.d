build-s3/src/log/wal_format.o: src/log/wal_format.c src/log/wal_format.h \
 src/base/buf.h src/base/status.h src/base/alloc.h src/base/crc32c.h
src/log/wal_format.h:
src/base/buf.h:
src/base/status.h:
src/base/alloc.h:
src/base/crc32c.h:
