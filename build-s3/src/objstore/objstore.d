build-s3/src/objstore/objstore.o: src/objstore/objstore.c \
 src/objstore/objstore.h src/base/buf.h src/base/status.h \
 src/base/alloc.h src/base/config.h
src/objstore/objstore.h:
src/base/buf.h:
src/base/status.h:
src/base/alloc.h:
src/base/config.h:
