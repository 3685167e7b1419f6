build-s3/src/kafka/records.o: src/kafka/records.c src/kafka/records.h \
 src/base/buf.h src/base/compress.h src/base/status.h src/base/crc32c.h
src/kafka/records.h:
src/base/buf.h:
src/base/compress.h:
src/base/status.h:
src/base/crc32c.h:
