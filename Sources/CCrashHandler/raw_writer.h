// A tiny buffered writer for the signal handler: no malloc, no stdio, no locks.
#ifndef BLACKBOX_RAW_WRITER_H
#define BLACKBOX_RAW_WRITER_H

#include <stddef.h>
#include <stdint.h>

typedef struct bbx_writer {
    int fd;
    size_t used;
    char buffer[1024];
} bbx_writer;

void bbx_write_flush(bbx_writer *w);
void bbx_write_bytes(bbx_writer *w, const void *bytes, size_t count);
void bbx_write_str(bbx_writer *w, const char *text);
void bbx_write_hex(bbx_writer *w, uint64_t value);
void bbx_write_dec(bbx_writer *w, int64_t value);
/// Writes `bytes` straight to the descriptor, bypassing (after flushing) the buffer.
void bbx_write_direct(bbx_writer *w, const void *bytes, size_t count);

#endif
