build-s3/src/base/alloc.o: src/base/alloc.c src/base/alloc.h
src/base/alloc.h:
