/*
 * norm.c - the pre-attention normalisations (layernorm, rmsnorm) of one row,
 * in double precision.
 */
#include <math.h>
#include <string.h>

#include "posenc.h"

double pe_norm_default_eps(pe_norm_kind kind)
{
    switch (kind) {
    case PE_NORM_LAYER:
        return 1e-5; /* torch.nn.LayerNorm */
    case PE_NORM_RMS:
        return 1e-6; /* Hugging Face LlamaRMSNorm */
    case PE_NORM_NONE:
        break;
    }
    return 0.0;
}

/* Population variance and a second pass over the centred values, as
 * torch.nn.LayerNorm computes it. in and out may alias: every read of in[j]
 * happens before out[j] is written. */
static void layer_norm_row(const pe_norm *norm, const double *in, size_t d, double *out)
{
    double mean = 0.0, var = 0.0;

    for (size_t j = 0; j < d; j++)
        mean += in[j];
    mean /= (double)d;
    for (size_t j = 0; j < d; j++) {
        double c = in[j] - mean;
        var += c * c;
    }
    var /= (double)d;

    double denom = sqrt(var + norm->eps);
    for (size_t j = 0; j < d; j++) {
        double w = norm->weight ? (double)norm->weight[j] : 1.0;
        double b = norm->bias ? (double)norm->bias[j] : 0.0;
        out[j] = (in[j] - mean) / denom * w + b;
    }
}

static void rms_norm_row(const pe_norm *norm, const double *in, size_t d, double *out)
{
    double ms = 0.0;

    for (size_t j = 0; j < d; j++)
        ms += in[j] * in[j];
    ms /= (double)d;

    double denom = sqrt(ms + norm->eps);
    for (size_t j = 0; j < d; j++) {
        double w = norm->weight ? (double)norm->weight[j] : 1.0;
        out[j] = in[j] / denom * w;
    }
}

void pe_norm_row(const pe_norm *norm, const double *in, size_t d, double *out)
{
    if (d == 0)
        return;
    switch (norm ? norm->kind : PE_NORM_NONE) {
    case PE_NORM_LAYER:
        layer_norm_row(norm, in, d, out);
        return;
    case PE_NORM_RMS:
        rms_norm_row(norm, in, d, out);
        return;
    case PE_NORM_NONE:
        break;
    }
    if (out != in)
        memmove(out, in, d * sizeof *out);
}
