/*
 * test_list.h - the one list of the groups of build/test_lib (the lib/
 * unit tests): main.c walks it both to run every group and to select
 * groups by name (check_main, check_core.h), and it declares each group's
 * function. Registering a group is one line here.
 *
 * XX(name, function): `build/test_lib name` runs function(void) alone.
 * Groups run in this order.
 */
#ifndef POSENC_TEST_UNIT_LIST_H
#define POSENC_TEST_UNIT_LIST_H

#define UNIT_GROUPS(XX)                                                                            \
    XX(norm, test_norm)                       /* layernorm, rmsnorm */                             \
    XX(sinusoidal, test_sinusoidal)           /* the sinusoidal table */                           \
    XX(absolute, test_absolute)               /* absolute schemes on embeddings */                 \
    XX(rope, test_rope)                       /* rotations, layouts, partial rotary */             \
    XX(rope_freq, test_rope_freq)             /* frequencies of every scaling type */              \
    XX(mrope, test_mrope)                     /* multimodal rope: styles, text = 1-D */            \
    XX(alibi, test_alibi)                     /* slopes and bias forms */                          \
    XX(t5, test_t5)                           /* buckets and bias */                               \
    XX(qkv, test_qkv)                         /* projections, GQA */                               \
    XX(default_weights, test_default_weights) /* the default model's generator */                  \
    XX(threads, test_threads)                 /* results independent of thread count */            \
    XX(pe_cache, test_pe_cache)               /* the table cache */                                \
    XX(diagnose_rope, test_diagnose_rope)     /* /diagnose search, rope subjects */                \
    XX(diagnose_abs, test_diagnose_abs)       /* /diagnose search, absolute tables */              \
    XX(diagnose_bias, test_diagnose_bias)     /* /diagnose search, alibi and t5 biases */          \
    XX(qk_norm, test_qk_norm)                 /* q/k norms, soft cap */                            \
    XX(llama4_qk, test_llama4_qk)             /* Llama 4 attention temperature */                  \
    XX(mla, test_mla)                         /* multi-head latent attention */                    \
    XX(diagnose_neg, test_diagnose_neg)       /* /diagnose negative set */                         \
    XX(diagnose_v2, test_diagnose_v2)         /* /diagnose version 2 */                            \
    XX(determinism, test_determinism)         /* bits independent of batch and team size */        \
    XX(version, test_version)                 /* pe_version, pe_status_name */

#define UNIT_GROUP_DECLARE(name, function) void function(void);
UNIT_GROUPS(UNIT_GROUP_DECLARE)
#undef UNIT_GROUP_DECLARE

#endif /* POSENC_TEST_UNIT_LIST_H */
