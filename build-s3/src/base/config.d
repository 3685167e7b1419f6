build-s3/src/base/config.o: src/base/config.c src/base/config.h \
 src/base/alloc.h src/base/buf.h src/base/diag.h
src/base/config.h:
src/base/alloc.h:
src/base/buf.h:
src/base/diag.h:
