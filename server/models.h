/*
 * models.h - the API service with the models of --model, loaded at
 * startup before the daemon listens.
 */
#ifndef SERVER_MODELS_H
#define SERVER_MODELS_H

#include "api.h"
#include "config.h"

/* Loads every --model of *cfg (and the built-in default) into a new
 * service. On failure logs which model, file and tensor, and returns NULL:
 * the caller exits 2. */
api_service *models_load(const server_config *cfg);

#endif /* SERVER_MODELS_H */
