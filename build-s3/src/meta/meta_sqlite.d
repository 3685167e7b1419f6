build-s3/src/meta/meta_sqlite.o: src/meta/meta_sqlite.c src/base/alloc.h \
 src/base/clock.h src/base/diag.h src/meta/meta.h src/base/status.h
src/base/alloc.h:
src/base/clock.h:
src/base/diag.h:
src/meta/meta.h:
src/base/status.h:
