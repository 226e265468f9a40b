// Crash-time delivery (see delivery.h). Everything the handler needs is copied here at configuration
// time; the handler itself only assembles an argument vector from those pointers and the report's
// name.
#define _GNU_SOURCE
#include "delivery.h"

#include <errno.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "CCrashHandler.h"
#include "syscalls.h"

typedef struct delivery_config {
    char *executable;
    char *arguments[BBX_DELIVERY_MAX_ARGUMENTS + 1];
    int argument_count;
    char *environment[BBX_DELIVERY_MAX_ENVIRONMENT + 1];
    char *report_directory;
    uint32_t deadline_ms;
} delivery_config;

// Replaced as a whole and never freed, like the handler's options: a crashing thread may be reading
// the previous one.
static _Atomic(delivery_config *) delivery_in_effect;

// Only the one crashing thread uses these.
static char report_path[4096 + 256];
static char *argument_vector[BBX_DELIVERY_MAX_ARGUMENTS + 3];

static char *copy_string(const char *text) { return text == NULL ? NULL : strdup(text); }

int bbx_crash_set_delivery(const bbx_crash_delivery *delivery) {
    if (delivery == NULL) {
        atomic_store(&delivery_in_effect, NULL);
        return 0;
    }
    if (delivery->executable == NULL || delivery->report_directory == NULL ||
        strlen(delivery->report_directory) > 4096 || delivery->argument_count < 0 ||
        delivery->argument_count > BBX_DELIVERY_MAX_ARGUMENTS || delivery->environment_count < 0 ||
        delivery->environment_count > BBX_DELIVERY_MAX_ENVIRONMENT || delivery->deadline_ms == 0)
        return EINVAL;
    delivery_config *config = calloc(1, sizeof(delivery_config));
    if (config == NULL) return ENOMEM;
    config->executable = copy_string(delivery->executable);
    config->report_directory = copy_string(delivery->report_directory);
    config->argument_count = delivery->argument_count;
    for (int i = 0; i < delivery->argument_count; i++) config->arguments[i] = copy_string(delivery->arguments[i]);
    for (int i = 0; i < delivery->environment_count; i++)
        config->environment[i] = copy_string(delivery->environment[i]);
    config->deadline_ms = delivery->deadline_ms;
    atomic_store(&delivery_in_effect, config);
    return 0;
}

uint32_t bbx_delivery_deadline_ms(void) {
    delivery_config *config = atomic_load(&delivery_in_effect);
    return config == NULL ? 0 : config->deadline_ms;
}

static uint64_t monotonic_ms(void) {
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (uint64_t)now.tv_sec * 1000 + (uint64_t)now.tv_nsec / 1000000;
}

static size_t append(char *buffer, size_t used, size_t capacity, const char *text) {
    size_t length = strlen(text);
    if (used + length >= capacity) length = capacity - used - 1;
    memcpy(buffer + used, text, length);
    buffer[used + length] = 0;
    return used + length;
}

// In the new process, before execve: raw system calls only (it is a copy of a crashing,
// multithreaded process; no lock in it can be trusted).
static void become_helper(const delivery_config *config) {
    uint64_t no_signals = 0;
    // The handler runs with signals blocked, and a mask survives execve.
    bbx_syscall4(SYS_rt_sigprocmask, SIG_SETMASK, (long)&no_signals, 0, sizeof(no_signals));
    // The app's descriptors (listening sockets, locked files) must not live on in the helper.
#ifdef SYS_close_range
    if (bbx_syscall3(SYS_close_range, 3, ~0U, 0) != 0)
#endif
        for (int fd = 3; fd < 1024; fd++) bbx_syscall1(SYS_close, fd);
    bbx_syscall3(SYS_execve, (long)config->executable, (long)argument_vector, (long)config->environment);
    bbx_syscall1(SYS_exit_group, 127);
}

bbx_delivery_outcome bbx_delivery_run(const char *report_name, int *status) {
    delivery_config *config = atomic_load(&delivery_in_effect);
    if (config == NULL || report_name == NULL) return BBX_DELIVERY_OFF;
    size_t used = append(report_path, 0, sizeof(report_path), config->report_directory);
    used = append(report_path, used, sizeof(report_path), "/");
    append(report_path, used, sizeof(report_path), report_name);
    int count = 0;
    argument_vector[count++] = config->executable;
    for (int i = 0; i < config->argument_count; i++) argument_vector[count++] = config->arguments[i];
    argument_vector[count++] = report_path;
    argument_vector[count] = NULL;

    // A plain fork, without glibc's atfork handlers (they take locks) and without vfork's shared
    // stack (we are on the crashed thread's alternate stack).
    long child = bbx_syscall5(SYS_clone, SIGCHLD, 0, 0, 0, 0);
    if (child < 0) return BBX_DELIVERY_NOT_STARTED;
    if (child == 0) become_helper(config);

    uint64_t deadline = monotonic_ms() + config->deadline_ms;
    for (;;) {
        long reaped = bbx_syscall4(SYS_wait4, (pid_t)child, (long)status, WNOHANG, 0);
        if (reaped == child) {
            return WIFEXITED(*status) && WEXITSTATUS(*status) == 0 ? BBX_DELIVERY_DELIVERED : BBX_DELIVERY_FAILED;
        }
        if (reaped < 0 && errno != EINTR && kill((pid_t)child, 0) != 0) return BBX_DELIVERY_UNKNOWN;
        if (monotonic_ms() >= deadline) {
            kill((pid_t)child, SIGKILL);
            bbx_syscall4(SYS_wait4, (pid_t)child, (long)status, 0, 0);
            return BBX_DELIVERY_TIMED_OUT;
        }
        struct timespec tick = {0, 5 * 1000 * 1000};
        nanosleep(&tick, NULL);
    }
}
