build-s3/src/group/group_service.o: src/group/group_service.c \
 src/group/group_service.h src/group/group.h src/base/status.h \
 src/meta/meta.h src/stream/catalog.h src/base/uuid.h src/base/alloc.h \
 src/base/buf.h src/base/clock.h src/base/diag.h
src/group/group_service.h:
src/group/group.h:
src/base/status.h:
src/meta/meta.h:
src/stream/catalog.h:
src/base/uuid.h:
src/base/alloc.h:
src/base/buf.h:
src/base/clock.h:
src/base/diag.h:
