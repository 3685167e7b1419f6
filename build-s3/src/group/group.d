build-s3/src/group/group.o: src/group/group.c src/group/group.h \
 src/base/status.h src/base/alloc.h src/base/buf.h src/base/i64map.h \
 src/base/uuid.h
src/group/group.h:
src/base/status.h:
src/base/alloc.h:
src/base/buf.h:
src/base/i64map.h:
src/base/uuid.h:
