/* The OpenAPI document of the REST API, built into the binary from
 * docs/api/openapi.json (the Makefile makes this object depend on it), so
 * the broker serves exactly the contract kept in the repository and never
 * fetches anything at run time. */
#include "api/rest_api.h"

__asm__(".section .rodata\n"
        ".global ls_api_openapi_doc\n"
        ".type ls_api_openapi_doc, @object\n"
        ".balign 16\n"
        "ls_api_openapi_doc:\n"
        ".incbin \"docs/api/openapi.json\"\n"
        ".byte 0\n"
        ".global ls_api_openapi_end\n"
        "ls_api_openapi_end:\n"
        ".previous\n");

extern const char ls_api_openapi_doc[];
extern const char ls_api_openapi_end[];

const char *ls_api_openapi(size_t *len)
{
    *len = (size_t)(ls_api_openapi_end - ls_api_openapi_doc) - 1;
    return ls_api_openapi_doc;
}
