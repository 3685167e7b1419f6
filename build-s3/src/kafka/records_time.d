build-s3/src/kafka/records_time.o: src/kafka/records_time.c \
 src/kafka/records_time.h src/kafka/records.h
src/kafka/records_time.h:
src/kafka/records.h:
