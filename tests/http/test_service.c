/*
 * test_service.c - the service endpoints: /healthz, /readyz, /info,
 * /openapi.json, /openapi.yaml, /metrics and the index page.
 */
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "tests.h"

static void check_ctype(const char *label, const http_resp *r, const char *want)
{
    char ct[128] = "";
    http_header(r, "Content-Type", ct, sizeof ct);
    CHECK(strncasecmp(ct, want, strlen(want)) == 0, label, "Content-Type \"%s\", want %s...", ct,
          want);
}

static void info(const server *s)
{
    const char *L = "GET /info";
    http_resp r;
    http_get(s, "/info", &r);
    if (expect_ok(L, &r)) {
        check_ctype(L, &r, "application/json");
        const char *v = jstr(r.json, "version");
        CHECK(v && *v, L, "\"version\" missing");
        json_t *models = json_object_get(r.json, "models");
        json_t *m = NULL;
        for (size_t i = 0; json_is_array(models) && i < json_array_size(models); i++) {
            const char *n = jstr(json_array_get(models, i), "name");
            if (n && strcmp(n, "default") == 0)
                m = json_array_get(models, i);
        }
        if (CHECK(m != NULL, L, "models[] has no model named \"default\"")) {
            CHECK(jint(m, "d_model", -1) == 512, L, "default d_model %lld", jint(m, "d_model", -1));
            CHECK(jint(m, "heads", -1) == 8, L, "default heads %lld", jint(m, "heads", -1));
            CHECK(jint(m, "kv_heads", -1) == 8, L, "default kv_heads %lld",
                  jint(m, "kv_heads", -1));
            CHECK(jint(m, "head_dim", -1) == 64, L, "default head_dim %lld",
                  jint(m, "head_dim", -1));
            const char *sc = jstr(m, "scheme");
            CHECK(sc && strcmp(sc, "sinusoidal") == 0, L, "default scheme %s", sc ? sc : "(none)");
            static const char *keys[] = {"architecture", "layer", "dtype", "params", "source"};
            for (size_t i = 0; i < 5; i++)
                CHECK(json_object_get(m, keys[i]) != NULL, L, "models[default] lacks \"%s\"",
                      keys[i]);
            json_t *p = json_object_get(m, "params");
            if (json_is_object(p)) {
                json_t *base = json_object_get(p, "base");
                const char *lay = jstr(p, "layout");
                CHECK((!base || json_number_value(base) == 10000.0) &&
                          (!lay || strcmp(lay, "interleaved") == 0),
                      L, "default params should be base 10000, layout interleaved");
            }
        }
        CHECK(strstr(r.body, "65536") != NULL, L, "limits (max_tokens 65536) not reported");
    }
    http_resp_free(&r);
}

static void openapi(const server *s)
{
    const char *L = "GET /openapi.json";
    http_resp r;
    http_get(s, "/openapi.json", &r);
    if (expect_ok(L, &r)) {
        check_ctype(L, &r, "application/json");
        CHECK(json_is_string(json_object_get(r.json, "openapi")), L, "no \"openapi\" version");
        json_t *paths = json_object_get(r.json, "paths");
        CHECK(json_is_object(paths) && json_object_get(paths, "/encode") &&
                  json_object_get(paths, "/apply"),
              L, "\"paths\" lacks /encode or /apply");
    }
    http_resp_free(&r);
    L = "GET /openapi.yaml";
    http_get(s, "/openapi.yaml", &r);
    CHECK(r.status == 200, L, "got %ld", r.status);
    CHECK(r.body && strstr(r.body, "openapi:") && strstr(r.body, "/encode:") &&
              strstr(r.body, "/apply:"),
          L, "YAML lacks openapi:, /encode: or /apply:");
    char ct[128] = "";
    http_header(&r, "Content-Type", ct, sizeof ct);
    CHECK(strstr(ct, "yaml") != NULL, L, "Content-Type \"%s\" is not a YAML type", ct);
    http_resp_free(&r);
}

void test_service(const server *s)
{
    http_resp r;
    http_get(s, "/healthz", &r);
    CHECK(r.status == 200, "GET /healthz", "got %ld (%s)", r.status, r.transport_error);
    http_resp_free(&r);
    http_get(s, "/readyz", &r);
    CHECK(r.status == 200, "GET /readyz", "got %ld", r.status);
    http_resp_free(&r);
    info(s);
    openapi(s);
    /* a request to count, then the metrics */
    http_post_json(s, "/encode", "{\"shape\":[2,4]}", &r);
    http_resp_free(&r);
    const char *L = "GET /metrics";
    http_get(s, "/metrics", &r);
    CHECK(r.status == 200, L, "got %ld", r.status);
    check_ctype(L, &r, "text/plain");
    CHECK(r.body && strstr(r.body, "posenc_requests_total"), L, "no posenc_requests_total");
    CHECK(r.body && strstr(r.body, "_bucket{"), L, "no latency histogram (_bucket series)");
    CHECK(r.body && strstr(r.body, "/encode"), L, "requests are not labelled by route");
    http_resp_free(&r);
    L = "GET /";
    http_get(s, "/", &r);
    CHECK(r.status == 200, L, "got %ld", r.status);
    check_ctype(L, &r, "text/html");
    http_resp_free(&r);
}
