/*
 * main.c - runs every lib/ unit suite and prints one summary line.
 */
#include <stdio.h>

#include "check.h"

void test_diagnose_rope(void); /* test_diagnose_rope.c */
void test_diagnose_abs(void);  /* test_diagnose_abs.c */
void test_diagnose_bias(void); /* test_diagnose_bias.c */

int main(void)
{
    test_norm();
    test_sinusoidal();
    test_absolute();
    test_rope();
    test_rope_freq();
    test_alibi();
    test_t5();
    test_qkv();
    test_default_weights();
    test_threads();
    test_pe_cache();
    test_diagnose_rope();
    test_diagnose_abs();
    test_diagnose_bias();
    test_qk_norm();
    test_llama4_qk();
    test_mla();
    test_determinism();

    printf("unit: %d passed, %d failed\n", check_passed_count(), check_failed_count());
    return check_failed_count() == 0 ? 0 : 1;
}
