build-s3/src/server/check.o: src/server/check.c src/server/check.h \
 src/base/alloc.h src/base/buf.h src/base/clock.h src/base/config.h \
 src/base/diag.h src/meta/meta.h src/base/status.h \
 src/objstore/objstore.h
src/server/check.h:
src/base/alloc.h:
src/base/buf.h:
src/base/clock.h:
src/base/config.h:
src/base/diag.h:
src/meta/meta.h:
src/base/status.h:
src/objstore/objstore.h:
