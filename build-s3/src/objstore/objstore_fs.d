build-s3/src/objstore/objstore_fs.o: src/objstore/objstore_fs.c \
 src/base/alloc.h src/base/diag.h src/objstore/objstore.h src/base/buf.h \
 src/base/status.h
src/base/alloc.h:
src/base/diag.h:
src/objstore/objstore.h:
src/base/buf.h:
src/base/status.h:
