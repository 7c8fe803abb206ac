/*
 * openapi.c - the OpenAPI specification compiled into the binary (the
 * build embeds api/openapi.yaml and the JSON made from it).
 */
#include "api.h"

extern const char api_openapi_yaml_text[];
extern const size_t api_openapi_yaml_text_len;
extern const char api_openapi_json_text[];
extern const size_t api_openapi_json_text_len;

const char *api_openapi_yaml(size_t *len)
{
    *len = api_openapi_yaml_text_len;
    return api_openapi_yaml_text;
}

const char *api_openapi_json(size_t *len)
{
    *len = api_openapi_json_text_len;
    return api_openapi_json_text;
}
