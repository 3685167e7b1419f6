build-s3/src/kafka/msg_common.o: src/kafka/msg_common.c src/kafka/msg.h \
 src/base/chunk.h src/kafka/codec.h src/base/buf.h src/base/uuid.h
src/kafka/msg.h:
src/base/chunk.h:
src/kafka/codec.h:
src/base/buf.h:
src/base/uuid.h:
