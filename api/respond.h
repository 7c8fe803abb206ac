/*
 * respond.h - finishing a successful JSON answer (shared by the endpoints).
 */
#ifndef RESPOND_H
#define RESPOND_H

#include <stddef.h>

#include "api.h"
#include "json/strbuf.h"

/* Hand the finished text of *sb to *out as a 200 application/json answer
 * that processed `tokens` tokens. On allocation failure (sb failed) returns
 * -1 with *err filled and *out untouched. */
int respond_json(api_response *out, strbuf *sb, size_t tokens, api_error *err);

#endif /* RESPOND_H */
