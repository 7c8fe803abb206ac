/*
 * test_diagnose.c - POST /diagnose over HTTP. Every subject is computed
 * here by a small reference of the BUGGY variant, written from the
 * formulas (long double/double, libm), not with posenc's kernels. For each
 * finding code: the verdict, the code, its evidence values, and that
 * `best` sent back to /encode (or /apply) reproduces the subject within
 * the tolerance - for the codes /encode cannot express, after the finding
 * is applied to /encode's answer here. Also: random subjects ->
 * unexplained, exact ones -> match, float32 angles at 10^5 -> match with
 * low_precision, and the errors (two subjects, none, bad shapes).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "refs.h"
#include "tests.h"

#define TOL 1e-4 /* the contract's default atol (rtol adds |want|*1e-4) */

/* ---- helpers ---------------------------------------------------------- */

static void put_array(sbuf *b, const char *key, const float *v, int ndim, const size_t *shape)
{
    sb_printf(b, "\"%s\":", key);
    sb_farray(b, v, ndim, shape);
}

/* The finding with `code` in a response, or NULL. */
static const json_t *finding(const http_resp *r, const char *code)
{
    const json_t *list = r->json ? json_object_get(r->json, "findings") : NULL;
    size_t i;
    const json_t *f;

    json_array_foreach (list, i, f) {
        const char *c = jstr(f, "code");
        if (c && strcmp(c, code) == 0)
            return f;
    }
    return NULL;
}

const json_t *diagnose_finding(const http_resp *r, const char *code)
{
    return finding(r, code);
}

static double evidence_number(const json_t *f, const char *key)
{
    const json_t *v = f ? json_object_get(json_object_get(f, "evidence"), key) : NULL;
    return json_is_number(v) ? json_number_value(v) : NAN;
}

static const char *evidence_string(const json_t *f, const char *key)
{
    const json_t *ev = f ? json_object_get(f, "evidence") : NULL;
    return ev ? jstr(ev, key) : NULL;
}

/* POST /diagnose, expect 200 with `verdict` and (code != NULL) a finding
 * of that code; returns that finding (borrowed from r). */
static const json_t *diagnose(const server *s, const char *label, const char *body,
                              const char *verdict, const char *code, http_resp *r)
{
    http_post_json(s, "/diagnose", body, r);
    if (!expect_ok(label, r))
        return NULL;
    const char *v = jstr(r->json, "verdict");
    CHECK(v && strcmp(v, verdict) == 0, label, "verdict %s, want %s (body: %.600s)",
          v ? v : "(none)", verdict, r->body);
    if (!code)
        return NULL;
    const json_t *f = finding(r, code);
    CHECK(f != NULL, label, "no finding %s (body: %.600s)", code, r->body);
    CHECK(!f || (jstr(f, "message") && strlen(jstr(f, "message")) > 10), label,
          "finding %s has no message", code);
    return f;
}

/* `best` of a response as a request body, with `extra` members (JSON text
 * without braces) added; caller frees. */
static char *best_body(const http_resp *r, const char *extra)
{
    json_t *best = json_deep_copy(json_object_get(r->json, "best"));
    if (!best)
        return NULL;
    json_object_del(best, "max_abs_error");
    json_object_del(best, "max_rel_error");
    /* best carries the claim's model (an inline one as sent); a caller
     * that adds it again in extra keeps its own */
    if (json_is_null(json_object_get(best, "model")) || strstr(extra, "\"model\""))
        json_object_del(best, "model");
    char *text = json_dumps(best, JSON_COMPACT);
    json_decref(best);
    sbuf b;
    sb_init(&b);
    text[strlen(text) - 1] = '\0'; /* the closing brace */
    sb_printf(&b, "%s%s%s}", text, strlen(text) > 1 ? "," : "", extra);
    free(text);
    return b.s;
}

/* |got - want| <= TOL + TOL*|want| everywhere (the default tolerance). */
static void check_within(const char *label, const char *what, const float *got, const float *want,
                         size_t n, double tol)
{
    double worst = 0;
    size_t at = 0, bad = 0;
    for (size_t i = 0; i < n; i++) {
        double e = fabs((double)got[i] - (double)want[i]);
        if (e > tol + tol * fabs((double)want[i]))
            bad++;
        if (e > worst) {
            worst = e;
            at = i;
        }
    }
    CHECK(bad == 0, label, "%s: %zu of %zu values outside tolerance %g (worst %g at %zu)", what,
          bad, n, tol, worst, at);
}

/* Send `best` (+ extra) to path and read `key`, n floats, into out. */
static bool best_reproduce(const server *s, const char *label, const http_resp *r, const char *path,
                           const char *extra, const char *key, float *out, size_t n)
{
    char *body = best_body(r, extra);
    http_resp rr;
    farr a = {0};
    http_post_json(s, path, body, &rr);
    bool ok = expect_ok(label, &rr) && get_farr(label, &rr, key, &a);
    if (ok) {
        CHECK(a.n == n, label, "best via %s: %zu values, want %zu", path, a.n, n);
        ok = a.n == n;
        if (ok)
            memcpy(out, a.v, n * sizeof *out);
    }
    farr_free(&a);
    http_resp_free(&rr);
    free(body);
    return ok;
}

float diagnose_bf16(float x)
{
    uint32_t u;
    memcpy(&u, &x, 4);
    u = (u + 0x7FFFu + ((u >> 16) & 1u)) & 0xFFFF0000u;
    memcpy(&x, &u, 4);
    return x;
}

/* ---- sinusoidal ------------------------------------------------------- */

/* A (possibly buggy) sinusoidal implementation. */
typedef struct sin_impl {
    double base;
    double exp_num;  /* exponent exp_num*i/d: 2 correct, 1 the pair-index bug */
    bool split;      /* ceil(d/2) sines then cosines */
    bool swap;       /* cos where sin belongs */
    bool transposed; /* written [d][tokens] */
    int64_t offset;
    double scale; /* embed_scale (with x) */
    bool f32;     /* angles in float32 */
} sin_impl;

/* out = scale*x + PE (x NULL: the table), [T][d] or [d][T]. */
static void sin_make(const sin_impl *m, const float *x, size_t T, size_t d, int64_t start,
                     float *out)
{
    for (size_t t = 0; t < T; t++)
        for (size_t i = 0; i < d / 2; i++) {
            double p = (double)(start + (int64_t)t + m->offset);
            double w = pow(m->base, -m->exp_num * (double)i / (double)d), sv, cv;
            if (m->f32) {
                float th = (float)w * (float)p;
                sv = sinf(th);
                cv = cosf(th);
            } else {
                sv = sin(w * p);
                cv = cos(w * p);
            }
            if (m->swap) {
                double tmp = sv;
                sv = cv;
                cv = tmp;
            }
            size_t js = m->split ? i : 2 * i, jc = m->split ? d / 2 + i : 2 * i + 1;
            double vs = sv + (x ? m->scale * x[t * d + js] : 0);
            double vc = cv + (x ? m->scale * x[t * d + jc] : 0);
            if (m->transposed) {
                out[js * T + t] = (float)vs;
                out[jc * T + t] = (float)vc;
            } else {
                out[t * d + js] = (float)vs;
                out[t * d + jc] = (float)vc;
            }
        }
}

static sin_impl sin_default(void)
{
    return (sin_impl){.base = 10000, .exp_num = 2, .scale = 1};
}

/* A table subject: diagnose, check, reproduce through /encode. */
static void sin_table_case(const server *s, const char *label, const sin_impl *m,
                           const char *verdict, const char *code, const char *ev_key,
                           double ev_want, const char *ev_str)
{
    size_t T = 96, d = 32;
    float *sub = xmalloc(T * d * sizeof *sub), *got = xmalloc(T * d * sizeof *got);
    sin_make(m, NULL, T, d, 0, sub);
    sbuf b;
    sb_init(&b);
    sb_puts(&b, "{\"scheme\":\"sinusoidal\",");
    put_array(&b, "table", sub, 2, m->transposed ? (size_t[]){d, T} : (size_t[]){T, d});
    sb_puts(&b, "}");
    http_resp r;
    const json_t *f = diagnose(s, label, b.s, verdict, code, &r);
    if (f && ev_key && !ev_str)
        CHECK(fabs(evidence_number(f, ev_key) - ev_want) <= 1e-6 * fabs(ev_want), label,
              "evidence %s = %g, want %g", ev_key, evidence_number(f, ev_key), ev_want);
    if (f && ev_str) {
        const char *e = evidence_string(f, ev_key);
        CHECK(e && strstr(e, ev_str), label, "evidence %s = %s, want %s", ev_key, e ? e : "(none)",
              ev_str);
    }
    char shape[64];
    snprintf(shape, sizeof shape, "\"shape\":[%zu,%zu]", T, d);
    if (r.json && best_reproduce(s, label, &r, "/encode", shape, "encoded", got, T * d)) {
        float *applied = xmalloc(T * d * sizeof *applied);
        for (size_t t = 0; t < T; t++)
            for (size_t j = 0; j < d; j++) {
                /* the findings /encode cannot express, applied to its answer */
                size_t jj = m->swap ? (j ^ 1) : j;
                float v = got[t * d + jj];
                applied[m->transposed ? j * T + t : t * d + j] = v;
            }
        check_within(label, "best via /encode vs the subject", applied, sub, T * d, TOL);
        free(applied);
    }
    http_resp_free(&r);
    sb_free(&b);
    free(sub);
    free(got);
}

static void sinusoidal_cases(const server *s)
{
    sin_impl m = sin_default();
    sin_table_case(s, "diagnose sinusoidal exact -> match", &m, "match", NULL, NULL, 0, NULL);
    m = sin_default();
    m.split = true;
    sin_table_case(s, "diagnose sinusoidal split table -> layout_swapped", &m, "explained",
                   "layout_swapped", "layout", 0, "split");
    m = sin_default();
    m.swap = true;
    sin_table_case(s, "diagnose sinusoidal cos/sin swapped -> sin_cos_swapped", &m, "explained",
                   "sin_cos_swapped", NULL, 0, NULL);
    m = sin_default();
    m.offset = 2;
    sin_table_case(s, "diagnose sinusoidal positions from 2 -> position_offset", &m, "explained",
                   "position_offset", "offset", 2, NULL);
    m = sin_default();
    m.base = 5000;
    sin_table_case(s, "diagnose sinusoidal base 5000 -> base_mismatch", &m, "explained",
                   "base_mismatch", "base", 5000, NULL);
    m = sin_default();
    m.exp_num = 1; /* i/d: exactly base^(1/2) = 100 */
    sin_table_case(s, "diagnose sinusoidal exponent i/d -> frequency_formula", &m, "explained",
                   "frequency_formula", "base", 100, NULL);
    m = sin_default();
    m.transposed = true;
    sin_table_case(s, "diagnose sinusoidal [d][tokens] -> transposed", &m, "explained",
                   "transposed", NULL, 0, NULL);
    m = sin_default();
    m.split = true;
    m.offset = 1;
    sin_table_case(s, "diagnose sinusoidal split + offset 1 -> layout_swapped", &m, "explained",
                   "layout_swapped", "layout", 0, "split");

    /* embed_scale: embeddings + encoded, scaled by sqrt(d) where 1 was claimed */
    size_t T = 48, d = 64;
    float *x = xmalloc(T * d * sizeof *x), *enc = xmalloc(T * d * sizeof *enc);
    float *got = xmalloc(T * d * sizeof *got);
    trng g;
    trng_seed(&g, 12);
    trng_fill(&g, x, T * d, -1, 1);
    m = sin_default();
    m.scale = 8;
    sin_make(&m, x, T, d, 0, enc);
    sbuf b;
    sb_init(&b);
    sb_puts(&b, "{\"scheme\":\"sinusoidal\",");
    put_array(&b, "embeddings", x, 2, (size_t[]){T, d});
    sb_puts(&b, ",");
    put_array(&b, "encoded", enc, 2, (size_t[]){T, d});
    sb_puts(&b, "}");
    const char *L = "diagnose sinusoidal embed_scale 8 -> embed_scale";
    http_resp r;
    const json_t *f = diagnose(s, L, b.s, "explained", "embed_scale", &r);
    if (f)
        CHECK(fabs(evidence_number(f, "embed_scale") - 8) < 1e-5, L, "embed_scale %g, want 8",
              evidence_number(f, "embed_scale"));
    sbuf extra;
    sb_init(&extra);
    put_array(&extra, "embeddings", x, 2, (size_t[]){T, d});
    if (r.json && best_reproduce(s, L, &r, "/encode", extra.s, "encoded", got, T * d))
        check_within(L, "best via /encode vs the subject", got, enc, T * d, TOL);
    http_resp_free(&r);
    sb_free(&extra);
    sb_free(&b);

    /* float32 angles at position 10^5: the precision HF computes in -> match */
    T = 64;
    d = 32;
    m = sin_default();
    m.f32 = true;
    sin_make(&m, NULL, T, d, 100000, enc);
    sb_init(&b);
    sb_puts(&b, "{\"scheme\":\"sinusoidal\",\"offset\":100000,");
    put_array(&b, "table", enc, 2, (size_t[]){T, d});
    sb_puts(&b, ",\"tolerance\":{\"atol\":1.0e-4,\"rtol\":1.0e-4}}");
    L = "diagnose sinusoidal float32 angles at 10^5 -> match + low_precision float32";
    f = diagnose(s, L, b.s, "match", "low_precision", &r);
    if (f) {
        const char *p = evidence_string(f, "precision");
        CHECK(p && strcmp(p, "float32") == 0, L, "precision %s", p ? p : "(none)");
    }
    http_resp_free(&r);
    sb_free(&b);

    /* random numbers: nothing explains them */
    trng_fill(&g, enc, T * d, -1, 1);
    sb_init(&b);
    sb_puts(&b, "{\"scheme\":\"sinusoidal\",");
    put_array(&b, "table", enc, 2, (size_t[]){T, d});
    sb_puts(&b, ",\"return_map\":true}");
    L = "diagnose sinusoidal random table -> unexplained, error_map";
    diagnose(s, L, b.s, "unexplained", NULL, &r);
    farr map = {0};
    if (r.json && get_farr(L, &r, "error_map", &map)) {
        check_shape(L, "error_map", &map, 2, (size_t[]){T, d});
        /* independent: |subject - the exact table| */
        sin_impl exact = sin_default();
        sin_make(&exact, NULL, T, d, 0, got);
        for (size_t i = 0; i < T * d; i++)
            got[i] = fabsf(enc[i] - got[i]);
        check_within(L, "error_map vs |subject - reference|", map.v, got, T * d, 1e-6);
        farr_free(&map);
    }
    http_resp_free(&r);
    sb_free(&b);
    free(x);
    free(enc);
    free(got);
}

/* ---- RoPE --------------------------------------------------------------- */

/* A (possibly buggy) RoPE implementation. */
typedef struct rope_impl {
    double base;
    size_t hd, rd;
    double fd;        /* the exponent's denominator: rd correct */
    bool interleaved; /* pairs (2i, 2i+1), else (i, i + rd/2) */
    bool reversed;    /* rotates by -theta */
    bool swap;        /* the cache's cos holds the sines */
    int64_t offset;
    double linear;          /* frequencies divided by it */
    double att;             /* on cos and sin */
    bool bf16;              /* angles and cos/sin in bfloat16 */
    const long double *inv; /* given frequencies (scaled ones), else base */
} rope_impl;

static rope_impl rope_default(size_t hd)
{
    return (rope_impl){.base = 10000, .hd = hd, .rd = hd, .fd = (double)hd, .linear = 1, .att = 1};
}

static void rope_cs(const rope_impl *m, size_t i, int64_t pos, double *c, double *s)
{
    double w = m->inv ? (double)m->inv[i] : pow(m->base, -2.0 * (double)i / m->fd) / m->linear;
    double p = (double)(pos + m->offset);
    if (m->bf16) {
        float th = diagnose_bf16(diagnose_bf16((float)w) * diagnose_bf16((float)p));
        *c = diagnose_bf16(diagnose_bf16(cosf(th)) * (float)m->att);
        *s = diagnose_bf16(diagnose_bf16(sinf(th)) * (float)m->att);
    } else {
        *c = cos(w * p) * m->att;
        *s = sin(w * p) * m->att;
    }
    if (m->reversed)
        *s = -*s;
}

/* A cos/sin cache [T][w]: w = rd/2 (one column per frequency) or rd (HF's
 * duplicated halves, or repeat_interleave when interleaved). */
static void rope_cache(const rope_impl *m, size_t T, size_t w, float *co, float *si)
{
    for (size_t t = 0; t < T; t++)
        for (size_t j = 0; j < w; j++) {
            size_t i = w == m->rd / 2 ? j : m->interleaved ? j / 2 : j % (m->rd / 2);
            double c, s;
            rope_cs(m, i, (int64_t)t, &c, &s);
            co[t * w + j] = (float)(m->swap ? s : c);
            si[t * w + j] = (float)(m->swap ? c : s);
        }
}

/* y = x rotated per head of m->hd ([T][width]). */
static void rope_encode(const rope_impl *m, const float *x, size_t T, size_t width, float *y)
{
    memcpy(y, x, T * width * sizeof *y);
    for (size_t t = 0; t < T; t++)
        for (size_t h = 0; h < width / m->hd; h++)
            for (size_t i = 0; i < m->rd / 2; i++) {
                size_t a = h * m->hd + (m->interleaved ? 2 * i : i);
                size_t b = h * m->hd + (m->interleaved ? 2 * i + 1 : i + m->rd / 2);
                double c, s, xa = x[t * width + a], xb = x[t * width + b];
                rope_cs(m, i, (int64_t)t, &c, &s);
                y[t * width + a] = (float)(xa * c - xb * s);
                y[t * width + b] = (float)(xb * c + xa * s);
            }
}

/* best.params of a rope answer. */
static void best_rope(const http_resp *r, size_t *hd, size_t *rd, bool *interleaved)
{
    const json_t *p = json_object_get(json_object_get(r->json, "best"), "params");
    *hd = (size_t)jint(p, "head_dim", 0);
    *rd = (size_t)jint(p, "rotary_dim", 0);
    const char *l = jstr(p, "layout");
    *interleaved = l && strcmp(l, "interleaved") == 0;
}

/* The cache best predicts, through /encode: embeddings whose pairs are
 * (1, 0) rotate into (cos, sin) of every frequency; then laid out as the
 * subject (width w). */
static bool cache_via_encode(const server *s, const char *label, const http_resp *r, size_t T,
                             size_t w, float *co, float *si)
{
    size_t hd, rd;
    bool il;
    best_rope(r, &hd, &rd, &il);
    if (!hd || !rd) {
        CHECK(false, label, "best has no head_dim/rotary_dim");
        return false;
    }
    float *x = xcalloc(T * hd, sizeof *x), *y = xmalloc(T * hd * sizeof *y);
    for (size_t t = 0; t < T; t++)
        for (size_t i = 0; i < rd / 2; i++)
            x[t * hd + (il ? 2 * i : i)] = 1;
    sbuf extra;
    sb_init(&extra);
    put_array(&extra, "embeddings", x, 2, (size_t[]){T, hd});
    bool ok = best_reproduce(s, label, r, "/encode", extra.s, "encoded", y, T * hd);
    for (size_t t = 0; ok && t < T; t++)
        for (size_t j = 0; j < w; j++) {
            size_t i = w == rd / 2 ? j : il ? j / 2 : j % (rd / 2);
            co[t * w + j] = y[t * hd + (il ? 2 * i : i)];
            si[t * w + j] = y[t * hd + (il ? 2 * i + 1 : i + rd / 2)];
        }
    sb_free(&extra);
    free(x);
    free(y);
    return ok;
}

typedef struct rope_case {
    const char *label, *params; /* the claim's params */
    const char *verdict, *code, *ev_key, *ev_str;
    double ev_want, ev_tol;
    double reproduce_tol; /* TOL, or what a low precision explains */
    const char *also;     /* a second code that must be found, or NULL */
    const char *absent;   /* a code that must not be found, or NULL */
    const char *unsaid;   /* words no message may hold, or NULL */
} rope_case;

static void check_also_absent(const http_resp *r, const rope_case *c)
{
    if (c->also)
        CHECK(finding(r, c->also) != NULL, c->label, "no finding %s beside %s", c->also, c->code);
    if (c->absent)
        CHECK(finding(r, c->absent) == NULL, c->label, "finding %s (body: %.600s)", c->absent,
              r->body);
    if (c->unsaid && r->body)
        CHECK(!strstr(r->body, c->unsaid), c->label, "a message says \"%s\"", c->unsaid);
}

static void check_evidence(const char *label, const json_t *f, const rope_case *c)
{
    if (!f || !c->ev_key)
        return;
    const json_t *obj = json_object_get(json_object_get(f, "evidence"), c->ev_key);
    if (c->ev_str && json_is_object(obj)) {         /* a member of an object, as compact JSON */
        char *text = json_dumps(obj, JSON_COMPACT); /* new */
        CHECK(text && strstr(text, c->ev_str), label, "evidence %s = %s, want %s in it", c->ev_key,
              text ? text : "(none)", c->ev_str);
        free(text);
    } else if (c->ev_str) {
        const char *e = evidence_string(f, c->ev_key);
        CHECK(e && strstr(e, c->ev_str), label, "evidence %s = %s, want %s", c->ev_key,
              e ? e : "(none)", c->ev_str);
    } else {
        double v = evidence_number(f, c->ev_key);
        CHECK(fabs(v - c->ev_want) <= c->ev_tol, label, "evidence %s = %.9g, want %.9g", c->ev_key,
              v, c->ev_want);
    }
}

static void rope_cache_case(const server *s, const rope_case *c, const rope_impl *m, size_t T,
                            size_t w)
{
    float *co = xmalloc(T * w * sizeof *co), *si = xmalloc(T * w * sizeof *si);
    float *gc = xmalloc(T * w * sizeof *gc), *gs = xmalloc(T * w * sizeof *gs);
    rope_cache(m, T, w, co, si);
    sbuf b;
    sb_init(&b);
    sb_printf(&b, "{\"scheme\":\"rope\",\"params\":%s,", c->params);
    put_array(&b, "cos", co, 2, (size_t[]){T, w});
    sb_puts(&b, ",");
    put_array(&b, "sin", si, 2, (size_t[]){T, w});
    sb_puts(&b, "}");
    http_resp r;
    const json_t *f = diagnose(s, c->label, b.s, c->verdict, c->code, &r);
    check_evidence(c->label, f, c);
    check_also_absent(&r, c);
    if (r.json && cache_via_encode(s, c->label, &r, T, w, gc, gs)) {
        /* apply the findings /encode cannot express */
        bool swapped = finding(&r, "sin_cos_swapped") != NULL;
        bool reversed = finding(&r, "rotation_reversed") != NULL;
        for (size_t i = 0; i < T * w; i++) {
            float cv = gc[i], sv = reversed ? -gs[i] : gs[i];
            gc[i] = swapped ? sv : cv;
            gs[i] = swapped ? cv : sv;
        }
        check_within(c->label, "best via /encode vs cos", gc, co, T * w, c->reproduce_tol);
        check_within(c->label, "best via /encode vs sin", gs, si, T * w, c->reproduce_tol);
    }
    http_resp_free(&r);
    sb_free(&b);
    free(co);
    free(si);
    free(gc);
    free(gs);
}

static void rope_encoded_case(const server *s, const rope_case *c, const rope_impl *m, size_t T,
                              size_t width)
{
    float *x = xmalloc(T * width * sizeof *x), *y = xmalloc(T * width * sizeof *y);
    float *got = xmalloc(T * width * sizeof *got);
    trng g;
    trng_seed(&g, 7);
    trng_fill(&g, x, T * width, -1, 1);
    rope_encode(m, x, T, width, y);
    sbuf b;
    sb_init(&b);
    sb_printf(&b, "{\"scheme\":\"rope\",\"params\":%s,", c->params);
    put_array(&b, "embeddings", x, 2, (size_t[]){T, width});
    sb_puts(&b, ",");
    put_array(&b, "encoded", y, 2, (size_t[]){T, width});
    sb_puts(&b, "}");
    http_resp r;
    const json_t *f = diagnose(s, c->label, b.s, c->verdict, c->code, &r);
    check_evidence(c->label, f, c);
    check_also_absent(&r, c);
    if (r.json) {
        /* rotation_reversed, applied: R(-t)x = conj(R(t) conj(x)), conj
         * negating the second member of every pair of best's layout */
        bool reversed = finding(&r, "rotation_reversed") != NULL;
        size_t hd, rd;
        bool il;
        best_rope(&r, &hd, &rd, &il);
        float *xs = xmalloc(T * width * sizeof *xs);
        memcpy(xs, x, T * width * sizeof *xs);
        for (size_t t = 0; reversed && hd && t < T; t++)
            for (size_t h = 0; h < width / hd; h++)
                for (size_t i = 0; i < rd / 2; i++)
                    xs[t * width + h * hd + (il ? 2 * i + 1 : i + rd / 2)] *= -1;
        sbuf extra;
        sb_init(&extra);
        put_array(&extra, "embeddings", xs, 2, (size_t[]){T, width});
        if (best_reproduce(s, c->label, &r, "/encode", extra.s, "encoded", got, T * width)) {
            memcpy(xs, got, T * width * sizeof *xs);
            for (size_t t = 0; reversed && t < T; t++)
                for (size_t h = 0; h < width / hd; h++)
                    for (size_t i = 0; i < rd / 2; i++)
                        xs[t * width + h * hd + (il ? 2 * i + 1 : i + rd / 2)] *= -1;
            check_within(c->label, "best via /encode vs the subject", xs, y, T * width,
                         c->reproduce_tol);
        }
        sb_free(&extra);
        free(xs);
    }
    http_resp_free(&r);
    sb_free(&b);
    free(x);
    free(y);
    free(got);
}

/* YaRN on heads of 64 with Hugging Face's betas. */
static ref_rope_cfg yarn_ref(double base, double factor, double orig)
{
    return (ref_rope_cfg){.base = base,
                          .head_dim = 64,
                          .rotary_dim = 64,
                          .scaling = REF_SCALING_YARN,
                          .factor = factor,
                          .orig = orig,
                          .beta_fast = 32,
                          .beta_slow = 1};
}

/* YaRN's correction range rounded (Hugging Face's default, truncate true)
 * or not (gpt-oss, truncate false), claimed the other way: the claim's
 * yarn with the other truncate, named in the evidence and reproduced by
 * best through /encode. */
static void yarn_truncate_cases(const server *s)
{
    static const struct {
        bool unrounded, cache;
        const char *label, *claim, *want;
    } cases[] = {
        {true, false,
         "diagnose rope yarn unrounded, claimed rounded -> scaling_mismatch "
         "truncate false",
         "{\"head_dim\":64,\"base\":150000,\"scaling\":{\"type\":\"yarn\",\"factor\":32,"
         "\"original_max_position_embeddings\":4096}}",
         "\"truncate\":false"},
        {false, true,
         "diagnose rope cache yarn rounded, claimed truncate false -> "
         "scaling_mismatch truncate true",
         "{\"head_dim\":64,\"base\":150000,\"scaling\":{\"type\":\"yarn\",\"factor\":32,"
         "\"original_max_position_embeddings\":4096,\"truncate\":false}}",
         "\"truncate\":true"},
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        long double inv[32], att;
        ref_rope_cfg yarn = yarn_ref(150000, 32, 4096);
        yarn.unrounded = cases[k].unrounded;
        ref_rope_freqs(&yarn, 64, inv, &att);
        rope_impl m = rope_default(64);
        m.inv = inv;
        m.att = (double)att;
        rope_case c = {.label = cases[k].label,
                       .params = cases[k].claim,
                       .verdict = "explained",
                       .code = "scaling_mismatch",
                       .ev_key = "scaling",
                       .ev_str = cases[k].want,
                       .reproduce_tol = TOL};
        if (cases[k].cache)
            rope_cache_case(s, &c, &m, 256, 64);
        else
            rope_encoded_case(s, &c, &m, 64, 128);
    }
}

/* LongRoPE's short factors (1 to 1.2 across the pairs) and its attention
 * factor at float32, claimed plain: a profile no base gives, whose phases
 * drift along exact lines between float16 frequencies; never half
 * precision. */
static void longrope_short_claimed_plain(const server *s)
{
    long double inv[32];
    for (int i = 0; i < 32; i++)
        inv[i] = powl(10000.0L, -i / 32.0L) / (1.0L + 0.2L * i / 31.0L);
    rope_impl m = rope_default(64);
    m.inv = inv;
    m.att = sqrt(1 + log(32.0) / log(4096.0));
    rope_encoded_case(s,
                      &(rope_case){.label = "diagnose rope LongRoPE short factors claimed plain -> "
                                            "attention_factor, no low_precision",
                                   .params = "{\"head_dim\":64}",
                                   .verdict = "unexplained",
                                   .code = "attention_factor",
                                   .reproduce_tol = 0.5,
                                   .absent = "low_precision"},
                      &m, 128, 128);
}

static void rope_cases(const server *s)
{
    const char *hd64 = "{\"head_dim\":64}";
    rope_impl m = rope_default(64);
    rope_cache_case(s,
                    &(rope_case){"diagnose rope cache exact -> match", hd64, "match", NULL,
                                 .reproduce_tol = TOL},
                    &m, 64, 64);
    m.interleaved = true;
    rope_cache_case(s,
                    &(rope_case){"diagnose rope cache repeat_interleave -> layout_swapped", hd64,
                                 "explained", "layout_swapped", "layout", "interleaved",
                                 .reproduce_tol = TOL},
                    &m, 64, 64);
    m = rope_default(64);
    m.base = 500000;
    rope_cache_case(s,
                    &(rope_case){"diagnose rope cache base 500000 -> base_mismatch", hd64,
                                 "explained", "base_mismatch", "base", NULL, 500000, 1e-3, TOL,
                                 NULL, NULL, NULL},
                    &m, 64, 32);
    /* the claim's base squared: each frequency squared, which a llama3
     * band from the highest frequency down mimics exactly */
    m.base = 1e8;
    rope_cache_case(s,
                    &(rope_case){"diagnose rope cache base 1e8 claimed 1e4 -> base_mismatch, no "
                                 "llama3 scaling",
                                 hd64, "explained", "base_mismatch", "base", NULL, 1e8, 1e-3, TOL,
                                 .absent = "scaling_mismatch"},
                    &m, 256, 64);
    m = rope_default(64);
    m.interleaved = true;
    m.base = 500000;
    rope_cache_case(s,
                    &(rope_case){"diagnose rope cache interleaved + base 500000 -> both", hd64,
                                 "explained", "base_mismatch", "base", NULL, 500000, 1e-3, TOL,
                                 "layout_swapped", NULL, NULL},
                    &m, 64, 64);
    m = rope_default(64);
    m.fd = 63; /* 2i/(d-1): exactly base^(64/63) */
    rope_cache_case(s,
                    &(rope_case){"diagnose rope cache exponent 2i/(d-1) -> frequency_formula", hd64,
                                 "explained", "frequency_formula", "base", NULL,
                                 pow(10000, 64.0 / 63.0), 1e-2, TOL, NULL, NULL, NULL},
                    &m, 64, 32);
    m = rope_default(64);
    m.swap = true;
    rope_cache_case(s,
                    &(rope_case){"diagnose rope cache cos/sin swapped -> sin_cos_swapped", hd64,
                                 "explained", "sin_cos_swapped", .reproduce_tol = TOL},
                    &m, 64, 64);
    m = rope_default(64);
    m.reversed = true;
    rope_cache_case(s,
                    &(rope_case){"diagnose rope cache sin negated -> rotation_reversed", hd64,
                                 "explained", "rotation_reversed", .reproduce_tol = TOL},
                    &m, 64, 64);
    m = rope_default(64);
    m.linear = 2;
    rope_cache_case(s,
                    &(rope_case){"diagnose rope cache linear x2 unclaimed -> scaling_mismatch",
                                 hd64, "explained", "scaling_mismatch", .reproduce_tol = TOL},
                    &m, 64, 32);
    /* a dropped YaRN attention factor: yarn frequencies, cos/sin not scaled */
    long double inv[32], att;
    ref_rope_cfg yarn = yarn_ref(10000, 4, 2048);
    ref_rope_freqs(&yarn, 64, inv, &att);
    m = rope_default(64);
    m.inv = inv;
    const char *yarn_claim = "{\"head_dim\":64,\"scaling\":{\"type\":\"yarn\",\"factor\":4,"
                             "\"original_max_position_embeddings\":2048}}";
    rope_cache_case(s,
                    &(rope_case){"diagnose rope cache yarn factor dropped -> attention_factor",
                                 yarn_claim, "explained", "attention_factor", "factor", NULL, 1.0,
                                 1e-4, TOL, NULL, NULL, NULL},
                    &m, 64, 32);
    yarn_truncate_cases(s);
    longrope_short_claimed_plain(s);
    m.bf16 = true;
    /* bf16 angles: within what bfloat16 explains (|angle| < 32: 2 roundings
     * of 2^-9 relative, plus cos/sin and the factor) */
    rope_cache_case(s,
                    &(rope_case){"diagnose rope cache yarn factor dropped at bf16 -> "
                                 "attention_factor + low_precision",
                                 yarn_claim, "explained", "low_precision", "precision", "bfloat16",
                                 .reproduce_tol = 0.35, .also = "attention_factor"},
                    &m, 32, 32);
    m = rope_default(64);
    m.bf16 = true;
    rope_cache_case(s,
                    &(rope_case){"diagnose rope cache bf16 angles -> low_precision bfloat16", hd64,
                                 "explained", "low_precision", "precision", "bfloat16",
                                 .reproduce_tol = 0.35},
                    &m, 32, 64);

    /* rotated vectors */
    m = rope_default(64);
    m.reversed = true;
    rope_encoded_case(s,
                      &(rope_case){"diagnose rope encoded by -theta -> rotation_reversed", hd64,
                                   "explained", "rotation_reversed", .reproduce_tol = TOL},
                      &m, 32, 128);
    m = rope_default(64);
    m.offset = 3;
    rope_encoded_case(s,
                      &(rope_case){"diagnose rope encoded positions +3 -> position_offset", hd64,
                                   "explained", "position_offset", "offset", NULL, 3, 0, TOL, NULL,
                                   NULL, NULL},
                      &m, 32, 128);
    m = rope_default(64);
    m.offset = 1;
    rope_encoded_case(s,
                      &(rope_case){"diagnose rope encoded interleaved claim, half + offset 1",
                                   "{\"head_dim\":64,\"layout\":\"interleaved\"}", "explained",
                                   "layout_swapped", "layout", "half", .reproduce_tol = TOL},
                      &m, 32, 128);
    m = rope_default(128); /* one rotation over the whole vector */
    rope_encoded_case(s,
                      &(rope_case){"diagnose rope encoded head_dim 128 -> head_dim_mismatch", hd64,
                                   "explained", "head_dim_mismatch", "head_dim", NULL, 128, 0, TOL,
                                   NULL, NULL, NULL},
                      &m, 32, 128);
    m = rope_default(64);
    m.rd = 32;
    m.fd = 64; /* partial rotary with frequencies from head_dim */
    rope_encoded_case(s,
                      &(rope_case){"diagnose rope encoded partial rotary, frequencies of "
                                   "head_dim -> rotary_dim_mismatch",
                                   "{\"head_dim\":64,\"rotary_dim\":32}", "explained",
                                   "rotary_dim_mismatch", "frequency_dim", NULL, 64, 0, TOL, NULL,
                                   NULL, NULL},
                      &m, 32, 128);
    /* rotary_dim's frequencies zero-padded to the head, rotated over it:
     * the pairs past rotary_dim/2 do not turn; best (base 1e7^4 over the
     * head, no zero pairs) leaves tiny turns there, not a rounding */
    long double zero_padded[16] = {0};
    for (int i = 0; i < 4; i++)
        zero_padded[i] = powl(1e7L, -2.0L * i / 8.0L);
    m = rope_default(32);
    m.inv = zero_padded;
    rope_encoded_case(s,
                      &(rope_case){"diagnose rope encoded rotary_dim frequencies zero-padded to "
                                   "the head -> rotary_dim_mismatch, no low_precision",
                                   "{\"head_dim\":32,\"rotary_dim\":8,\"base\":1e7}", "explained",
                                   "rotary_dim_mismatch", "frequency_dim", NULL, 8, 0, 1e-3, NULL,
                                   "low_precision", "uses head_dim"},
                      &m, 512, 32);
    /* random: nothing explains it */
    size_t T = 32, w = 32;
    float *co = xmalloc(T * w * sizeof *co), *si = xmalloc(T * w * sizeof *si);
    trng g;
    trng_seed(&g, 99);
    trng_fill(&g, co, T * w, -1, 1);
    trng_fill(&g, si, T * w, -1, 1);
    sbuf b;
    sb_init(&b);
    sb_puts(&b, "{\"scheme\":\"rope\",\"params\":{\"head_dim\":64},");
    put_array(&b, "cos", co, 2, (size_t[]){T, w});
    sb_puts(&b, ",");
    put_array(&b, "sin", si, 2, (size_t[]){T, w});
    sb_puts(&b, "}");
    http_resp r;
    diagnose(s, "diagnose rope random cache -> unexplained", b.s, "unexplained", NULL, &r);
    http_resp_free(&r);
    sb_free(&b);
    free(co);
    free(si);
}

/* ---- ALiBi and T5 ------------------------------------------------------ */

static void alibi_cases(const server *s)
{
    /* slopes for 12 heads from the power-of-two formula 2^(-8(h+1)/12) */
    size_t H = 12;
    float sl[12];
    long double paper[12];
    ref_alibi_slopes(H, paper);
    for (size_t h = 0; h < H; h++)
        sl[h] = (float)pow(2.0, -8.0 * (double)(h + 1) / (double)H);
    sbuf b;
    sb_init(&b);
    sb_puts(&b, "{\"scheme\":\"alibi\",");
    put_array(&b, "slopes", sl, 1, (size_t[]){H});
    sb_puts(&b, "}");
    const char *L = "diagnose alibi 12 heads, power-of-two formula -> alibi_slopes";
    http_resp r;
    const json_t *f = diagnose(s, L, b.s, "explained", "alibi_slopes", &r);
    if (f) {
        const json_t *ev = json_object_get(f, "evidence");
        const json_t *found = json_object_get(ev, "slopes"), *heads = json_object_get(ev, "heads");
        double worst = 0;
        for (size_t h = 0; h < H && json_array_size(found) == H; h++)
            worst = fmax(worst, fabs(json_number_value(json_array_get(found, h)) - sl[h]));
        CHECK(json_array_size(found) == H && worst < 1e-6, L, "evidence slopes off by %g", worst);
        size_t differ = 0;
        for (size_t h = 0; h < H; h++)
            differ += fabsl((long double)sl[h] - paper[h]) > 1e-6L * paper[h];
        CHECK(json_array_size(heads) == differ, L, "evidence heads lists %zu, want %zu",
              json_array_size(heads), differ);
    }
    http_resp_free(&r);
    sb_free(&b);

    /* bias [heads][T][T] */
    size_t T = 24, n = 8 * T * T;
    int64_t pos[24];
    for (size_t t = 0; t < T; t++)
        pos[t] = (int64_t)t;
    double *ref = xmalloc(n * sizeof *ref);
    float *sub = xmalloc(n * sizeof *sub), *got = xmalloc(n * sizeof *got);
    for (int variant = 0; variant < 2; variant++) {
        /* 0: bloom's slope*p_j where symmetric is claimed; 1: +slope*|i-j| */
        ref_alibi_bias(8, variant == 0, pos, T, ref);
        for (size_t i = 0; i < n; i++)
            sub[i] = (float)(variant == 0 ? ref[i] : -ref[i]);
        sb_init(&b);
        sb_puts(&b, "{\"scheme\":\"alibi\",\"params\":{\"form\":\"symmetric\"},");
        put_array(&b, "bias", sub, 3, (size_t[]){8, T, T});
        sb_puts(&b, "}");
        L = variant == 0 ? "diagnose alibi bloom bias under symmetric -> alibi_form bloom"
                         : "diagnose alibi symmetric bias, sign flipped -> alibi_form sign -1";
        f = diagnose(s, L, b.s, "explained", "alibi_form", &r);
        if (f) {
            const char *form = evidence_string(f, "form");
            CHECK(form && strcmp(form, variant == 0 ? "bloom" : "symmetric") == 0, L, "form %s",
                  form ? form : "(none)");
            CHECK(evidence_number(f, "sign") == (variant == 0 ? 1 : -1), L, "sign %g",
                  evidence_number(f, "sign"));
        }
        char shape[40];
        snprintf(shape, sizeof shape, "\"shape\":[%zu,1]", T);
        if (r.json && best_reproduce(s, L, &r, "/encode", shape, "bias", got, n)) {
            for (size_t i = 0; variant == 1 && i < n; i++)
                got[i] = -got[i]; /* the flipped sign, applied */
            check_within(L, "best via /encode vs the subject", got, sub, n, TOL);
        }
        http_resp_free(&r);
        sb_free(&b);
    }
    free(ref);
    free(sub);
    free(got);
}

static void t5_cases(const server *s)
{
    size_t heads = 2, T = 160, n = heads * T * T;
    int nb = 32;
    float table[64];
    for (int k = 0; k < nb; k++)
        for (size_t h = 0; h < heads; h++)
            table[(size_t)k * heads + h] = 0.5f * (float)k - 3.0f * (float)h + 0.125f;
    sbuf model;
    sb_init(&model);
    sb_puts(&model, "{\"d_model\":4,\"heads\":2,\"scheme\":\"t5\",\"weights\":{"
                    "\"wq\":[[1,0,0,0],[0,1,0,0],[0,0,1,0],[0,0,0,1]],"
                    "\"wk\":[[1,0,0,0],[0,1,0,0],[0,0,1,0],[0,0,0,1]],"
                    "\"wv\":[[1,0,0,0],[0,1,0,0],[0,0,1,0],[0,0,0,1]],\"t5_bias\":");
    sb_farray(&model, table, 2, (size_t[]){(size_t)nb, heads});
    sb_puts(&model, "}}");
    int64_t *pos = xmalloc(T * sizeof *pos), *neg = xmalloc(T * sizeof *neg);
    for (size_t t = 0; t < T; t++) {
        pos[t] = (int64_t)t;
        neg[t] = -(int64_t)t; /* bucket(p_j' - p_i') = bucket(p_i - p_j): query - key */
    }
    float *sub = xmalloc(n * sizeof *sub), *got = xmalloc(n * sizeof *got);
    for (int variant = 0; variant < 2; variant++) {
        if (variant == 0)
            ref_t5_bias(table, nb, heads, 128, true, neg, T, sub);
        else
            ref_t5_bias(table, nb, heads, 64, true, pos, T, sub);
        sbuf b;
        sb_init(&b);
        sb_printf(&b, "{\"scheme\":\"t5\",\"model\":%s,", model.s);
        put_array(&b, "bias", sub, 3, (size_t[]){heads, T, T});
        sb_puts(&b, "}");
        const char *L = variant == 0 ? "diagnose t5 query - key -> t5_direction"
                                     : "diagnose t5 max_distance 64 -> t5_buckets";
        http_resp r;
        const json_t *f = diagnose(s, L, b.s, "explained",
                                   variant == 0 ? "t5_direction" : "t5_buckets", &r);
        if (f && variant == 1)
            CHECK(evidence_number(f, "max_distance") == 64 &&
                      evidence_number(f, "num_buckets") == 32,
                  L, "evidence max_distance %g num_buckets %g", evidence_number(f, "max_distance"),
                  evidence_number(f, "num_buckets"));
        sbuf extra;
        sb_init(&extra);
        sb_printf(&extra, "\"model\":%s,\"shape\":[%zu,4]", model.s, T);
        if (r.json && best_reproduce(s, L, &r, "/encode", extra.s, "bias", got, n)) {
            if (variant == 0) /* t5_direction, applied: transpose every head */
                for (size_t h = 0; h < heads; h++)
                    for (size_t i = 0; i < T; i++)
                        for (size_t j = 0; j < i; j++) {
                            float tmp = got[(h * T + i) * T + j];
                            got[(h * T + i) * T + j] = got[(h * T + j) * T + i];
                            got[(h * T + j) * T + i] = tmp;
                        }
            check_within(L, "best via /encode vs the subject", got, sub, n, TOL);
        }
        sb_free(&extra);
        http_resp_free(&r);
        sb_free(&b);
    }
    sb_free(&model);
    free(pos);
    free(neg);
    free(sub);
    free(got);
}

/* ---- q/k/v on the default model --------------------------------------- */

/* Meta -> HF order inverse: out[2i + c] = in[c*hd/2 + i] per head. */
static void to_meta(const float *in, float *out, size_t T, size_t width, size_t hd)
{
    for (size_t t = 0; t < T; t++)
        for (size_t h = 0; h < width / hd; h++)
            for (size_t i = 0; i < hd / 2; i++)
                for (size_t c = 0; c < 2; c++)
                    out[t * width + h * hd + 2 * i + c] = in[t * width + h * hd + c * hd / 2 + i];
}

/* value_rotated names v, its error_before is the subject's distance from
 * the unrotated projection, error_after is within tolerance, and no
 * message says v carries no position. */
static void check_value_rotated(const char *L, const http_resp *r, const json_t *f,
                                const float *v_sent, const float *v_projected, size_t n)
{
    double before = 0;
    for (size_t j = 0; j < n; j++)
        before = fmax(before, fabs((double)v_sent[j] - v_projected[j]));
    const json_t *outs = json_object_get(json_object_get(f, "evidence"), "outputs");
    CHECK(json_array_size(outs) == 1 &&
              strcmp(json_string_value(json_array_get(outs, 0)), "v") == 0,
          L, "outputs should be [\"v\"]");
    CHECK(fabs(evidence_number(f, "error_before") - before) <= 1e-6 * before, L,
          "error_before %g, want %g", evidence_number(f, "error_before"), before);
    CHECK(evidence_number(f, "error_after") < TOL, L, "error_after %g",
          evidence_number(f, "error_after"));
    CHECK(!strstr(r->body, "carries no position"), L, "a message says v carries no position");
}

static void qkv_cases(const server *s, const default_model *dm)
{
    size_t T = 24, D = DEFAULT_D, n = T * D;
    float *x = xmalloc(n * sizeof *x);
    float *pre[3], *sub[3], *got = xmalloc(n * sizeof *got), *perm = xmalloc(n * sizeof *perm);
    double *y = xmalloc(n * sizeof *y);
    const float *w[3] = {dm->wq, dm->wk, dm->wv};
    trng g;
    trng_seed(&g, 5);
    trng_fill(&g, x, n, -1, 1);
    for (int i = 0; i < 3; i++) { /* posenc's default model has no norm: z = x */
        pre[i] = xmalloc(n * sizeof(float));
        sub[i] = xmalloc(n * sizeof(float));
        ref_project(x, T, D, w[i], D, NULL, y);
        ref_round_f32(y, n, pre[i]);
    }
    sbuf emb;
    sb_init(&emb);
    put_array(&emb, "embeddings", x, 2, (size_t[]){T, D});
    for (int variant = 0; variant < 7; variant++) {
        static const char *const labels[] =
            {"diagnose q/k/v exact -> match",
             "diagnose q/k/v rope base 500000 -> base_mismatch, best via /apply",
             "diagnose q/k/v Meta-order weights in a half-layout rotation -> weights_permuted",
             "diagnose q/k/v v scaled by 1.01 -> projection_mismatch",
             "diagnose q/k/v q from other weights -> projection_mismatch on q",
             "diagnose q/k/v all at position 0 -> positions_mismatch, best.positions zeros",
             "diagnose q/k/v v rotated as k -> value_rotated naming v"};
        const char *L = labels[variant];
        rope_impl m = rope_default(DEFAULT_HD);
        if (variant == 1)
            m.base = 500000;
        for (int i = 0; i < 2; i++) {
            const float *in = pre[i];
            if (variant == 2) {
                to_meta(pre[i], perm, T, D, DEFAULT_HD);
                in = perm;
            }
            rope_encode(&m, in, T, D, sub[i]);
            if (variant == 5) /* position 0 everywhere: no rotation */
                memcpy(sub[i], pre[i], n * sizeof(float));
        }
        for (size_t j = 0; j < n; j++)
            sub[2][j] = variant == 3 ? pre[2][j] * 1.01f : pre[2][j];
        if (variant == 6) /* the port's slip: v rotated as k is */
            rope_encode(&m, pre[2], T, D, sub[2]);
        if (variant == 4) /* q projected by other weights: random numbers */
            trng_fill(&g, sub[0], n, -1, 1);
        sbuf b;
        sb_init(&b);
        sb_printf(&b, "{\"scheme\":\"rope\",%s,", emb.s);
        put_array(&b, "q", sub[0], 2, (size_t[]){T, D});
        sb_puts(&b, ",");
        put_array(&b, "k", sub[1], 2, (size_t[]){T, D});
        sb_puts(&b, ",");
        put_array(&b, "v", sub[2], 2, (size_t[]){T, D});
        sb_puts(&b, "}");
        static const char *const verdicts[] = {"match",       "explained",   "explained",
                                               "unexplained", "unexplained", "explained",
                                               "explained"};
        static const char *const codes[] = {NULL,
                                            "base_mismatch",
                                            "weights_permuted",
                                            "projection_mismatch",
                                            "projection_mismatch",
                                            "positions_mismatch",
                                            "value_rotated"};
        http_resp r;
        const json_t *f = diagnose(s, L, b.s, verdicts[variant], codes[variant], &r);
        if (variant == 1 && f)
            CHECK(fabs(evidence_number(f, "base") - 500000) < 1, L, "base %g",
                  evidence_number(f, "base"));
        if (variant >= 3 && variant <= 4 && f) {
            const json_t *outs = json_object_get(json_object_get(f, "evidence"), "outputs");
            const char *want_out = variant == 3 ? "v" : "q";
            CHECK(json_array_size(outs) == 1 &&
                      strcmp(json_string_value(json_array_get(outs, 0)), want_out) == 0,
                  L, "outputs should be [\"%s\"]", want_out);
        }
        if (variant == 6 && f)
            check_value_rotated(L, &r, f, sub[2], pre[2], n);
        if (r.json && variant == 5) { /* best carries the positions found */
            const json_t *pos = json_object_get(json_object_get(r.json, "best"), "positions");
            bool zeros = json_array_size(pos) == T;
            for (size_t t = 0; zeros && t < T; t++)
                zeros = json_integer_value(json_array_get(pos, t)) == 0;
            CHECK(zeros, L, "best.positions all 0: %.300s", r.body);
        }
        if (r.json && variant <= 1) { /* best is an /apply request */
            sbuf extra;
            sb_init(&extra);
            sb_printf(&extra, "%s,\"return\":[\"q\",\"k\"]", emb.s);
            if (best_reproduce(s, L, &r, "/apply", extra.s, "q", got, n))
                check_within(L, "q of best via /apply vs the subject", got, sub[0], n, TOL);
            sb_free(&extra);
        }
        if (r.json && variant == 2) {
            /* weights_permuted, applied: best's rotation of the permuted projection */
            sbuf extra;
            sb_init(&extra);
            to_meta(pre[0], perm, T, D, DEFAULT_HD);
            put_array(&extra, "embeddings", perm, 2, (size_t[]){T, D});
            json_t *best = json_object_get(r.json, "best");
            json_t *p = json_object_get(best, "params");
            char *params = json_dumps(p, JSON_COMPACT);
            sbuf eb;
            sb_init(&eb);
            sb_printf(&eb, "{\"scheme\":\"rope\",\"params\":%s,\"offset\":%lld,%s}", params,
                      jint(best, "offset", 0), extra.s);
            http_resp rr;
            farr a = {0};
            http_post_json(s, "/encode", eb.s, &rr);
            if (expect_ok(L, &rr) && get_farr(L, &rr, "encoded", &a) && a.n == n)
                check_within(L, "best on the permuted projection vs q", a.v, sub[0], n, TOL);
            farr_free(&a);
            http_resp_free(&rr);
            free(params);
            sb_free(&eb);
            sb_free(&extra);
        }
        http_resp_free(&r);
        sb_free(&b);
    }
    sb_free(&emb);
    for (int i = 0; i < 3; i++) {
        free(pre[i]);
        free(sub[i]);
    }
    free(x);
    free(got);
    free(perm);
    free(y);
}

/* ---- learned ------------------------------------------------------------ */

static void learned_cases(const server *s)
{
    size_t rows = 16, d = 4, T = 8;
    float table[64], sub[32], got[32];
    trng g;
    trng_seed(&g, 31);
    trng_fill(&g, table, rows * d, -1, 1);
    sbuf model;
    sb_init(&model);
    sb_puts(&model, "{\"d_model\":4,\"heads\":1,\"scheme\":\"learned\",\"weights\":{"
                    "\"wq\":[[1,0,0,0],[0,1,0,0],[0,0,1,0],[0,0,0,1]],"
                    "\"wk\":[[1,0,0,0],[0,1,0,0],[0,0,1,0],[0,0,0,1]],"
                    "\"wv\":[[1,0,0,0],[0,1,0,0],[0,0,1,0],[0,0,0,1]],\"position_table\":");
    sb_farray(&model, table, 2, (size_t[]){rows, d});
    sb_puts(&model, "}}");
    for (int shift = 0; shift <= 2; shift += 2) {
        /* rows p + shift of the table: OPT's offset of 2 */
        memcpy(sub, table + (size_t)shift * d, T * d * sizeof *sub);
        sbuf b;
        sb_init(&b);
        sb_printf(&b, "{\"scheme\":\"learned\",\"model\":%s,", model.s);
        put_array(&b, "table", sub, 2, (size_t[]){T, d});
        sb_puts(&b, "}");
        const char *L = shift ? "diagnose learned table read from row 2 -> position_offset 2"
                              : "diagnose learned table exact -> match";
        http_resp r;
        const json_t *f = diagnose(s, L, b.s, shift ? "explained" : "match",
                                   shift ? "position_offset" : NULL, &r);
        if (f)
            CHECK(evidence_number(f, "offset") == 2, L, "offset %g", evidence_number(f, "offset"));
        sbuf extra;
        sb_init(&extra);
        sb_printf(&extra, "\"model\":%s,\"shape\":[%zu,%zu]", model.s, T, d);
        if (r.json && best_reproduce(s, L, &r, "/encode", extra.s, "encoded", got, T * d))
            check_within(L, "best via /encode vs the subject", got, sub, T * d, TOL);
        sb_free(&extra);
        http_resp_free(&r);
        sb_free(&b);
    }
    sb_free(&model);
}

/* ---- adversarial subjects: bounded, never a crash ---------------------- */

static void adversarial_cases(const server *s)
{
    size_t T = 256, d = 64, n = T * d;
    float *v = xmalloc(n * sizeof *v);
    static const float fills[] = {0.0f, 1.0f, -3e38f, 1e-38f};
    for (size_t k = 0; k < sizeof fills / sizeof fills[0]; k++) {
        for (size_t i = 0; i < n; i++)
            v[i] = (k == 2 && i % 2) ? -fills[k] : fills[k];
        for (int kind = 0; kind < 2; kind++) {
            sbuf b;
            sb_init(&b);
            if (kind == 0) {
                sb_puts(&b, "{\"scheme\":\"sinusoidal\",\"encoding\":\"base64\",\"table\":");
                sb_base64_floats(&b, v, n);
                sb_printf(&b, ",\"table_shape\":[%zu,%zu]}", T, d);
            } else {
                sb_puts(&b, "{\"scheme\":\"rope\",\"params\":{\"head_dim\":64},\"cos\":");
                sb_base64_floats(&b, v, n);
                sb_printf(&b, ",\"cos_shape\":[%zu,%zu],\"sin\":", T, d);
                sb_base64_floats(&b, v, n);
                sb_printf(&b, ",\"sin_shape\":[%zu,%zu]}", T, d);
            }
            char label[96];
            snprintf(label, sizeof label, "diagnose %s filled with %g -> unexplained",
                     kind ? "rope cache" : "sinusoidal table", (double)fills[k]);
            http_resp r;
            diagnose(s, label, b.s, "unexplained", NULL, &r);
            http_resp_free(&r);
            sb_free(&b);
        }
    }
    free(v);
    /* its time is in /metrics like every route */
    http_resp m;
    http_get(s, "/metrics", &m);
    CHECK(m.status == 200 && m.body &&
              strstr(m.body, "posenc_request_duration_seconds_count{route=\"/diagnose\"}"),
          "GET /metrics after /diagnose", "no duration series for /diagnose");
    http_resp_free(&m);
}

/* ---- errors ------------------------------------------------------------- */

static void error_cases(const server *s)
{
    static const struct {
        const char *label, *body, *code, *field;
        long status;
    } cases[] = {
        {"diagnose two subjects -> 400",
         "{\"scheme\":\"sinusoidal\",\"table\":[[0,1]],\"slopes\":[0.5]}", "invalid_request", NULL,
         400},
        {"diagnose no subject -> 400", "{\"scheme\":\"sinusoidal\"}", "invalid_request", NULL, 400},
        {"diagnose cos without sin -> 400", "{\"scheme\":\"rope\",\"cos\":[[1,1]]}",
         "invalid_request", "sin", 400},
        {"diagnose unknown key -> 400", "{\"table\":[[0,1]],\"tabel\":1}", "invalid_request", NULL,
         400},
        {"diagnose cos and sin of other shapes -> 422",
         "{\"scheme\":\"rope\",\"cos\":[[1,1],[1,1]],\"sin\":[[0,0]]}", "invalid_shape", "sin",
         422},
        {"diagnose cache width that fits no rotary_dim -> 422",
         "{\"scheme\":\"rope\",\"params\":{\"head_dim\":8},\"cos\":[[1,1,1]],\"sin\":[[0,0,0]]}",
         "invalid_shape", NULL, 422},
        {"diagnose ragged table -> 422", "{\"scheme\":\"sinusoidal\",\"table\":[[0,1],[0]]}",
         "invalid_shape", NULL, 422},
        {"diagnose a table under a rope claim -> 400", "{\"scheme\":\"rope\",\"table\":[[0,1]]}",
         "invalid_request", "scheme", 400},
        {"diagnose bias that is not [heads][T][T] -> 422",
         "{\"scheme\":\"alibi\",\"bias\":[[[0,1]]]}", "invalid_shape", "bias", 422},
        {"diagnose q of the wrong width -> 422",
         "{\"scheme\":\"rope\",\"token_ids\":[0],\"q\":[[1,2,3]]}", "invalid_shape|invalid_request",
         NULL, 422},
        {"diagnose negative tolerance -> 422", "{\"table\":[[0,1]],\"tolerance\":{\"atol\":-1}}",
         "out_of_range", "tolerance.atol", 422},
        {"diagnose non-finite -> 422", "{\"table\":[[0,1e39]]}", "non_finite", NULL, 422},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        http_resp r;
        http_post_json(s, "/diagnose", cases[i].body, &r);
        if (strchr(cases[i].code, '|')) {
            CHECK(r.status == 422 || r.status == 400, cases[i].label, "status %ld: %s", r.status,
                  r.body);
        } else {
            expect_error(cases[i].label, &r, cases[i].status, cases[i].code, cases[i].field);
        }
        http_resp_free(&r);
    }
}

/* The subject counts against the output caps: a server whose arrays may
 * hold 1000 elements refuses a [40][32] table (1280) with 422 too_large and
 * diagnoses a [30][32] one (960). */
static void limit_cases(void)
{
    static const char *const args[] = {"--max-output-elements", "1000", NULL};
    server s;
    if (!server_start(&s, "diagnose-limits", args, NULL))
        return;
    for (size_t T = 30; T <= 40; T += 10) {
        size_t d = 32;
        float *v = xmalloc(T * d * sizeof *v);
        sin_impl m = sin_default();
        sin_make(&m, NULL, T, d, 0, v);
        sbuf b;
        sb_init(&b);
        sb_puts(&b, "{\"scheme\":\"sinusoidal\",");
        put_array(&b, "table", v, 2, (size_t[]){T, d});
        sb_puts(&b, "}");
        http_resp r;
        if (T == 30)
            diagnose(&s, "diagnose [30][32] under a cap of 1000 -> match", b.s, "match", NULL, &r);
        else {
            http_post_json(&s, "/diagnose", b.s, &r);
            expect_error("diagnose [40][32] under a cap of 1000 -> 422 too_large", &r, 422,
                         "too_large", NULL);
        }
        http_resp_free(&r);
        sb_free(&b);
        free(v);
    }
    server_stop(&s);
}

/* attention_mask gives the claim its positions (contract v1.1): a table
 * made at the positions Hugging Face derives from a left-padded mask,
 * written out by hand here (cumsum(mask) - 1, and 1 where the mask is 0),
 * matches under the mask and not without it; causal has no meaning for a
 * bias compared unmasked and is refused. */
static void mask_cases(const server *s)
{
    static const int mask[8] = {0, 0, 1, 1, 1, 1, 1, 1};
    static const int64_t hf_positions[8] = {1, 1, 0, 1, 2, 3, 4, 5};
    size_t T = 8, d = 16;
    float table[8 * 16];
    for (size_t t = 0; t < T; t++)
        for (size_t i = 0; i < d / 2; i++) {
            double w = pow(10000.0, -2.0 * (double)i / (double)d), p = (double)hf_positions[t];
            table[t * d + 2 * i] = (float)sin(w * p);
            table[t * d + 2 * i + 1] = (float)cos(w * p);
        }
    sbuf b, mask_text;
    sb_init(&b);
    sb_init(&mask_text);
    sb_puts(&mask_text, "\"attention_mask\":[");
    for (size_t t = 0; t < T; t++)
        sb_printf(&mask_text, "%s%d", t ? "," : "", mask[t]);
    sb_puts(&mask_text, "]");
    sb_puts(&b, "{\"scheme\":\"sinusoidal\",");
    put_array(&b, "table", table, 2, (size_t[]){T, d});
    size_t unmasked_len = strlen(b.s);
    sb_printf(&b, ",%s}", mask_text.s);
    http_resp r;
    diagnose(s, "diagnose table at a left-padded mask's positions, with the mask", b.s, "match",
             NULL, &r);
    http_resp_free(&r);
    b.s[unmasked_len] = '\0';
    b.len = unmasked_len;
    sb_puts(&b, "}");
    http_post_json(s, "/diagnose", b.s, &r);
    const char *v = r.json ? jstr(r.json, "verdict") : NULL;
    CHECK(v && strcmp(v, "match") != 0, "diagnose the same table without the mask",
          "verdict %s, want anything but match", v ? v : "(none)");
    http_resp_free(&r);
    http_post_json(s, "/diagnose", "{\"scheme\":\"alibi\",\"slopes\":[0.5,0.25],\"causal\":true}",
                   &r);
    expect_error("diagnose a bias subject with causal -> 400", &r, 400, "invalid_request",
                 "causal");
    http_resp_free(&r);
    http_post_json(s, "/diagnose",
                   "{\"scheme\":\"sinusoidal\",\"table\":[[0,1],[0.84,0.54]],"
                   "\"attention_mask\":[1,1],\"offset\":1}",
                   &r);
    expect_error("diagnose attention_mask with offset -> 400", &r, 400, "invalid_request",
                 "offset");
    http_resp_free(&r);
    sb_free(&b);
    sb_free(&mask_text);
}

void test_diagnose(const server *s, const default_model *dm)
{
    sinusoidal_cases(s);
    rope_cases(s);
    alibi_cases(s);
    t5_cases(s);
    learned_cases(s);
    qkv_cases(s, dm);
    adversarial_cases(s);
    error_cases(s);
    mask_cases(s);
    limit_cases();
    test_diagnose_v2(s);
}
