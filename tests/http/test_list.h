/*
 * test_list.h - the one list of the groups of build/test_http: main
 * (test_http.c) walks it both to run every group and to select groups by
 * name, and tests.h declares each group's function from it. Registering a
 * group is one line here (and its function in its file).
 *
 * XX(name, function, setup): `build/test_http name` runs that group alone
 * (with the server setup it needs); setup is one of
 *   SERVER   void function(const server *s): on the shared server started
 *            with no flags (the default model);
 *   WEIGHTS  void function(const server *s, const default_model *dm): the
 *            same, with the default model's weights recomputed here;
 *   OWN      void function(void): starts the servers it needs, each with
 *            its own flags.
 * The SERVER and WEIGHTS groups run first, in this order, on one server
 * (started only when one of them is selected); then the OWN groups, in
 * this order.
 */
#ifndef POSENC_TEST_HTTP_LIST_H
#define POSENC_TEST_HTTP_LIST_H

#define HTTP_GROUPS(XX)                                                                            \
    XX(service, test_service, SERVER)          /* test_service.c: probes, /info, spec, metrics */  \
    XX(encode, test_encode, SERVER)            /* test_encode.c: every scheme */                   \
    XX(apply, test_apply, WEIGHTS)             /* test_apply.c: q/k/v, norms, models */            \
    XX(errors, test_errors, SERVER)            /* test_errors.c: the error table */                \
    XX(grammar, test_grammar, SERVER)          /* test_grammar.c: streaming, number grammar */     \
    XX(mask, test_mask, SERVER)                /* test_mask.c: attention_mask and causal */        \
    XX(multidim, test_multidim, SERVER)        /* test_multidim.c: mrope, mm_layout */             \
    XX(concurrency, test_concurrency, WEIGHTS) /* test_concurrency.c: answers never cross */       \
    XX(diagnose, test_diagnose, WEIGHTS)       /* test_diagnose.c: every finding code */           \
    XX(diagnose_nd, test_diagnose_nd, SERVER)  /* test_diagnose_nd.c: mrope, mm_rule, rope2d */    \
    XX(fields, test_fields, WEIGHTS)           /* test_fields.c: X_shape on every endpoint */      \
    XX(auth, test_auth, OWN)                   /* test_errors.c: --api-key */                      \
    XX(limits, test_limits, OWN)               /* test_errors.c: body and token limits */          \
    XX(reqlimits, test_reqlimits, OWN)         /* test_robust.c: depth, batch, dims, heads */      \
    XX(slowclient, test_slowclient, OWN)       /* test_robust.c: slow and stalled clients */       \
    XX(connlimit, test_connlimit, OWN)         /* test_robust.c: connection caps */                \
    XX(overload, test_overload, OWN)           /* test_robust.c: 503 over capacity */              \
    XX(drain, test_drain, OWN)                 /* test_robust.c: SIGTERM drains */                 \
    XX(observe, test_observe, OWN)             /* test_robust.c: logs and metrics */               \
    XX(hardening, test_hardening, OWN)         /* test_hardening.c: hardening, raw sockets */      \
    XX(framing, test_framing, OWN)             /* test_framing.c: RFC 9112 framing, raw sockets */ \
    XX(determinism, test_determinism, OWN)     /* test_determinism.c: same bits under load */      \
    XX(waitpolicy, test_wait_policy, OWN)      /* test_wait_policy.c: OMP wait policy at start */  \
    XX(intake, test_intake, OWN)               /* test_intake.c: slow bodies */                    \
    XX(budget, test_budget, OWN)               /* test_budget.c: decoding and /diagnose charged */ \
    XX(budget_own, test_budget_own, OWN)       /* test_budget_own.c: index, strings, own bytes */  \
    XX(signals, test_signals, OWN)             /* test_signals.c: HUP, USR1/2, TERM at load */     \
    XX(budget_default, test_budget_default, OWN) /* test_budget_default.c: cgroup v1, v2 */        \
    XX(json_log, test_json_log, OWN)             /* test_json_log.c: JSON lines, times, stdout */  \
    XX(lanes, test_lanes, OWN)                   /* test_lanes.c: light and heavy lanes, by cost */

#endif /* POSENC_TEST_HTTP_LIST_H */
