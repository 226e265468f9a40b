// Capturing the other threads' stacks from the fatal-signal handler.
//
// Linux has no call that reads another thread's registers from inside the process, so each thread is
// asked, by a signal sent with tgkill, to walk its own frame pointers into a slot prepared at install
// time (the way the Swift runtime's backtracer pauses threads before it runs). The signal is a free
// real-time one with a handler installed at install time; a thread that blocks it (libdispatch's
// workers block every asynchronous signal but SIGPROF) is sent SIGPROF, SIGUSR2 or SIGUSR1 instead,
// whichever its mask in /proc/self/task/<tid>/status lets through, with the sampler installed on
// those only for the dying process. Async-signal-safe calls only: open, read, close, getdents64,
// tgkill, futex, clock_gettime, sigaction; slots and buffers are static or mapped in advance.
#define _GNU_SOURCE
#include "threads.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/futex.h>
#include <setjmp.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <ucontext.h>
#include <unistd.h>

#include "altstacks.h"
#include "blocking_calls.h"
#include "proc_files.h"
#include "scopes.h"
#include "unwinder.h"
#include "syscalls.h"

// A slot's life: REQUESTED by the capturing thread; WALKING (frame pointers, lock-free), UNWINDING
// (libunwind, which may block on the loader lock), SCOPING (the thread's task's scope, copied) and
// DONE on the sampled thread, or FAULTED when the frame-pointer walk faulted; NO_ANSWER,
// BLOCKS_SIGNALS or EXITED when the capturing thread gives up.
enum slot_state {
    SLOT_REQUESTED = 1,
    SLOT_WALKING,
    SLOT_UNWINDING,
    SLOT_SCOPING,
    SLOT_DONE,
    SLOT_FAULTED,
    SLOT_NO_ANSWER,
    SLOT_BLOCKS_SIGNALS,
    SLOT_EXITED,
};

typedef struct thread_slot {
    atomic_int tid;
    atomic_int state;
    volatile int frame_count;
    volatile int unwound_count;
    sigjmp_buf recovery;
    uint64_t frames[BBX_THREAD_FRAMES];
    uint64_t unwound[BBX_THREAD_FRAMES];
    // The scope (request) the thread's current task was in: a hang report names each blocked
    // thread's request, a crash report the other threads' requests.
    volatile uint32_t scope_length;
    char scope[BBX_SCOPE_FIELD_BYTES];
    // In a living process, the call the thread was blocked in when asked: resumed after the answer.
    bbx_blocking_call call;
} thread_slot;

static thread_slot *slots;
static int sampling_signal;
static atomic_int capturing;
static atomic_uint answers;
static const int fallback_signals[] = {SIGPROF, SIGUSR2, SIGUSR1};
#define FALLBACK_COUNT (sizeof(fallback_signals) / sizeof(fallback_signals[0]))

static pid_t current_thread_id(void) { return (pid_t)bbx_syscall0(SYS_gettid); }

static thread_slot *slot_of(pid_t tid) {
    for (int i = 0; i < BBX_THREAD_LIMIT; i++) {
        int slot_tid = atomic_load(&slots[i].tid);
        if (slot_tid == tid) return &slots[i];
        if (slot_tid == 0) break;
    }
    return NULL;
}

// The task-local lookup reads the task's item list, which the interrupted code may have been
// changing: a fault here is recovered from like a bad frame pointer (the thread keeps its frames).
static void copy_scope(thread_slot *slot) {
    slot->scope_length = 0;
    const bbx_scope_view *view = bbx_scope_current();
    if (view == NULL) return;
    uint32_t length = view->length;
    memcpy(slot->scope, view->fields, length);
    slot->scope_length = length;
}

// The handler of the sampling signal, on the thread asked to answer.
static void sample_own_stack(int sig, siginfo_t *info, void *context) {
    (void)sig;
    int saved_errno = errno;
    // The blocking call this signal cut short, if the sender noted one: resumed before returning, so
    // that the app never sees an EINTR of ours (blocking_calls.h).
    bbx_blocking_call interrupted = {.number = -1};
    // Only this process's own requests are answered: a stray signal from elsewhere changes nothing.
    // Outside a capture, the request is the alternate-stack sweep's (altstacks.c).
    if (info->si_code == SI_TKILL && info->si_pid == getpid() && !atomic_load(&capturing)) {
        bbx_altstacks_answer(current_thread_id(), context, &interrupted);
    } else if (info->si_code == SI_TKILL && info->si_pid == getpid()) {
        thread_slot *slot = slot_of(current_thread_id());
        int expected = SLOT_REQUESTED;
        if (slot != NULL && atomic_compare_exchange_strong(&slot->state, &expected, SLOT_WALKING)) {
            // Copied now: once answered, the slot may serve the next capture.
            interrupted = slot->call;
            // Frame pointers first: lock-free, so the capture has something even if libunwind blocks.
            // libunwind then (DWARF CFI) finds what the chain skips: the caller of a libc function
            // that keeps no frame record, which is where a blocked thread usually is.
            if (sigsetjmp(slot->recovery, 1) == 0) {
                bbx_collect_frame_pointers(context, slot->frames, NULL, BBX_THREAD_FRAMES, &slot->frame_count);
                atomic_store(&slot->state, SLOT_UNWINDING);
                bbx_collect_libunwind(context, slot->unwound, BBX_THREAD_FRAMES, &slot->unwound_count);
                atomic_store(&slot->state, SLOT_SCOPING);
                copy_scope(slot);
                atomic_store(&slot->state, SLOT_DONE);
            } else if (atomic_load(&slot->state) == SLOT_UNWINDING) {
                slot->unwound_count = 0;
                atomic_store(&slot->state, SLOT_DONE);
            } else if (atomic_load(&slot->state) == SLOT_SCOPING) {
                slot->scope_length = 0;
                atomic_store(&slot->state, SLOT_DONE);
            } else {
                atomic_store(&slot->state, SLOT_FAULTED);
            }
            atomic_fetch_add(&answers, 1);
            bbx_syscall6(SYS_futex, (long)&answers, FUTEX_WAKE_PRIVATE, 1, 0, 0, 0);
        }
    }
    // While a resumed sleep goes on, the living captures' signals wait (blocking_calls.c).
    sigset_t capture_signals;
    sigemptyset(&capture_signals);
    sigaddset(&capture_signals, SIGPROF);
    if (sampling_signal != 0) sigaddset(&capture_signals, sampling_signal);
    bbx_blocking_call_resume(&interrupted, context, &capture_signals);
    errno = saved_errno;
}

void bbx_threads_recover_from_fault(void) {
    if (slots == NULL || !atomic_load(&capturing)) return;
    thread_slot *slot = slot_of(current_thread_id());
    if (slot == NULL) return;
    int state = atomic_load(&slot->state);
    if (state == SLOT_WALKING || state == SLOT_UNWINDING || state == SLOT_SCOPING) siglongjmp(slot->recovery, 1);
}

static void sampler_action(struct sigaction *action) {
    memset(action, 0, sizeof(*action));
    action->sa_sigaction = sample_own_stack;
    action->sa_flags = SA_SIGINFO | SA_RESTART | SA_ONSTACK;
    // Everything waits while a thread walks, except the faults a bad frame pointer could raise: those
    // must reach the fatal-signal handler, which hands them back (bbx_threads_recover_from_fault).
    sigfillset(&action->sa_mask);
    static const int faults[] = {SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGTRAP, SIGABRT, SIGSYS};
    for (size_t i = 0; i < sizeof(faults) / sizeof(faults[0]); i++) sigdelset(&action->sa_mask, faults[i]);
}

int bbx_threads_prepare(void) {
    if (slots != NULL) return 0;
    size_t size = sizeof(thread_slot) * BBX_THREAD_LIMIT;
    // Mapped, not touched: the pages cost nothing until a crash writes them.
    void *mapping = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (mapping == MAP_FAILED) return errno;
    // The highest real-time signal nobody handles: libraries that take one usually count up from
    // SIGRTMIN.
    struct sigaction action;
    sampler_action(&action);
    for (int candidate = SIGRTMAX - 2; candidate >= SIGRTMIN + 2 && sampling_signal == 0; candidate--) {
        struct sigaction current;
        if (sigaction(candidate, NULL, &current) != 0) continue;
        if (!(current.sa_flags & SA_SIGINFO) && current.sa_handler == SIG_DFL &&
            sigaction(candidate, &action, NULL) == 0)
            sampling_signal = candidate;
    }
    slots = mapping;
    return sampling_signal != 0 ? 0 : EBUSY;
}

// MARK: Reading /proc

// The thread's blocked-signal mask (the `SigBlk:` line of its status); 0 when unreadable.
static uint64_t blocked_signals(pid_t tid) {
    static char status[4096];
    char path[64];
    bbx_task_path(path, sizeof(path), tid, "status");
    if (bbx_read_small_file(path, status, sizeof(status)) <= 0) return 0;
    const char *line = strstr(status, "\nSigBlk:");
    if (line == NULL) return 0;
    uint64_t mask = 0;
    for (const char *c = line + 8; *c != '\n' && *c != 0; c++) {
        if (*c >= '0' && *c <= '9') mask = mask << 4 | (uint64_t)(*c - '0');
        else if (*c >= 'a' && *c <= 'f') mask = mask << 4 | (uint64_t)(*c - 'a' + 10);
    }
    return mask;
}

static int blocks(uint64_t mask, int sig) { return (mask >> (sig - 1)) & 1; }

static uint64_t monotonic_ns(void) {
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (uint64_t)now.tv_sec * 1000000000u + (uint64_t)now.tv_nsec;
}

// MARK: Capture

// Fills slots with the process's threads but `self`, `helper` and the alternate-stack sweeper; the
// number found beyond the slots in `omitted`.
static int list_threads(pid_t self, pid_t helper, int *omitted) {
    static pid_t tids[BBX_THREAD_LIMIT + 3];
    int found = bbx_threads_list_ids(tids, BBX_THREAD_LIMIT + 3);
    if (found < 0) return -1;
    int count = 0;
    // Threads past the list's room are counted, never listed.
    *omitted = found > BBX_THREAD_LIMIT + 3 ? found - (BBX_THREAD_LIMIT + 3) : 0;
    for (int i = 0; i < found && i < BBX_THREAD_LIMIT + 3; i++) {
        pid_t tid = tids[i];
        if (tid == self || tid == helper || tid == bbx_altstacks_sweeper_tid()) continue;
        if (count == BBX_THREAD_LIMIT) {
            (*omitted)++;
            continue;
        }
        slots[count].frame_count = 0;
        slots[count].unwound_count = 0;
        slots[count].scope_length = 0;
        slots[count].call.number = -1;
        atomic_store(&slots[count].state, SLOT_REQUESTED);
        atomic_store(&slots[count].tid, tid);
        count++;
    }
    if (count < BBX_THREAD_LIMIT) atomic_store(&slots[count].tid, 0);
    return count;
}

// The fallback `sig` with the sampler on it, or 0. A dying process takes any of them (a handler
// chained after ours that pauses threads the same way installs its own for as long as it needs it).
// A living one (a hang report) takes SIGPROF only, and only when nobody else handles it; the sampler
// then stays on it, ignoring what it did not ask for, as SIG_IGN would.
static int fallback_signal(int sig, int dying) {
    struct sigaction current;
    if (sigaction(sig, NULL, &current) != 0) return 0;
    if ((current.sa_flags & SA_SIGINFO) && current.sa_sigaction == sample_own_stack) return sig;
    if (!dying && (sig != SIGPROF || (current.sa_flags & SA_SIGINFO) ||
                   (current.sa_handler != SIG_DFL && current.sa_handler != SIG_IGN)))
        return 0;
    struct sigaction action;
    sampler_action(&action);
    return sigaction(sig, &action, NULL) == 0 ? sig : 0;
}

int bbx_threads_living_signal_for(pid_t tid) {
    if (slots == NULL) return 0;
    uint64_t mask = blocked_signals(tid);
    if (sampling_signal != 0 && !blocks(mask, sampling_signal)) return sampling_signal;
    return blocks(mask, SIGPROF) ? 0 : fallback_signal(SIGPROF, 0);
}

int bbx_threads_capture_running(void) { return atomic_load(&capturing); }

int bbx_threads_list_ids(pid_t *tids, int capacity) {
    // On the stack, not static: the sweeper and a crash's capture may list at the same time.
    char entries[4096];
    int count = 0;
    int fd = open("/proc/self/task", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) return -1;
    for (;;) {
        long bytes = bbx_syscall3(SYS_getdents64, fd, (long)entries, sizeof(entries));
        if (bytes <= 0) break;
        for (long offset = 0; offset < bytes;) {
            // struct linux_dirent64: d_ino (8), d_off (8), d_reclen (2), d_type (1), d_name.
            unsigned short length;
            memcpy(&length, entries + offset + 16, sizeof(length));
            const char *name = entries + offset + 19;
            offset += length;
            if (name[0] < '0' || name[0] > '9') continue;
            pid_t tid = 0;
            for (const char *c = name; *c >= '0' && *c <= '9'; c++) tid = tid * 10 + (*c - '0');
            if (count < capacity) tids[count] = tid;
            count++;
        }
    }
    close(fd);
    return count;
}

// Sends each listed thread a signal it lets through; the number sent.
static unsigned request_stacks(int count, int dying) {
    pid_t pid = getpid();
    unsigned sent = 0;
    for (int i = 0; i < count; i++) {
        pid_t tid = atomic_load(&slots[i].tid);
        uint64_t mask = blocked_signals(tid);
        int sig = sampling_signal != 0 && !blocks(mask, sampling_signal) ? sampling_signal : 0;
        for (size_t f = 0; f < FALLBACK_COUNT && sig == 0; f++) {
            if (!blocks(mask, fallback_signals[f])) sig = fallback_signal(fallback_signals[f], dying);
        }
        // A dying process resumes nothing; a living one must not cut the thread's call short.
        if (!dying) bbx_blocking_call_read(tid, &slots[i].call);
        if (sig == 0) {
            atomic_store(&slots[i].state, SLOT_BLOCKS_SIGNALS);
        } else if (bbx_syscall3(SYS_tgkill, pid, tid, sig) != 0) {
            atomic_store(&slots[i].state, SLOT_EXITED);
        } else {
            sent++;
        }
    }
    return sent;
}

static void wait_for_answers(unsigned expected, uint64_t deadline) {
    for (;;) {
        unsigned current = atomic_load(&answers);
        uint64_t now = monotonic_ns();
        if (current >= expected || now >= deadline) return;
        uint64_t remaining = deadline - now;
        struct timespec timeout = {(time_t)(remaining / 1000000000u), (long)(remaining % 1000000000u)};
        bbx_syscall6(SYS_futex, (long)&answers, FUTEX_WAIT_PRIVATE, current, (long)&timeout, 0, 0);
    }
}

static const char *status_name(int state) {
    switch (state) {
    case SLOT_UNWINDING:
    case SLOT_SCOPING:
    case SLOT_DONE: return "ok";
    case SLOT_FAULTED: return "faulted";
    case SLOT_BLOCKS_SIGNALS: return "blocks-signals";
    case SLOT_EXITED: return "exited";
    default: return "no-answer";
    }
}

// thread-begin <tid> <status> <walk>, thread-name <comm>, thread-scope <name> <value>…, thread-frame <pc>…,
// thread-end <count> <complete|truncated>.
static void write_thread(bbx_writer *w, thread_slot *slot) {
    int state = atomic_load(&slot->state);
    pid_t tid = atomic_load(&slot->tid);
    // The libunwind walk when it finished with more than the pc; else the frame pointers (a faulted
    // walk keeps the frames it stored before the fault; a thread still in libunwind has its frame
    // pointers final).
    const uint64_t *frames = NULL;
    int count = 0;
    const char *walk = "none";
    if (state == SLOT_DONE && slot->unwound_count > 1) {
        frames = slot->unwound;
        count = slot->unwound_count;
        walk = "libunwind";
    } else if (state == SLOT_DONE || state == SLOT_UNWINDING || state == SLOT_SCOPING || state == SLOT_FAULTED) {
        frames = slot->frames;
        count = slot->frame_count;
        walk = "frame-pointers";
    }
    bbx_write_str(w, "thread-begin ");
    bbx_write_dec(w, tid);
    bbx_write_str(w, " ");
    bbx_write_str(w, status_name(state));
    bbx_write_str(w, " ");
    bbx_write_str(w, walk);
    char path[64], name[32];
    bbx_task_path(path, sizeof(path), tid, "comm");
    ssize_t length = bbx_read_small_file(path, name, sizeof(name));
    if (length > 0 && name[length - 1] == '\n') name[--length] = 0;
    if (length > 0) {
        bbx_write_str(w, "\nthread-name ");
        bbx_write_bytes(w, name, (size_t)length);
    }
    bbx_write_str(w, "\n");
    if (state == SLOT_DONE && slot->scope_length > 0) {
        bbx_scope_write_fields(w, "thread-scope", slot->scope, slot->scope_length);
    }
    for (int i = 0; i < count; i++) {
        bbx_write_str(w, "thread-frame ");
        bbx_write_hex(w, frames[i]);
        bbx_write_str(w, "\n");
    }
    bbx_write_str(w, "thread-end ");
    bbx_write_dec(w, count);
    bbx_write_str(w, count == BBX_THREAD_FRAMES ? " truncated\n" : " complete\n");
    bbx_write_flush(w);
}

int bbx_threads_write(bbx_writer *w, pid_t self, pid_t helper, int dying) {
    uint64_t started = monotonic_ns();
    int expected = 0;
    if (slots == NULL) {
        bbx_write_str(w, "threads-unavailable not-prepared\n");
        bbx_write_flush(w);
        return ENOSYS;
    }
    // A hang report's capture may be running: a crash waits for it (it ends within its deadline),
    // a second hang capture does not.
    uint64_t give_up = started + (dying ? (uint64_t)(BBX_THREAD_DEADLINE_MS + 500) * 1000000u : 0);
    while (!atomic_compare_exchange_strong(&capturing, &expected, 1)) {
        if (monotonic_ns() >= give_up) {
            bbx_write_str(w, "threads-unavailable busy\n");
            bbx_write_flush(w);
            return EBUSY;
        }
        expected = 0;
        struct timespec tick = {0, 1000000};
        nanosleep(&tick, NULL);
    }
    // A thread still walking for an earlier capture (stuck in libunwind on the loader lock) would
    // write into a slot this capture reuses: a living process waits for a later episode instead.
    for (int i = 0; !dying && i < BBX_THREAD_LIMIT && atomic_load(&slots[i].tid) != 0; i++) {
        int state = atomic_load(&slots[i].state);
        if (state == SLOT_WALKING || state == SLOT_UNWINDING) {
            atomic_store(&capturing, 0);
            bbx_write_str(w, "threads-unavailable busy\n");
            bbx_write_flush(w);
            return EBUSY;
        }
    }
    atomic_store(&answers, 0);
    int omitted = 0;
    int count = list_threads(self, helper, &omitted);
    if (count < 0) {
        bbx_write_str(w, "threads-unavailable no-proc\n");
    } else {
        unsigned sent = request_stacks(count, dying);
        wait_for_answers(sent, started + (uint64_t)BBX_THREAD_DEADLINE_MS * 1000000u);
        // A thread answering after this finds its slot taken and leaves it alone.
        for (int i = 0; i < count; i++) {
            int requested = SLOT_REQUESTED;
            atomic_compare_exchange_strong(&slots[i].state, &requested, SLOT_NO_ANSWER);
        }
        for (int i = 0; i < count; i++) write_thread(w, &slots[i]);
        if (omitted > 0) {
            bbx_write_str(w, "threads-omitted ");
            bbx_write_dec(w, omitted);
            bbx_write_str(w, "\n");
        }
    }
    bbx_write_str(w, "threads-end ");
    bbx_write_dec(w, (int64_t)(monotonic_ns() - started));
    bbx_write_str(w, "\n");
    bbx_write_flush(w);
    atomic_store(&capturing, 0);
    return 0;
}
