build-s3/src/kafka/h_group.o: src/kafka/h_group.c src/base/alloc.h \
 src/base/clock.h src/group/group_service.h src/group/group.h \
 src/base/status.h src/meta/meta.h src/stream/catalog.h src/base/uuid.h \
 src/kafka/handlers.h src/kafka/api.h src/kafka/codec.h src/base/buf.h \
 src/base/chunk.h src/kafka/msg_group.h src/kafka/msg.h \
 src/server/broker.h src/base/config.h src/log/logstore.h \
 src/objstore/objstore.h
src/base/alloc.h:
src/base/clock.h:
src/group/group_service.h:
src/group/group.h:
src/base/status.h:
src/meta/meta.h:
src/stream/catalog.h:
src/base/uuid.h:
src/kafka/handlers.h:
src/kafka/api.h:
src/kafka/codec.h:
src/base/buf.h:
src/base/chunk.h:
src/kafka/msg_group.h:
src/kafka/msg.h:
src/server/broker.h:
src/base/config.h:
src/log/logstore.h:
src/objstore/objstore.h:
