build-s3/src/base/diag.o: src/base/diag.c src/base/diag.h
src/base/diag.h:
