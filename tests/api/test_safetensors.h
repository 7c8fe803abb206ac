/*
 * test_safetensors.h - the safetensors reader and model-directory loader,
 * without a server (tests/api/test_safetensors.c).
 */
#ifndef TEST_SAFETENSORS_H
#define TEST_SAFETENSORS_H

void test_safetensors(void);

#endif /* TEST_SAFETENSORS_H */
