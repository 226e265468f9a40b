#include "raw_writer.h"

#include <errno.h>
#include <string.h>
#include <unistd.h>

// write(2) until done; gives up on a real error (the report is best effort, the process is dying).
static void write_all(int fd, const char *bytes, size_t count) {
    while (count > 0) {
        ssize_t written = write(fd, bytes, count);
        if (written < 0) {
            if (errno == EINTR) continue;
            return;
        }
        bytes += written;
        count -= (size_t)written;
    }
}

void bbx_write_flush(bbx_writer *w) {
    if (w->used > 0 && w->fd >= 0) write_all(w->fd, w->buffer, w->used);
    w->used = 0;
}

void bbx_write_bytes(bbx_writer *w, const void *bytes, size_t count) {
    const char *p = bytes;
    while (count > 0) {
        if (w->used == sizeof(w->buffer)) bbx_write_flush(w);
        size_t room = sizeof(w->buffer) - w->used;
        size_t n = count < room ? count : room;
        memcpy(w->buffer + w->used, p, n);
        w->used += n;
        p += n;
        count -= n;
    }
}

void bbx_write_str(bbx_writer *w, const char *text) {
    if (text != NULL) bbx_write_bytes(w, text, strlen(text));
}

void bbx_write_hex(bbx_writer *w, uint64_t value) {
    char digits[18];
    int i = sizeof(digits);
    do {
        digits[--i] = "0123456789abcdef"[value & 15];
        value >>= 4;
    } while (value != 0);
    digits[--i] = 'x';
    digits[--i] = '0';
    bbx_write_bytes(w, digits + i, sizeof(digits) - (size_t)i);
}

void bbx_write_dec(bbx_writer *w, int64_t value) {
    char digits[21];
    int i = sizeof(digits);
    uint64_t magnitude = value < 0 ? (uint64_t)0 - (uint64_t)value : (uint64_t)value;
    do {
        digits[--i] = (char)('0' + magnitude % 10);
        magnitude /= 10;
    } while (magnitude != 0);
    if (value < 0) digits[--i] = '-';
    bbx_write_bytes(w, digits + i, sizeof(digits) - (size_t)i);
}

void bbx_write_direct(bbx_writer *w, const void *bytes, size_t count) {
    bbx_write_flush(w);
    if (w->fd >= 0) write_all(w->fd, bytes, count);
}
