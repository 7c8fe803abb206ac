/*
 * linger.c - the lingering close (see linger.h).
 */
#include "linger.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

#include "mono_clock.h"

#define LINGER_POLL_MS 50
#define NS_PER_S 1000000000LL

typedef struct lingering {
    int fd;           /* owned: the duplicate */
    int64_t until_ns; /* closed at this time at the latest */
    int64_t last_ns;  /* when data last came */
} lingering;

struct lingerer {
    pthread_mutex_t lock; /* the set and stopping */
    pthread_cond_t wake;  /* a socket was added, or stop */
    lingering set[LINGER_MAX];
    unsigned n;
    bool stopping;
    pthread_t thread;
};

/* Reads and drops what fd has; false once the client closed or failed. */
static bool drain(int fd)
{
    char buf[16384];
    for (int i = 0; i < 64; i++) {
        ssize_t k = recv(fd, buf, sizeof buf, MSG_DONTWAIT);
        if (k > 0)
            continue;
        return k < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR);
    }
    return true;
}

/* One round under the lock: polls the set (without the lock), drains
 * what is readable and closes what is done. */
static void linger_round(lingerer *l)
{
    struct pollfd p[LINGER_MAX];
    unsigned n = l->n;
    for (unsigned i = 0; i < n; i++)
        p[i] = (struct pollfd){.fd = l->set[i].fd, .events = POLLIN};
    pthread_mutex_unlock(&l->lock);
    poll(p, n, LINGER_POLL_MS);
    pthread_mutex_lock(&l->lock);
    int64_t now = mono_now_ns();
    /* Sockets added meanwhile sit past n: untouched this round. */
    for (unsigned i = n; i-- > 0;) {
        lingering *g = &l->set[i];
        bool open = true;
        if (p[i].revents != 0) {
            open = drain(g->fd);
            g->last_ns = now;
        }
        if (open && now < g->until_ns && now - g->last_ns < LINGER_QUIET_S * NS_PER_S)
            continue;
        close(g->fd);
        *g = l->set[--l->n];
    }
}

static void *linger_main(void *arg)
{
    lingerer *l = arg;
    pthread_mutex_lock(&l->lock);
    while (!l->stopping) {
        if (l->n == 0)
            pthread_cond_wait(&l->wake, &l->lock);
        else
            linger_round(l);
    }
    pthread_mutex_unlock(&l->lock);
    return NULL;
}

lingerer *linger_new(void)
{
    lingerer *l = calloc(1, sizeof *l);
    if (l == NULL)
        return NULL;
    pthread_mutex_init(&l->lock, NULL);
    pthread_cond_init(&l->wake, NULL);
    if (pthread_create(&l->thread, NULL, linger_main, l) != 0) {
        pthread_mutex_destroy(&l->lock);
        pthread_cond_destroy(&l->wake);
        free(l);
        return NULL;
    }
    return l;
}

void linger_free(lingerer *l)
{
    if (l == NULL)
        return;
    pthread_mutex_lock(&l->lock);
    l->stopping = true;
    pthread_cond_signal(&l->wake);
    pthread_mutex_unlock(&l->lock);
    pthread_join(l->thread, NULL);
    for (unsigned i = 0; i < l->n; i++)
        close(l->set[i].fd);
    pthread_mutex_destroy(&l->lock);
    pthread_cond_destroy(&l->wake);
    free(l);
}

void linger_add(lingerer *l, int fd)
{
    if (l == NULL)
        return;
    pthread_mutex_lock(&l->lock);
    int copy = l->n < LINGER_MAX ? fcntl(fd, F_DUPFD_CLOEXEC, 0) : -1;
    if (copy >= 0) {
        shutdown(copy, SHUT_WR); /* the answer is out: FIN (libmicrohttpd did too) */
        int64_t now = mono_now_ns();
        l->set[l->n++] = (lingering){copy, now + LINGER_TIME_S * NS_PER_S, now};
        pthread_cond_signal(&l->wake);
    }
    pthread_mutex_unlock(&l->lock);
}
