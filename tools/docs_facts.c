/*
 * docs_facts.c - prints the tables of the code that the documents quote, one
 * fact a line, for tools/docs.py (make docs, make check-docs):
 *
 *   docs_facts errors          STATUS CODE, one line per row of
 *                              API_ERROR_LIST (api/api_error.h)
 *   docs_facts architectures   one model_type a line, in the order of the
 *                              spec table (api/models/hf_specs.c)
 *
 * Linked against libposenc_api.a, so it reads the same tables the server
 * does. Exit status 2 on a bad argument, 1 when a list does not fit.
 */
#include <stdio.h>
#include <string.h>

#include "api_error.h"
#include "models/hf_spec.h"

static void print_errors(void)
{
    for (int k = 0; k < API_E_COUNT; k++)
        printf("%d %s\n", api_error_status((api_error_kind)k), api_error_code((api_error_kind)k));
}

static int print_architectures(void)
{
    char names[8192]; /* every model_type, ", "-separated */
    hf_spec_names(names, sizeof names);
    if (strlen(names) + 64 > sizeof names) {
        fprintf(stderr, "docs_facts: the list of model types may be cut: enlarge names[]\n");
        return 1;
    }
    for (char *p = names; *p;) {
        size_t n = strcspn(p, ",");
        printf("%.*s\n", (int)n, p);
        p += n;
        while (*p == ',' || *p == ' ')
            p++;
    }
    return 0;
}

int main(int argc, char **argv)
{
    if (argc == 2 && strcmp(argv[1], "errors") == 0) {
        print_errors();
        return 0;
    }
    if (argc == 2 && strcmp(argv[1], "architectures") == 0)
        return print_architectures();
    fprintf(stderr, "usage: docs_facts errors|architectures\n");
    return 2;
}
