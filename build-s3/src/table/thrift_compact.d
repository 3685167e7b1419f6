build-s3/src/table/thrift_compact.o: src/table/thrift_compact.c \
 src/table/thrift_compact.h src/base/buf.h
src/table/thrift_compact.h:
src/base/buf.h:
