/*
 * padded_body.h - /encode bodies of an exact size, for the tests of the
 * body limits and the memory budget.
 */
#ifndef PADDED_BODY_H
#define PADDED_BODY_H

#include <stddef.h>

/* An /encode body of exactly len (>= 15) bytes: {"shape":[1,2]} padded
 * with spaces inside the object. Owned by the caller (free). */
char *padded_encode_body(size_t len);

#endif /* PADDED_BODY_H */
