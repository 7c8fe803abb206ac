/*
 * test_list.h - the one list of the groups of build/test_api (the api/
 * layer without a network): test_api.c walks it both to run every group
 * and to select groups by name (check_main, tests/unit/check_core.h), and
 * it declares each group's function. Registering a group is one line here.
 *
 * XX(name, function): `build/test_api name` runs function(void) alone.
 * Groups run in this order.
 */
#ifndef POSENC_TEST_API_LIST_H
#define POSENC_TEST_API_LIST_H

#define API_GROUPS(XX)                                                                             \
    XX(float_text, test_float_text)                   /* test_api.c: the number writer */          \
    XX(base64, test_base64)                           /* test_api.c: base64 in and out */          \
    XX(json_strings, test_json_strings)               /* test_api.c: string escaping */            \
    XX(handlers, test_handlers)                       /* test_api.c: handlers called directly */   \
    XX(fast_arrays, test_fast_arrays)                 /* test_api.c: the numeric-array path */     \
    XX(fast_numbers, test_fast_numbers)               /* test_api.c: numbers, fast vs plain */     \
    XX(fast_base64, test_fast_base64)                 /* test_api.c: base64, fast vs plain */      \
    XX(parallel_rows, test_parallel_rows)             /* test_api.c: bodies past 256 KiB */        \
    XX(parallel_base64_out, test_parallel_base64_out) /* test_api.c: parallel base64 answers */    \
    XX(safetensors, test_safetensors)                 /* test_safetensors.c */                     \
    XX(codecs, test_codecs)                           /* test_codecs.c */                          \
    XX(string_spans, test_string_spans)               /* test_string_spans.c */                    \
    XX(request_path, test_request_path)               /* test_request_path.c */                    \
    XX(layers, test_layers)                           /* test_layers.c */                          \
    XX(decoder_diff, test_decoder_diff)               /* test_decoder_diff.c: vs jansson */        \
    XX(number_diff, test_number_diff)                 /* test_number_diff.c: vs strtof */          \
    XX(cost, test_cost)                               /* test_cost.c: the estimate of work */      \
    XX(finite_check, test_finite_check)               /* test_finite.c: non-finite results */

#define API_GROUP_DECLARE(name, function) void function(void);
API_GROUPS(API_GROUP_DECLARE)
#undef API_GROUP_DECLARE

#endif /* POSENC_TEST_API_LIST_H */
