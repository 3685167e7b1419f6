build-s3/src/main.o: src/main.c src/base/config.h src/base/diag.h \
 src/cli/cli.h src/server/broker.h src/base/config.h src/log/logstore.h \
 src/base/chunk.h src/base/status.h src/meta/meta.h \
 src/objstore/objstore.h src/base/buf.h src/stream/catalog.h \
 src/base/uuid.h src/server/check.h
src/base/config.h:
src/base/diag.h:
src/cli/cli.h:
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
src/server/check.h:
