/* Private to registry/avro_view.c and json_infer.c: what the Avro views
 * and the inference of schemaless JSON schemas share. */
#ifndef LS_REGISTRY_AVRO_VIEW_INT_H
#define LS_REGISTRY_AVRO_VIEW_INT_H
#include <jansson.h>
#include <stdbool.h>

/* The JSON Schema type name of j's value ("integer" for integers; NULL for
 * null), or with article the phrase error messages use ("an integer",
 * "null"). */
const char *ls_json_kind(json_t *j, bool article);
#endif
