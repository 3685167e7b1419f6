build-s3/src/kafka/codec.o: src/kafka/codec.c src/kafka/codec.h \
 src/base/buf.h src/base/chunk.h src/base/uuid.h src/base/alloc.h
src/kafka/codec.h:
src/base/buf.h:
src/base/chunk.h:
src/base/uuid.h:
src/base/alloc.h:
