/*
 * model_file.h - opening the files of a model directory without blocking:
 * config.json, model.safetensors, the index and its shards must be regular
 * files. A FIFO (or a device) would block open() or read() for ever, so a
 * file is opened with O_NONBLOCK and checked with fstat on the descriptor
 * itself (no window between the check and the use).
 */
#ifndef MODEL_FILE_H
#define MODEL_FILE_H

#include <jansson.h>
#include <sys/types.h>

#include "models/model_error.h"

/* Open `path` read-only; it must be a regular file. On success *fd is an
 * open descriptor (the caller closes it) and *size its size in bytes. */
int model_file_open(const char *path, int *fd, off_t *size, model_error *err);

/* Read a JSON file (a regular file) whole. New reference, or NULL + *err
 * ("<path>: <what>"). */
json_t *model_file_json(const char *path, size_t flags, model_error *err);

#endif /* MODEL_FILE_H */
