/*
 * test_budget_default.c - the default memory budget (no --max-memory):
 * half of the cgroup's limit, read from a fake cgroup tree that
 * POSENC_CGROUP_ROOT points the server at, or half of MemTotal when the
 * cgroup sets none. Seen in /info's memory.budget_bytes.
 *
 *   v1          memory/memory.limit_in_bytes 2147483648: 1 GiB;
 *   v1 none     its "unlimited" count, 9223372036854771712: MemTotal / 2;
 *   v2          memory.max 1073741824: 512 MiB;
 *   v2 none     memory.max "max": MemTotal / 2;
 *   both        v2 3 GiB and v1 2 GiB (a hybrid host): the smaller, 1 GiB;
 *   none        an empty tree: MemTotal / 2.
 *
 * Seen to fail before v1 was read (and the root could be moved): v1 and
 * both gave 12.6 GB on a 24 GB machine, v2 too (its file was not read).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tests.h"

/* MemTotal in bytes, or 0. */
static long long mem_total(void)
{
    char line[128];
    long long kib = 0;
    FILE *f = fopen("/proc/meminfo", "r");
    if (!f)
        return 0;
    while (fgets(line, sizeof line, f))
        if (sscanf(line, "MemTotal: %lld kB", &kib) == 1)
            break;
    fclose(f);
    return kib * 1024;
}

/* Write text into root/file (root/memory made when the file is in it). */
static bool put(const char *root, const char *file, const char *text)
{
    char path[600];
    snprintf(path, sizeof path, "%s/memory", root);
    mkdir(path, 0755);
    snprintf(path, sizeof path, "%s/%s", root, file);
    FILE *f = fopen(path, "w");
    if (!f)
        return false;
    bool ok = fputs(text, f) >= 0;
    return fclose(f) == 0 && ok;
}

static void remove_tree(const char *root)
{
    char path[600];
    snprintf(path, sizeof path, "%s/memory/memory.limit_in_bytes", root);
    unlink(path);
    snprintf(path, sizeof path, "%s/memory.max", root);
    unlink(path);
    snprintf(path, sizeof path, "%s/memory", root);
    rmdir(path);
    rmdir(root);
}

/* A server on the tree `v2` (memory.max) and `v1` (limit_in_bytes) make,
 * either NULL for no file: its budget must be `want` bytes. */
static void budget_from(const char *label, const char *v2, const char *v1, long long want)
{
    char root[] = "/tmp/posenc-cgroup-XXXXXX", env[640];
    if (!CHECK(mkdtemp(root) != NULL, label, "mkdtemp"))
        return;
    bool ok = (!v2 || put(root, "memory.max", v2)) &&
              (!v1 || put(root, "memory/memory.limit_in_bytes", v1));
    snprintf(env, sizeof env, "POSENC_CGROUP_ROOT=%s", root);
    const char *const envs[] = {env, "POSENC_MAX_MEMORY=0", NULL};
    server s;
    if (CHECK(ok, label, "could not write the fake tree") &&
        server_start(&s, "budget-default", NULL, envs)) {
        http_resp r;
        http_get(&s, "/info", &r);
        json_t *mem = r.json ? json_object_get(r.json, "memory") : NULL;
        long long got = jint(mem, "budget_bytes", -1);
        CHECK(got == want, label, "/info memory.budget_bytes %lld, want %lld", got, want);
        http_resp_free(&r);
        server_stop(&s);
    }
    remove_tree(root);
}

void test_budget_default(void)
{
    long long half = mem_total() / 2;
    CHECK(half > 0, "MemTotal", "cannot read /proc/meminfo");
    budget_from("cgroup v1 limit 2 GiB", NULL, "2147483648\n", 1LL << 30);
    budget_from("cgroup v1 unlimited", NULL, "9223372036854771712\n", half);
    budget_from("cgroup v2 memory.max 1 GiB", "1073741824\n", NULL, 1LL << 29);
    budget_from("cgroup v2 memory.max max", "max\n", NULL, half);
    budget_from("cgroup v2 3 GiB and v1 2 GiB", "3221225472\n", "2147483648\n", 1LL << 30);
    budget_from("no cgroup files", NULL, NULL, half);
}
