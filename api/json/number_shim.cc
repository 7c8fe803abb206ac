// number_shim.cc - C entry points to Dragonbox (shortest float text) and
// fast_float (correctly rounded parsing), so that the rest of posenc stays
// C11; see number_shim.h. float_to_text() (json/float_text.h) lives here
// too: Dragonbox's digits inlined into the layout of float_layout.h took
// 13 ns a number where f32_shortest's (Schubfach, now the tests' reference)
// took 18 (1024 numbers in cache, 2-core AMD EPYC); through a call into
// this file per number they had been no faster than Schubfach's.
#include "json/number_shim.h"

extern "C" {
#include "json/float_layout.h"
#include "json/float_text.h"
}

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <system_error>

#include <dragonbox/dragonbox.h>
#include <fast_float/fast_float.h>

static inline void dragonbox_shortest(float v, uint32_t *significand, int *exponent)
{
    auto d = jkj::dragonbox::to_decimal(v, jkj::dragonbox::policy::sign::ignore,
                                        jkj::dragonbox::policy::trailing_zero::remove);
    *significand = d.significand;
    *exponent = d.exponent;
}

extern "C" size_t float_to_text(float v, char *buf)
{
    // Dragonbox asserts finiteness (and release builds keep assertions):
    // a non-finite value, which every caller checks away before writing,
    // must never abort the server with every request in flight.
    if (__builtin_expect(!std::isfinite(v), 0)) {
#ifdef POSENC_NON_FINITE_TEXT_ABORTS
        abort(); // the fuzzer's build: a non-finite value reached an answer
#endif
        std::memcpy(buf, "null", 5);
        return 4;
    }
    return float_layout(v, buf, dragonbox_shortest);
}

extern "C" const char *parse_f32(const char *first, const char *last, float *out)
{
    auto r = fast_float::from_chars(first, last, *out);
    return r.ec == std::errc() || r.ec == std::errc::result_out_of_range ? r.ptr : nullptr;
}
