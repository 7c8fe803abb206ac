/*
 * diagnose_learned.h - /diagnose of a learned claim (diagnose_learned.c).
 */
#ifndef DIAGNOSE_LEARNED_H
#define DIAGNOSE_LEARNED_H

#include "api.h"
#include "diagnose_decode.h"
#include "json/strbuf.h"

/* A learned claim (table or embeddings + encoded subject) answered into
 * *sb: the model's table is compared as is and at small position offsets
 * (diagnose_learned.c; pe_diagnose has no learned claims). */
int diag_diagnose_learned(const api_service *svc, const diag_request *dr, strbuf *sb,
                          api_error *err);

#endif /* DIAGNOSE_LEARNED_H */
