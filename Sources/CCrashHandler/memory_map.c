// The mappings around the fault address and the stack pointer, so that the next launch can tell a
// guard page from read-only data, a heap buffer from unmapped memory (docs/crash-capture.md, `map`).
// Read in the handler because the map at crash time is the evidence: by the next launch it is gone.
#define _GNU_SOURCE
#include "memory_map.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

#define MAX_TARGETS 4
// A maps line is ~75 bytes plus its path; a longer path is cut (its start and permissions are kept).
#define LINE_CAPACITY 320

enum { LOOKING, AWAITING_ABOVE, DONE };

// Static: only the crashing thread runs the handler's sections.
static char chunk[4096];
static char line[LINE_CAPACITY];
static char previous[LINE_CAPACITY];

static int hex_digit(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    return -1;
}

// "start-end …": 0 when the line does not start so.
static int parse_range(const char *text, uint64_t *start, uint64_t *end) {
    uint64_t value = 0;
    int digits = 0;
    for (; hex_digit(*text) >= 0; text++, digits++) value = value * 16 + (uint64_t)hex_digit(*text);
    if (digits == 0 || *text != '-') return 0;
    *start = value;
    value = 0;
    digits = 0;
    for (text++; hex_digit(*text) >= 0; text++, digits++) value = value * 16 + (uint64_t)hex_digit(*text);
    if (digits == 0) return 0;
    *end = value;
    return 1;
}

static void write_line(bbx_writer *w, const char *role, const char *suffix, const char *text) {
    bbx_write_str(w, "map ");
    bbx_write_str(w, role);
    bbx_write_str(w, suffix);
    bbx_write_str(w, " ");
    bbx_write_str(w, text);
    bbx_write_str(w, "\n");
}

void bbx_memory_map_write(bbx_writer *w, const uint64_t *addresses, const char *const *roles, int count) {
    if (count > MAX_TARGETS) count = MAX_TARGETS;
    int state[MAX_TARGETS];
    for (int i = 0; i < count; i++) state[i] = LOOKING;
    int fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
    if (fd < 0) return;
    size_t used = 0;
    int have_previous = 0;
    for (;;) {
        ssize_t n = read(fd, chunk, sizeof(chunk));
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) break;
        for (ssize_t at = 0; at < n; at++) {
            if (chunk[at] != '\n') {
                if (used + 1 < LINE_CAPACITY) line[used++] = chunk[at];
                continue;
            }
            line[used] = 0;
            used = 0;
            uint64_t start, end;
            if (!parse_range(line, &start, &end)) continue;
            for (int i = 0; i < count; i++) {
                if (state[i] == AWAITING_ABOVE) {
                    write_line(w, roles[i], "-above", line);
                    state[i] = DONE;
                } else if (state[i] == LOOKING && addresses[i] < end) {
                    if (have_previous) write_line(w, roles[i], "-below", previous);
                    if (start <= addresses[i]) {
                        write_line(w, roles[i], "", line);
                        state[i] = AWAITING_ABOVE;
                    } else {
                        write_line(w, roles[i], "-above", line);
                        state[i] = DONE;
                    }
                }
            }
            memcpy(previous, line, strlen(line) + 1);
            have_previous = 1;
        }
    }
    close(fd);
    // Above every mapping: only the one below.
    for (int i = 0; i < count; i++) {
        if (state[i] == LOOKING && have_previous) write_line(w, roles[i], "-below", previous);
    }
    bbx_write_flush(w);
}
