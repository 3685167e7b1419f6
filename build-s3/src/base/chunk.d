build-s3/src/base/chunk.o: src/base/chunk.c src/base/chunk.h \
 src/base/alloc.h
src/base/chunk.h:
src/base/alloc.h:
