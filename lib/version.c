/*
 * version.c - the library's version and the names of its status codes.
 */
#include "posenc.h"

const char *pe_version(void)
{
    return PE_VERSION_STRING;
}

const char *pe_status_name(pe_status status)
{
    /* indexed by pe_status, in its order */
    static const char *const names[] = {"ok", "enomem", "erange", "enonfinite", "einval"};
    if ((unsigned)status >= sizeof names / sizeof names[0])
        return "unknown";
    return names[status];
}
