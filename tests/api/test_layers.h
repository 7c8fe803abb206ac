/*
 * test_layers.h - the pieces shared across layers: the model layer's error
 * kinds in the contract's table, the one overflow-checked multiply and the
 * one JSON string escaper as server/ sees it (tests/api/test_layers.c).
 */
#ifndef TEST_LAYERS_H
#define TEST_LAYERS_H

void test_layers(void);

#endif /* TEST_LAYERS_H */
