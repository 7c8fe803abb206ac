/*
 * rope2d.c - planning /encode's scheme rope2d (rope2d.h).
 */
#include "rope2d.h"

int rope2d_plan(const request *rq, pe_rope2d *out, api_error *err)
{
    const scheme *s = &rq->scheme;
    size_t hd = s->head_dim ? s->head_dim : rq->d;

    if (hd % 4 != 0 || rq->d % hd != 0)
        return api_fail(err, API_E_INVALID_SHAPE, "params.head_dim",
                        "rope2d needs head_dim (%zu) a multiple of 4 that divides d = %zu", hd,
                        rq->d);
    *out = (pe_rope2d){.variant = s->rope2d_variant, .base = s->base, .head_dim = hd};
    return 0;
}
