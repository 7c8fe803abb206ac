/*
 * model_errors.c - desc_error kinds to the contract's (model_errors.h).
 */
#include "model_errors.h"

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
        [DESC_E_NO_MEMORY] = API_E_UNAVAILABLE, /* the API's own 503 text */
    };

    if (!rc) /* *de is written only on failure */
        return 0;
    if (de->kind == DESC_E_JSON) { /* the codec's kind, mapped where all of them are */
        err->json = de->json;
        return api_json(err, rc);
    }
    api_error_kind kind = (unsigned)de->kind < sizeof kinds / sizeof kinds[0] ? kinds[de->kind]
                                                                              : API_E_INTERNAL;
    return api_mapped(err, rc, kind, de->json.message, de->json.field);
}
