/*
 * diagnose_qkv.h - /diagnose of a q/k/v subject (diagnose_qkv.c): /apply's
 * forward pass (forward.h), compared; q and k diagnosed from its
 * pre-rotation outputs.
 */
#ifndef DIAGNOSE_QKV_H
#define DIAGNOSE_QKV_H

#include "api.h"
#include "diagnose_decode.h"
#include "json/strbuf.h"

/* Answer a DX_QKV request into *sb (a complete JSON object). */
int diag_diagnose_qkv(const api_service *svc, diag_request *dr, strbuf *sb, api_error *err);

#endif /* DIAGNOSE_QKV_H */
