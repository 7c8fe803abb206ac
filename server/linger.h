/*
 * linger.h - lingering close: reading and dropping what a client still
 * sends after its answer, before the socket is closed.
 *
 * When the server answers before a request's body is in (413 for a
 * declared size over --max-body-bytes, 401, 404, a framing error) and
 * closes the connection, a client still sending (Python's urllib sends
 * the whole body before it reads) would make the kernel reset the
 * connection: closing a socket with unread data sends RST, and the RST
 * also throws away the answer waiting in the client's receive buffer, so
 * the client sees a broken pipe instead of the 413. nginx's answer is the
 * lingering close: after the answer, shut down the sending side (FIN),
 * keep reading and dropping for a bounded time, then close. Here a socket
 * to linger on is duplicated before libmicrohttpd closes its descriptor
 * (libmicrohttpd has already shut down its sending side), and a thread
 * reads and drops until the client closes or goes quiet, or the time is
 * up.
 *
 * Bounds: at most LINGER_MAX sockets at once (past them, closed at once),
 * each for at most LINGER_TIME_S seconds and LINGER_QUIET_S without data.
 */
#ifndef SERVER_LINGER_H
#define SERVER_LINGER_H

#define LINGER_MAX 128
#define LINGER_TIME_S 5
#define LINGER_QUIET_S 2

typedef struct lingerer lingerer;

/* New lingerer and its thread, or NULL. */
lingerer *linger_new(void);

/* Stops the thread and closes every socket still lingering; accepts NULL. */
void linger_free(lingerer *l);

/* Lingers on the socket of fd, which stays the caller's (it is
 * duplicated). Accepts l NULL (then nothing happens). */
void linger_add(lingerer *l, int fd);

#endif /* SERVER_LINGER_H */
