build-s3/src/stream/catalog.o: src/stream/catalog.c src/stream/catalog.h \
 src/base/status.h src/base/uuid.h src/meta/meta.h src/base/alloc.h \
 src/base/clock.h src/base/diag.h
src/stream/catalog.h:
src/base/status.h:
src/base/uuid.h:
src/meta/meta.h:
src/base/alloc.h:
src/base/clock.h:
src/base/diag.h:
