// Every thread started after crash capture is installed gets its alternate signal stack before any of
// the app's code runs on it. A stack overflow can only be reported from an alternate stack, and the
// sweep (altstacks.c) reaches a new thread up to one interval late: a Dispatch or Swift-concurrency
// worker the pool starts under load, recursing at once, died unreported. So pthread_create is wrapped,
// as the sanitizers' runtimes wrap it: the app's start routine runs behind a trampoline that installs
// the stack and tells the sweep to leave the thread alone (no signal is ever sent to it).
//
// The wrapper is a weak definition in the program: the dynamic linker binds every library's
// pthread_create (libdispatch, the Swift runtime, Foundation, SwiftNIO) to it ahead of libc's, and a
// sanitizer's own strong wrapper, when linked, replaces it without a conflict (the sweep then covers
// the threads alone). Threads started before installation, or by clone(2) directly, are the sweep's.
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>

#include "CCrashHandler.h"
#include "altstacks.h"
#include "syscalls.h"

typedef int (*pthread_create_function)(pthread_t *, const pthread_attr_t *, void *(*)(void *), void *);

static _Atomic(pthread_create_function) libc_pthread_create;
static atomic_int covering;
static atomic_uint_fast64_t covered_threads;

typedef struct thread_start {
    void *(*routine)(void *);
    void *argument;
} thread_start;

static void *start_covered(void *value) {
    thread_start start = *(thread_start *)value;
    free(value);
    if (bbx_crash_ensure_alternate_stack(BBX_ALTSTACK_SIZE) == 0) {
        bbx_altstacks_note_prepared((pid_t)bbx_syscall0(SYS_gettid));
        atomic_fetch_add(&covered_threads, 1);
    }
    return start.routine(start.argument);
}

__attribute__((weak)) int pthread_create(
    pthread_t *thread, const pthread_attr_t *attributes, void *(*routine)(void *), void *argument) {
    pthread_create_function next = atomic_load(&libc_pthread_create);
    if (next == NULL) {
        next = (pthread_create_function)dlsym(RTLD_NEXT, "pthread_create");
        // No libc function to call (never seen): fail as pthread_create fails for lack of resources.
        if (next == NULL) return EAGAIN;
        atomic_store(&libc_pthread_create, next);
    }
    if (!atomic_load(&covering)) return next(thread, attributes, routine, argument);
    thread_start *start = malloc(sizeof(thread_start));
    if (start == NULL) return next(thread, attributes, routine, argument);
    start->routine = routine;
    start->argument = argument;
    int error = next(thread, attributes, start_covered, start);
    if (error != 0) free(start);
    return error;
}

void bbx_crash_cover_new_threads(int on) { atomic_store(&covering, on != 0); }

uint64_t bbx_crash_covered_thread_count(void) { return atomic_load(&covered_threads); }
