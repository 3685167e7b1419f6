build-s3/src/objstore/sigv4.o: src/objstore/sigv4.c src/objstore/sigv4.h \
 src/base/buf.h src/base/alloc.h
src/objstore/sigv4.h:
src/base/buf.h:
src/base/alloc.h:
