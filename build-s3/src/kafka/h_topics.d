build-s3/src/kafka/h_topics.o: src/kafka/h_topics.c src/base/alloc.h \
 src/base/diag.h src/kafka/handlers.h src/kafka/api.h src/kafka/codec.h \
 src/base/buf.h src/base/chunk.h src/base/uuid.h src/kafka/msg.h \
 src/server/broker.h src/base/config.h src/log/logstore.h \
 src/base/status.h src/meta/meta.h src/objstore/objstore.h \
 src/stream/catalog.h
src/base/alloc.h:
src/base/diag.h:
src/kafka/handlers.h:
src/kafka/api.h:
src/kafka/codec.h:
src/base/buf.h:
src/base/chunk.h:
src/base/uuid.h:
src/kafka/msg.h:
src/server/broker.h:
src/base/config.h:
src/log/logstore.h:
src/base/status.h:
src/meta/meta.h:
src/objstore/objstore.h:
src/stream/catalog.h:
