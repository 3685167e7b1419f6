build-s3/src/base/uuid.o: src/base/uuid.c src/base/uuid.h
src/base/uuid.h:
