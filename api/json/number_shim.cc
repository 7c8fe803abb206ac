// number_shim.cc - C entry points to Dragonbox (shortest float text) and
// fast_float (correctly rounded parsing). Kept to these two functions so
// that the rest of posenc stays C11; see number_shim.h.
#include "json/number_shim.h"

#include <system_error>

#include <dragonbox/dragonbox.h>
#include <fast_float/fast_float.h>

extern "C" void shortest_decimal_f32(float v, uint32_t *significand, int *exponent)
{
    auto d = jkj::dragonbox::to_decimal(v, jkj::dragonbox::policy::sign::ignore,
                                        jkj::dragonbox::policy::trailing_zero::remove);
    *significand = d.significand;
    *exponent = d.exponent;
}

extern "C" const char *parse_f32(const char *first, const char *last, float *out)
{
    auto r = fast_float::from_chars(first, last, *out);
    return r.ec == std::errc() || r.ec == std::errc::result_out_of_range ? r.ptr : nullptr;
}
