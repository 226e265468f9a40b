// Blocking calls, each on a thread of its own, while Blackbox's signals keep arriving (thread captures
// as a hang report makes them, the alternate-stack sweep): what each call returned and how long it
// took, against what it does undisturbed. In C: the calls are the system's, and select's fd_set and
// the epoll structures are C's. For the crash child (`blocking-calls`), never shipped.
#define _GNU_SOURCE
#include "CBlackboxTestCrashes.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/select.h>
#include <time.h>
#include <unistd.h>

#include "CCrashHandler.h"

#define WAIT_MS 1500

static long now_ms(void) {
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return now.tv_sec * 1000 + now.tv_nsec / 1000000;
}

static struct timespec in_ms(clockid_t clock, long ms) {
    struct timespec at;
    clock_gettime(clock, &at);
    at.tv_sec += ms / 1000;
    at.tv_nsec += (ms % 1000) * 1000000;
    if (at.tv_nsec >= 1000000000) {
        at.tv_sec++;
        at.tv_nsec -= 1000000000;
    }
    return at;
}

typedef struct call {
    const char *name;
    // Woken through a pipe WAIT_MS after it started (its read end is `fd`), or waits out its own
    // timeout. From its own start, not the first thread's: a thread starts milliseconds late under
    // load, and a call woken early would read as cut short.
    int woken;
    // The app's own signal (SIGUSR1, handled) interrupts it at WAIT_MS: EINTR is the right answer.
    int app_signal;
    long expected_result;
    int expected_error;
    int pipe[2];
    pthread_t thread;
    atomic_long started, ended;
    long result;
    int error;
} call;

static void app_handler(int sig) { (void)sig; }

static long run(call *c) {
    const char *n = c->name;
    int fd = c->pipe[0];
    if (!strcmp(n, "sleep")) return sleep(WAIT_MS / 1000 + 1) == 0 ? 0 : -1;  // 2 s; returns what is left
    if (!strcmp(n, "usleep")) return usleep(WAIT_MS * 1000);
    if (!strcmp(n, "nanosleep") || !strcmp(n, "nanosleep-app-signal")) {
        struct timespec wait = {WAIT_MS / 1000, (WAIT_MS % 1000) * 1000000L};
        if (c->app_signal) {
            wait.tv_sec += 3;
            // The app takes its signal on this thread (a parent may have left it blocked).
            sigset_t usr1;
            sigemptyset(&usr1);
            sigaddset(&usr1, SIGUSR1);
            pthread_sigmask(SIG_UNBLOCK, &usr1, NULL);
        }
        return nanosleep(&wait, NULL);
    }
    if (!strcmp(n, "clock_nanosleep-absolute")) {
        struct timespec at = in_ms(CLOCK_MONOTONIC, WAIT_MS);
        int error = clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &at, NULL);
        errno = error;
        return error == 0 ? 0 : -1;
    }
    if (!strcmp(n, "poll-timeout") || !strcmp(n, "poll-woken")) {
        struct pollfd entry = {.fd = fd, .events = POLLIN};
        return poll(&entry, 1, c->woken ? -1 : WAIT_MS);
    }
    if (!strcmp(n, "ppoll-timeout")) {
        struct pollfd entry = {.fd = fd, .events = POLLIN};
        struct timespec timeout = {WAIT_MS / 1000, (WAIT_MS % 1000) * 1000000L};
        return ppoll(&entry, 1, &timeout, NULL);
    }
    if (!strcmp(n, "select-timeout")) {
        fd_set readable;
        FD_ZERO(&readable);
        FD_SET(fd, &readable);
        struct timeval timeout = {WAIT_MS / 1000, (WAIT_MS % 1000) * 1000};
        return select(fd + 1, &readable, NULL, NULL, &timeout);
    }
    if (!strcmp(n, "epoll-woken") || !strcmp(n, "epoll-timeout")) {
        int epoll = epoll_create1(EPOLL_CLOEXEC);
        struct epoll_event interest = {.events = EPOLLIN, .data.fd = fd}, ready;
        epoll_ctl(epoll, EPOLL_CTL_ADD, fd, &interest);
        long result = epoll_wait(epoll, &ready, 1, c->woken ? -1 : WAIT_MS);
        int error = errno;
        close(epoll);
        errno = error;
        return result;
    }
    if (!strcmp(n, "read-pipe")) {
        char byte;
        return read(fd, &byte, 1);
    }
    if (!strcmp(n, "sem_timedwait")) {
        sem_t semaphore;
        sem_init(&semaphore, 0, 0);
        struct timespec at = in_ms(CLOCK_REALTIME, WAIT_MS);
        long result = sem_timedwait(&semaphore, &at);
        int error = errno;
        sem_destroy(&semaphore);
        errno = error;
        return result;
    }
    if (!strcmp(n, "pthread_cond_timedwait")) {
        pthread_mutex_t mutex = PTHREAD_MUTEX_INITIALIZER;
        pthread_cond_t condition = PTHREAD_COND_INITIALIZER;
        struct timespec at = in_ms(CLOCK_REALTIME, WAIT_MS);
        pthread_mutex_lock(&mutex);
        int error = pthread_cond_timedwait(&condition, &mutex, &at);
        pthread_mutex_unlock(&mutex);
        errno = error;
        return error == 0 ? 0 : -1;
    }
    errno = ENOSYS;
    return -1;
}

static void *run_call(void *value) {
    call *c = value;
    atomic_store(&c->started, now_ms());
    errno = 0;
    c->result = run(c);
    c->error = c->result < 0 ? errno : 0;
    atomic_store(&c->ended, now_ms());
    return NULL;
}

static call calls[] = {
    {.name = "sleep"},
    {.name = "usleep"},
    {.name = "nanosleep"},
    {.name = "clock_nanosleep-absolute"},
    {.name = "poll-timeout"},
    {.name = "poll-woken", .woken = 1, .expected_result = 1},
    {.name = "ppoll-timeout"},
    {.name = "select-timeout"},
    {.name = "epoll-woken", .woken = 1, .expected_result = 1},
    {.name = "epoll-timeout"},
    {.name = "read-pipe", .woken = 1, .expected_result = 1},
    {.name = "sem_timedwait", .expected_result = -1, .expected_error = ETIMEDOUT},
    {.name = "pthread_cond_timedwait", .expected_result = -1, .expected_error = ETIMEDOUT},
    {.name = "nanosleep-app-signal", .app_signal = 1, .expected_result = -1, .expected_error = EINTR},
};
#define CALL_COUNT (sizeof(calls) / sizeof(calls[0]))

int bbx_test_blocking_calls(int disturb, bbx_test_call_result *results, int capacity) {
    struct sigaction action;
    memset(&action, 0, sizeof(action));
    action.sa_handler = app_handler;  // no SA_RESTART: the app wants its EINTR
    sigaction(SIGUSR1, &action, NULL);
    int devnull = open("/dev/null", O_WRONLY | O_CLOEXEC);
    long begin = now_ms();
    for (size_t i = 0; i < CALL_COUNT; i++) {
        if (pipe2(calls[i].pipe, O_CLOEXEC) != 0) return -1;
        pthread_create(&calls[i].thread, NULL, run_call, &calls[i]);
    }
    // Until WAIT_MS: thread captures every 100 ms (a hang report's), and a sweep between them (it
    // signals the threads that have no alternate stack yet).
    int poked[CALL_COUNT] = {0};
    while (now_ms() - begin < WAIT_MS + 700) {
        if (disturb) {
            bbx_capture_other_threads(devnull);
            bbx_altstacks_sweep();
        }
        for (size_t i = 0; i < CALL_COUNT; i++) {
            long started = atomic_load(&calls[i].started);
            if (poked[i] || started == 0 || now_ms() - started < WAIT_MS) continue;
            if (calls[i].woken) (void)!write(calls[i].pipe[1], "x", 1);
            if (calls[i].app_signal) pthread_kill(calls[i].thread, SIGUSR1);
            poked[i] = 1;
        }
        usleep(100 * 1000);
    }
    int count = 0;
    for (size_t i = 0; i < CALL_COUNT; i++) {
        pthread_join(calls[i].thread, NULL);
        close(calls[i].pipe[0]);
        close(calls[i].pipe[1]);
        if (count == capacity) continue;
        bbx_test_call_result *r = &results[count++];
        r->name = calls[i].name;
        r->started_ms = atomic_load(&calls[i].started) - begin;
        r->elapsed_ms = atomic_load(&calls[i].ended) - atomic_load(&calls[i].started);
        r->result = calls[i].result;
        r->error = calls[i].error;
        r->expected_result = calls[i].expected_result;
        r->expected_error = calls[i].expected_error;
        r->expected_ms = calls[i].app_signal ? WAIT_MS : (!strcmp(calls[i].name, "sleep") ? 2000 : WAIT_MS);
    }
    close(devnull);
    return count;
}

// Short calls made again and again on threads of their own while thread captures follow each other
// with no pause: a thread is often between two calls when a sender reads what it is blocked in, and
// in its next call when the signal arrives (the sender's note is stale). Each result is how many of the
// thread's calls returned EINTR (`expected_result` 0) out of `expected_ms`'s place: the calls made.
typedef struct repeated_call {
    const char *name;
    atomic_int stop;
    atomic_long made, interrupted;
    pthread_t thread;
} repeated_call;

static long one_short_call(const char *name) {
    if (!strcmp(name, "ppoll-repeated")) {
        struct timespec timeout = {0, 1000000L};
        return ppoll(NULL, 0, &timeout, NULL);
    }
    if (!strcmp(name, "select-repeated")) {
        struct timeval timeout = {0, 1000};
        return select(0, NULL, NULL, NULL, &timeout);
    }
    struct timespec wait = {0, 1000000L};
    return nanosleep(&wait, NULL);
}

static void *repeat_call(void *value) {
    repeated_call *c = value;
    while (!atomic_load(&c->stop)) {
        errno = 0;
        if (one_short_call(c->name) < 0 && errno == EINTR) atomic_fetch_add(&c->interrupted, 1);
        atomic_fetch_add(&c->made, 1);
    }
    return NULL;
}

int bbx_test_blocking_call_races(long duration_ms, bbx_test_call_result *results, int capacity) {
    static repeated_call calls[] = {{.name = "ppoll-repeated"}, {.name = "select-repeated"}, {.name = "nanosleep-repeated"}};
    enum { COUNT = sizeof(calls) / sizeof(calls[0]) };
    int devnull = open("/dev/null", O_WRONLY | O_CLOEXEC);
    for (int i = 0; i < COUNT; i++) pthread_create(&calls[i].thread, NULL, repeat_call, &calls[i]);
    long begin = now_ms();
    while (now_ms() - begin < duration_ms) bbx_capture_other_threads(devnull);
    int count = 0;
    for (int i = 0; i < COUNT; i++) {
        atomic_store(&calls[i].stop, 1);
        pthread_join(calls[i].thread, NULL);
        if (count == capacity) continue;
        bbx_test_call_result *r = &results[count++];
        memset(r, 0, sizeof(*r));
        r->name = calls[i].name;
        r->elapsed_ms = now_ms() - begin;
        r->result = atomic_load(&calls[i].interrupted);
        r->expected_ms = atomic_load(&calls[i].made);
        r->error = r->result > 0 ? EINTR : 0;
    }
    close(devnull);
    return count;
}
