/*
 * model_errors.c - desc_error kinds to the contract's (model_errors.h).
 */
#include "model_errors.h"

#include <stdio.h>

int api_desc(api_error *err, int rc, const desc_error *de)
{
    static const api_error_kind kinds[] = {
        [DESC_E_TYPE] = API_E_INVALID_REQUEST,
        [DESC_E_KEY] = API_E_INVALID_REQUEST,
        [DESC_E_SHAPE] = API_E_INVALID_SHAPE,
        [DESC_E_RANGE] = API_E_OUT_OF_RANGE,
        [DESC_E_TOO_LARGE] = API_E_TOO_LARGE,
        /* a scheme or input needs a table the model lacks: 422 */
        [DESC_E_MISSING_WEIGHT] = API_E_MISSING_WEIGHT,
    };

    if (!rc)
        return 0;
    if (de->kind == DESC_E_JSON) { /* the codec's kind, mapped where all of them are */
        err->json = de->json;
        return api_json(err, rc);
    }
    if (de->kind == DESC_E_NO_MEMORY)
        return api_fail_oom(err); /* the API's own 503 text */
    err->kind = (unsigned)de->kind < sizeof kinds / sizeof kinds[0] ? kinds[de->kind]
                                                                    : API_E_INTERNAL;
    snprintf(err->message, sizeof err->message, "%s", de->json.message);
    snprintf(err->field, sizeof err->field, "%s", de->json.field);
    return rc;
}
