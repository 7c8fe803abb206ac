/*
 * model_file.c - regular files of a model directory, opened without
 * blocking (model_file.h).
 */
#include "models/model_file.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int model_file_open(const char *path, int *fd, off_t *size, model_error *err)
{
    struct stat st;

    *fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
    if (*fd < 0)
        return model_fail(err, MODEL_E_FILE, "%s: %s", path, strerror(errno));
    if (fstat(*fd, &st) != 0) {
        int e = errno;
        close(*fd);
        *fd = -1;
        return model_fail(err, MODEL_E_FILE, "%s: %s", path, strerror(e));
    }
    if (!S_ISREG(st.st_mode)) {
        close(*fd);
        *fd = -1;
        return model_fail(err, MODEL_E_FILE, "%s: not a regular file (%s)", path,
                          S_ISFIFO(st.st_mode)  ? "a FIFO"
                          : S_ISDIR(st.st_mode) ? "a directory"
                                                : "a device or socket");
    }
    /* Regular files ignore O_NONBLOCK; clear it anyway for plain reads. */
    int flags = fcntl(*fd, F_GETFL);
    if (flags >= 0)
        (void)fcntl(*fd, F_SETFL, flags & ~O_NONBLOCK);
    *size = st.st_size;
    return 0;
}

/* fd's bytes to its end, in one read when the file is `size` bytes as
 * fstat said (jansson's json_loadfd reads a byte a call: 0.7 s a MB):
 * new, *len bytes; NULL with errno set on failure. */
static char *read_all(int fd, off_t size, size_t *len)
{
    size_t cap = size > 0 ? (size_t)size + 1 : 4096, n = 0;
    char *buf = malloc(cap); /* owned until returned */
    if (!buf)
        return NULL;
    for (;;) {
        if (n == cap) { /* the file grew since fstat */
            char *grown = realloc(buf, cap * 2);
            if (!grown)
                goto fail;
            buf = grown;
            cap *= 2;
        }
        ssize_t got = read(fd, buf + n, cap - n);
        if (got < 0 && errno == EINTR)
            continue;
        if (got < 0)
            goto fail;
        if (got == 0)
            break;
        n += (size_t)got;
    }
    *len = n;
    return buf;
fail:
    free(buf);
    return NULL;
}

json_t *model_file_json(const char *path, size_t flags, model_error *err)
{
    json_error_t jerr;
    json_t *root;
    off_t size;
    size_t len = 0;
    int fd;

    if (model_file_open(path, &fd, &size, err))
        return NULL;
    char *text = read_all(fd, size, &len);
    int read_errno = errno;
    close(fd);
    if (!text) {
        model_fail(err, MODEL_E_FILE, "%s: %s", path, strerror(read_errno));
        return NULL;
    }
    root = json_loadb(text, len, flags, &jerr);
    free(text);
    if (!root)
        model_fail(err, MODEL_E_FILE, "%s: %s (line %d column %d)", path, jerr.text, jerr.line,
                   jerr.column);
    return root;
}
