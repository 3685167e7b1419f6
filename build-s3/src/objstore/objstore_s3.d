build-s3/src/objstore/objstore_s3.o: src/objstore/objstore_s3.c \
 src/base/alloc.h src/base/clock.h src/base/diag.h \
 src/objstore/objstore_s3.h src/objstore/objstore.h src/base/buf.h \
 src/base/status.h src/objstore/sigv4.h
src/base/alloc.h:
src/base/clock.h:
src/base/diag.h:
src/objstore/objstore_s3.h:
src/objstore/objstore.h:
src/base/buf.h:
src/base/status.h:
src/objstore/sigv4.h:
