/* The console's static files, included verbatim with .incbin (as
 * src/api/openapi.c includes the OpenAPI document): the sources stay
 * readable in console/, the Makefile makes this object depend on them, and
 * the broker needs no files beside its binary. */
#include "console/console.h"

#include <string.h>

#include "base/buf.h"

#define LS_CONSOLE_ASSET(sym, file)                                                                \
    __asm__(".section .rodata\n"                                                                   \
            ".global " #sym "\n"                                                                   \
            ".balign 16\n" #sym ":\n"                                                              \
            ".incbin \"" file "\"\n"                                                               \
            ".global " #sym "_end\n" #sym "_end:\n"                                                \
            ".previous\n");                                                                        \
    extern const char sym[];                                                                       \
    extern const char sym##_end[];

LS_CONSOLE_ASSET(ls_console_index_html, "console/index.html")
LS_CONSOLE_ASSET(ls_console_app_js, "console/app.js")
LS_CONSOLE_ASSET(ls_console_style_css, "console/style.css")

typedef struct asset {
    const char *path;
    const char *type;
    const char *start;
    const char *end;
} asset_t;

static const asset_t ASSETS[] = {
    {"/", "text/html; charset=utf-8", ls_console_index_html, ls_console_index_html_end},
    {"/index.html", "text/html; charset=utf-8", ls_console_index_html, ls_console_index_html_end},
    {"/app.js", "text/javascript; charset=utf-8", ls_console_app_js, ls_console_app_js_end},
    {"/style.css", "text/css; charset=utf-8", ls_console_style_css, ls_console_style_css_end},
};

void ls_console_handle(void *arg, const ls_http_request_t *req, ls_http_response_t *resp)
{
    (void)arg;
    for (size_t i = 0; i < sizeof ASSETS / sizeof ASSETS[0]; i++) {
        if (strcmp(req->path, ASSETS[i].path)) continue;
        if (strcmp(req->method, "GET") && strcmp(req->method, "HEAD")) {
            ls_http_error(resp, 405, "MethodNotAllowedException", "%s takes GET or HEAD",
                          ASSETS[i].path);
            return;
        }
        resp->status = 200;
        resp->content_type = ASSETS[i].type;
        ls_buf_append(&resp->body, ASSETS[i].start, (size_t)(ASSETS[i].end - ASSETS[i].start));
        return;
    }
    ls_http_error(resp, 404, "NotFoundException", "no resource at %.200s", req->path);
}
