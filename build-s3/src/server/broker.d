build-s3/src/server/broker.o: src/server/broker.c src/server/broker.h \
 src/base/config.h src/log/logstore.h src/base/chunk.h src/base/status.h \
 src/meta/meta.h src/objstore/objstore.h src/base/buf.h \
 src/stream/catalog.h src/base/uuid.h src/base/alloc.h src/base/diag.h \
 src/group/group_service.h src/group/group.h src/kafka/conn.h \
 src/kafka/records_time.h
src/server/broker.h:
src/base/config.h:
src/log/logstore.h:
src/base/chunk.h:
src/base/status.h:
src/meta/meta.h:
src/objstore/objstore.h:
src/base/buf.h:
src/stream/catalog.h:
src/base/uuid.h:
src/base/alloc.h:
src/base/diag.h:
src/group/group_service.h:
src/group/group.h:
src/kafka/conn.h:
src/kafka/records_time.h:
