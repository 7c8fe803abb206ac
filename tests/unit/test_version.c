/*
 * test_version.c - the library's version and status names: pe_version()
 * against the header's macros (written out here as text, so a macro that
 * drifts from the others fails), and every pe_status by its name.
 */
#include <stdio.h>
#include <string.h>

#include "check.h"
#include "posenc.h"
#include "test_list.h"

void test_version(void)
{
    char joined[32];
    snprintf(joined, sizeof joined, "%d.%d.%d", PE_VERSION_MAJOR, PE_VERSION_MINOR,
             PE_VERSION_PATCH);
    CHECK(strcmp(pe_version(), PE_VERSION_STRING) == 0, "pe_version() '%s' is the header's '%s'",
          pe_version(), PE_VERSION_STRING);
    CHECK(strcmp(joined, PE_VERSION_STRING) == 0,
          "MAJOR.MINOR.PATCH '%s' is PE_VERSION_STRING '%s'", joined, PE_VERSION_STRING);
    CHECK(PE_VERSION_NUMBER == PE_VERSION_MAJOR * 10000 + PE_VERSION_MINOR * 100 + PE_VERSION_PATCH,
          "PE_VERSION_NUMBER %d", PE_VERSION_NUMBER);

    static const struct {
        pe_status status;
        const char *name;
    } names[] = {{PE_OK, "ok"},
                 {PE_ENOMEM, "enomem"},
                 {PE_ERANGE, "erange"},
                 {PE_ENONFINITE, "enonfinite"},
                 {PE_EINVAL, "einval"},
                 {(pe_status)99, "unknown"},
                 {(pe_status)-1, "unknown"}};
    for (size_t i = 0; i < ARRAY_LEN(names); i++)
        CHECK(strcmp(pe_status_name(names[i].status), names[i].name) == 0,
              "pe_status_name(%d) is '%s', want '%s'", (int)names[i].status,
              pe_status_name(names[i].status), names[i].name);
}
