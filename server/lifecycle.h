/*
 * lifecycle.h - libmicrohttpd's access handler and completion callback:
 * the calls that move a request (request.h) from its headers to its end.
 *
 * MHD calls the access handler several times per request: once when the
 * headers are in (*req_cls == NULL: allocate, check, maybe answer at once
 * without reading the body), once per chunk of body (body_intake.h), and
 * once more with no data (run the route's handler and answer, or, for a
 * request on a worker, send what it computed). The completion callback
 * then logs, counts and frees the request.
 */
#ifndef SERVER_LIFECYCLE_H
#define SERVER_LIFECYCLE_H

#include <stddef.h>

#include <microhttpd.h>

/* MHD_OPTION_URI_LOG_CALLBACK: sees the request target before
 * libmicrohttpd decodes it (and cuts it at a %00), and marks the request
 * in what becomes *req_cls when its path holds a %00 or the target holds
 * whitespace or a control character (400 both). */
void *lifecycle_on_uri(void *cls, const char *uri, struct MHD_Connection *conn);

/* MHD_AccessHandlerCallback; cls is the server_ctx. */
enum MHD_Result lifecycle_on_access(void *cls, struct MHD_Connection *conn, const char *url,
                                    const char *method, const char *version,
                                    const char *upload_data, size_t *upload_data_size,
                                    void **req_cls);

/* MHD_RequestCompletedCallback; cls is the server_ctx. */
void lifecycle_on_completed(void *cls, struct MHD_Connection *conn, void **req_cls,
                            enum MHD_RequestTerminationCode toe);

#endif /* SERVER_LIFECYCLE_H */
