/* The web console: static files (console/index.html, app.js, style.css)
 * built into the binary and served on the broker's HTTP listener at "/".
 * The page reads everything it shows from /api/v1 and /health in the
 * browser, so any broker of a cluster serves the same console; nothing is
 * fetched from outside the broker at run time.
 *
 * Stateless: the files are read-only data in the binary; the handler runs
 * on any HTTP server thread. */
#ifndef LS_CONSOLE_CONSOLE_H
#define LS_CONSOLE_CONSOLE_H
#include "http/http_server.h"

/* The mount's handler (prefix "", mounted last so it only sees paths no
 * other mount claims; arg unused). GET/HEAD of "/" or a console file. */
void ls_console_handle(void *arg, const ls_http_request_t *req, ls_http_response_t *resp);
#endif
