build-s3/src/kafka/api.o: src/kafka/api.c src/kafka/api.h \
 src/kafka/codec.h src/base/buf.h src/base/chunk.h src/base/uuid.h \
 src/kafka/handlers.h src/kafka/msg.h src/kafka/msg_group.h \
 src/base/status.h
src/kafka/api.h:
src/kafka/codec.h:
src/base/buf.h:
src/base/chunk.h:
src/base/uuid.h:
src/kafka/handlers.h:
src/kafka/msg.h:
src/kafka/msg_group.h:
src/base/status.h:
