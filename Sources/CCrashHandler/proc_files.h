// Small reads of a thread's /proc files, shared by the thread capture and the blocking-call notes.
#ifndef BLACKBOX_PROC_FILES_H
#define BLACKBOX_PROC_FILES_H

#include <stddef.h>
#include <sys/types.h>

/// Reads a small /proc file into `buffer` (NUL-terminated); the bytes read, or -1. Async-signal-safe.
ssize_t bbx_read_small_file(const char *path, char *buffer, size_t capacity);

/// "/proc/self/task/<tid>/<file>" into `path`. Async-signal-safe.
void bbx_task_path(char *path, size_t capacity, pid_t tid, const char *file);

#endif
