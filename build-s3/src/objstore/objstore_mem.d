build-s3/src/objstore/objstore_mem.o: src/objstore/objstore_mem.c \
 src/base/alloc.h src/base/clock.h src/objstore/objstore.h src/base/buf.h \
 src/base/status.h
src/base/alloc.h:
src/base/clock.h:
src/objstore/objstore.h:
src/base/buf.h:
src/base/status.h:
