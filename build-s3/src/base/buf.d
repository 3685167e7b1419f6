build-s3/src/base/buf.o: src/base/buf.c src/base/buf.h src/base/alloc.h
src/base/buf.h:
src/base/alloc.h:
