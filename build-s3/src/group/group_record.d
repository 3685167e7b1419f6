build-s3/src/group/group_record.o: src/group/group_record.c \
 src/base/alloc.h src/base/buf.h src/group/group.h src/base/status.h
src/base/alloc.h:
src/base/buf.h:
src/group/group.h:
src/base/status.h:
