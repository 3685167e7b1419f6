build-s3/src/log/log_meta.o: src/log/log_meta.c src/log/log_meta.h \
 src/base/buf.h src/base/status.h src/base/alloc.h
src/log/log_meta.h:
src/base/buf.h:
src/base/status.h:
src/base/alloc.h:
