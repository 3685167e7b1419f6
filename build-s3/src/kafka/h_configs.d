build-s3/src/kafka/h_configs.o: src/kafka/h_configs.c src/base/config.h \
 src/kafka/handlers.h src/kafka/api.h src/kafka/codec.h src/base/buf.h \
 src/base/chunk.h src/base/uuid.h src/kafka/msg.h src/server/broker.h \
 src/log/logstore.h src/base/status.h src/meta/meta.h \
 src/objstore/objstore.h src/stream/catalog.h
src/base/config.h:
src/kafka/handlers.h:
src/kafka/api.h:
src/kafka/codec.h:
src/base/buf.h:
src/base/chunk.h:
src/base/uuid.h:
src/kafka/msg.h:
src/server/broker.h:
src/log/logstore.h:
src/base/status.h:
src/meta/meta.h:
src/objstore/objstore.h:
src/stream/catalog.h:
