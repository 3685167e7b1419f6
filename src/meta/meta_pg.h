/* PostgreSQL metadata backend (meta_pg.c). */
#ifndef LS_META_PG_H
#define LS_META_PG_H
#include "meta/meta.h"

/* "postgresql://user@host:port/db?options" (or "postgres://..."); options:
 * sslmode, sslrootcert, sslcert, sslkey, connect_timeout, application_name,
 * password-file. NULL with err set when the URL is refused or the server
 * cannot be reached. */
ls_meta_t *ls_meta_pg_open(const char *url, char *err, size_t errlen);
#endif
