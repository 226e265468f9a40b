// Small reads of /proc/self/task/<tid>/… for the thread capture and the blocking-call notes
// (open, read, close only: async-signal-safe).
#define _GNU_SOURCE
#include "proc_files.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

#include "raw_writer.h"

// Reads a small /proc file into `buffer` (NUL-terminated); the bytes read, or -1.
ssize_t bbx_read_small_file(const char *path, char *buffer, size_t capacity) {
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return -1;
    size_t used = 0;
    while (used + 1 < capacity) {
        ssize_t n = read(fd, buffer + used, capacity - 1 - used);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) break;
        used += (size_t)n;
    }
    close(fd);
    buffer[used] = 0;
    return (ssize_t)used;
}

// "/proc/self/task/<tid>/<file>" into `path`.
void bbx_task_path(char *path, size_t capacity, pid_t tid, const char *file) {
    bbx_writer text = {.fd = -1};
    bbx_write_str(&text, "/proc/self/task/");
    bbx_write_dec(&text, tid);
    bbx_write_str(&text, "/");
    bbx_write_str(&text, file);
    size_t length = text.used < capacity - 1 ? text.used : capacity - 1;
    memcpy(path, text.buffer, length);
    path[length] = 0;
}
