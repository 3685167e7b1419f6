build-s3/src/meta/meta.o: src/meta/meta.c src/meta/meta.h \
 src/base/status.h src/base/alloc.h src/base/diag.h
src/meta/meta.h:
src/base/status.h:
src/base/alloc.h:
src/base/diag.h:
