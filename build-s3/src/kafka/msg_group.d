build-s3/src/kafka/msg_group.o: src/kafka/msg_group.c \
 src/kafka/msg_group.h src/kafka/msg.h src/base/chunk.h src/kafka/codec.h \
 src/base/buf.h src/base/uuid.h
src/kafka/msg_group.h:
src/kafka/msg.h:
src/base/chunk.h:
src/kafka/codec.h:
src/base/buf.h:
src/base/uuid.h:
