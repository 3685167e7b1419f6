build-s3/src/objstore/objstore_faulty.o: src/objstore/objstore_faulty.c \
 src/objstore/objstore_faulty.h src/objstore/objstore.h src/base/buf.h \
 src/base/status.h src/base/alloc.h src/base/clock.h
src/objstore/objstore_faulty.h:
src/objstore/objstore.h:
src/base/buf.h:
src/base/status.h:
src/base/alloc.h:
src/base/clock.h:
