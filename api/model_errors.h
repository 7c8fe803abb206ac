/*
 * model_errors.h - the model layer's description errors (desc_error,
 * api/models/model_error.h) in the contract's table: the one place that
 * knows which status and code each kind answers with.
 */
#ifndef MODEL_ERRORS_H
#define MODEL_ERRORS_H

#include "api_error.h"
#include "models/model_error.h"

/* The result rc of a model.h or scheme.h call that reported into *de: on
 * failure (rc != 0) *de is mapped into *err (kind, message, field). Returns
 * rc, so that callers write `if (api_desc(err, scheme_decode(..., &de), &de))`. */
int api_desc(api_error *err, int rc, const desc_error *de);

#endif /* MODEL_ERRORS_H */
