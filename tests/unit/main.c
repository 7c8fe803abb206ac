/*
 * main.c - main of build/test_lib: walks the one list of lib/ unit groups
 * (test_list.h) to run them all or the ones named, and prints one summary
 * line "unit: N passed, M failed".
 *
 *   build/test_lib [--list | --dry] [GROUP...]   (see check_core.h)
 */
#include "check.h"
#include "test_list.h"

static const check_group GROUPS[] = {
#define UNIT_GROUP_ENTRY(name, function) {#name, function},
    UNIT_GROUPS(UNIT_GROUP_ENTRY)
#undef UNIT_GROUP_ENTRY
};

int main(int argc, char **argv)
{
    return check_main("unit", GROUPS, ARRAY_LEN(GROUPS), argc, argv);
}
