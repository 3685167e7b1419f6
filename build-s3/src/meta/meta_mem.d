build-s3/src/meta/meta_mem.o: src/meta/meta_mem.c src/base/alloc.h \
 src/base/clock.h src/base/diag.h src/meta/meta.h src/base/status.h
src/base/alloc.h:
src/base/clock.h:
src/base/diag.h:
src/meta/meta.h:
src/base/status.h:
