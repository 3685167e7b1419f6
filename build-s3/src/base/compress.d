build-s3/src/base/compress.o: src/base/compress.c src/base/compress.h \
 src/base/buf.h src/base/status.h src/base/alloc.h
src/base/compress.h:
src/base/buf.h:
src/base/status.h:
src/base/alloc.h:
