build-s3/src/base/i64map.o: src/base/i64map.c src/base/i64map.h \
 src/base/alloc.h
src/base/i64map.h:
src/base/alloc.h:
