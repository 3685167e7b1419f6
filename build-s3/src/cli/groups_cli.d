build-s3/src/cli/groups_cli.o: src/cli/groups_cli.c src/base/alloc.h \
 src/base/buf.h src/cli/cli.h src/kafka/msg.h src/base/chunk.h \
 src/kafka/codec.h src/base/uuid.h src/kafka/msg_group.h
src/base/alloc.h:
src/base/buf.h:
src/cli/cli.h:
src/kafka/msg.h:
src/base/chunk.h:
src/kafka/codec.h:
src/base/uuid.h:
src/kafka/msg_group.h:
