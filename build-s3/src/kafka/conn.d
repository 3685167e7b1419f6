build-s3/src/kafka/conn.o: src/kafka/conn.c src/kafka/conn.h \
 src/server/broker.h src/base/config.h src/log/logstore.h \
 src/base/chunk.h src/base/status.h src/meta/meta.h \
 src/objstore/objstore.h src/base/buf.h src/stream/catalog.h \
 src/base/uuid.h src/base/alloc.h src/base/diag.h src/kafka/api.h \
 src/kafka/codec.h
src/kafka/conn.h:
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
src/kafka/api.h:
src/kafka/codec.h:
