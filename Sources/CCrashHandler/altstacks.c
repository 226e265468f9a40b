// Alternate signal stacks for every thread (see altstacks.h). The sweep is ordinary code on its own
// thread (every signal blocked, so it is never asked anything itself); only `bbx_altstacks_answer`
// runs in a signal handler, and it only reads the table and calls sigaltstack.
#define _GNU_SOURCE
#include "altstacks.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <ucontext.h>
#include <unistd.h>

#include "CCrashHandler.h"
#include "threads.h"
#include "syscalls.h"

// An entry's life: OFFERED (stack mapped, signal sent) → INSTALLED by the thread, or DECLINED (it
// had a stack: Blackbox's own threads, prepared app threads; the sweep unmaps the offer) → FREE when
// the thread is gone (the sweep unmaps an installed stack then). UNREACHABLE: the thread blocks every
// signal the sweep may send; it is not asked again.
enum altstack_state { ALT_FREE = 0, ALT_OFFERED, ALT_INSTALLED, ALT_DECLINED, ALT_UNREACHABLE };

typedef struct altstack_entry {
    atomic_int tid;
    atomic_int state;
    // The call the thread was blocked in when offered a stack: resumed by its handler.
    bbx_blocking_call call;
    // Sweeps an offer went unanswered (the signal may have met a capture that took it as a request).
    int unanswered;
    void *mapping;
    size_t mapping_size;
    // The usable stack above the guard page, for the handler (which must not call sysconf).
    void *stack;
    size_t stack_size;
} altstack_entry;

static altstack_entry table[BBX_ALTSTACK_LIMIT];
static atomic_int sweeper_started;
static atomic_uint sweep_interval_ms;
static atomic_int sweeper_tid;
static atomic_uint_fast64_t sweeps, untracked;

void bbx_altstacks_answer(pid_t tid, void *context, bbx_blocking_call *interrupted) {
    for (int i = 0; i < BBX_ALTSTACK_LIMIT; i++) {
        if (atomic_load(&table[i].tid) != tid) continue;
        if (atomic_load(&table[i].state) != ALT_OFFERED) return;
        *interrupted = table[i].call;
        stack_t current;
        if (sigaltstack(NULL, &current) == 0 && !(current.ss_flags & SS_DISABLE) &&
            current.ss_size >= BBX_ALTSTACK_SIZE) {
            atomic_store(&table[i].state, ALT_DECLINED);
            return;
        }
        stack_t stack = {.ss_sp = table[i].stack, .ss_size = table[i].stack_size, .ss_flags = 0};
        if (sigaltstack(&stack, NULL) != 0) {
            atomic_store(&table[i].state, ALT_DECLINED);
            return;
        }
        // Returning from a handler restores the alternate stack saved at its entry (rt_sigreturn's
        // restore_altstack): the saved one must be the new one, or the thread is left with none.
        ((ucontext_t *)context)->uc_stack = stack;
        atomic_store(&table[i].state, ALT_INSTALLED);
        return;
    }
}

// In the sweep's list, or started since it was made (a thread that registered itself meanwhile).
static int present(pid_t tid, const pid_t *tids, int count) {
    for (int i = 0; i < count; i++)
        if (tids[i] == tid) return 1;
    return bbx_syscall3(SYS_tgkill, getpid(), tid, 0) == 0;
}

// A free entry for `tid` (claimed atomically: new threads register themselves beside the sweep), or NULL.
static altstack_entry *claim(pid_t tid) {
    for (int i = 0; i < BBX_ALTSTACK_LIMIT; i++) {
        int expected = 0;
        if (atomic_load(&table[i].tid) == 0 && atomic_compare_exchange_strong(&table[i].tid, &expected, tid))
            return &table[i];
    }
    return NULL;
}

void bbx_altstacks_note_prepared(pid_t tid) {
    altstack_entry *entry = claim(tid);
    if (entry != NULL) atomic_store(&entry->state, ALT_DECLINED);
}

void bbx_altstacks_forget(pid_t tid) {
    for (int i = 0; i < BBX_ALTSTACK_LIMIT; i++) {
        altstack_entry *entry = &table[i];
        // Only an entry with nothing mapped: the sweep unmaps the others itself.
        if (atomic_load(&entry->tid) == tid && atomic_load(&entry->state) == ALT_DECLINED && entry->mapping == NULL) {
            entry->unanswered = 0;
            atomic_store(&entry->state, ALT_FREE);
            atomic_store(&entry->tid, 0);
            return;
        }
    }
}

static void release(altstack_entry *entry) {
    if (entry->mapping != NULL) munmap(entry->mapping, entry->mapping_size);
    entry->mapping = NULL;
    entry->unanswered = 0;
    atomic_store(&entry->state, ALT_FREE);
    atomic_store(&entry->tid, 0);
}

static int tracked(pid_t tid) {
    for (int i = 0; i < BBX_ALTSTACK_LIMIT; i++)
        if (atomic_load(&table[i].tid) == tid) return 1;
    return 0;
}

// `entry` is claimed for `tid`.
static void offer(altstack_entry *entry, pid_t tid) {
    int sig = bbx_threads_living_signal_for(tid);
    if (sig == 0) {
        atomic_store(&entry->state, ALT_UNREACHABLE);
        return;
    }
    if (entry->mapping == NULL) {
        size_t page = (size_t)sysconf(_SC_PAGESIZE);
        size_t size = BBX_ALTSTACK_SIZE + page;
        void *mapping = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
        if (mapping == MAP_FAILED) {
            atomic_store(&entry->tid, 0);
            return;
        }
        // A guard page below: an overflow of the handler itself faults instead of scribbling.
        mprotect(mapping, page, PROT_NONE);
        entry->mapping = mapping;
        entry->mapping_size = size;
        entry->stack = (char *)mapping + page;
        entry->stack_size = BBX_ALTSTACK_SIZE;
    }
    bbx_blocking_call_read(tid, &entry->call);
    atomic_store(&entry->state, ALT_OFFERED);
    if (bbx_syscall3(SYS_tgkill, getpid(), tid, sig) != 0) release(entry);
}

int bbx_altstacks_sweep(void) {
    static pid_t tids[BBX_ALTSTACK_LIMIT];
    // The sweep's requests share the capture's signal: never both at once.
    if (bbx_threads_capture_running()) return 0;
    int found = bbx_threads_list_ids(tids, BBX_ALTSTACK_LIMIT);
    if (found < 0) return 0;
    int count = found < BBX_ALTSTACK_LIMIT ? found : BBX_ALTSTACK_LIMIT;
    atomic_fetch_add(&sweeps, 1);
    int offered = 0;
    for (int i = 0; i < BBX_ALTSTACK_LIMIT; i++) {
        altstack_entry *entry = &table[i];
        pid_t tid = atomic_load(&entry->tid);
        if (tid == 0) continue;
        int state = atomic_load(&entry->state);
        if (!present(tid, tids, count)) {
            release(entry);
        } else if (state == ALT_DECLINED && entry->mapping != NULL) {
            munmap(entry->mapping, entry->mapping_size);
            entry->mapping = NULL;
        } else if (state == ALT_OFFERED && ++entry->unanswered <= 3) {
            offer(entry, tid);
        }
    }
    uint64_t left_out = 0;
    for (int i = 0; i < count; i++) {
        pid_t tid = tids[i];
        if (tid == atomic_load(&sweeper_tid) || tracked(tid)) continue;
        altstack_entry *free_entry = claim(tid);
        if (free_entry == NULL) {
            left_out++;
            continue;
        }
        offer(free_entry, tid);
        offered++;
    }
    atomic_store(&untracked, left_out + (uint64_t)(found - count));
    return offered;
}

static void *sweep_forever(void *unused) {
    (void)unused;
    atomic_store(&sweeper_tid, (int)bbx_syscall0(SYS_gettid));
    for (;;) {
        bbx_altstacks_sweep();
        unsigned interval = atomic_load(&sweep_interval_ms);
        struct timespec wait = {(time_t)(interval / 1000), (long)(interval % 1000) * 1000000L};
        while (nanosleep(&wait, &wait) != 0 && errno == EINTR) {}
    }
    return NULL;
}

pid_t bbx_altstacks_sweeper_tid(void) { return (pid_t)atomic_load(&sweeper_tid); }

int bbx_altstacks_start(unsigned interval_ms) {
    atomic_store(&sweep_interval_ms, interval_ms < 10 ? 10 : interval_ms);
    int expected = 0;
    if (!atomic_compare_exchange_strong(&sweeper_started, &expected, 1)) return 0;
    sigset_t all, previous;
    sigfillset(&all);
    // Inherited by the new thread: nothing is ever delivered to it.
    pthread_sigmask(SIG_SETMASK, &all, &previous);
    pthread_t thread;
    int error = pthread_create(&thread, NULL, sweep_forever, NULL);
    if (error == 0) {
        pthread_setname_np(thread, "bbx-altstacks");
        pthread_detach(thread);
        // Until it has published its id, a crash's capture would list it (it blocks every signal,
        // so it would show as a thread that cannot be sampled): wait for that, 100 ms at most.
        for (int i = 0; i < 100 && atomic_load(&sweeper_tid) == 0; i++) {
            struct timespec tick = {0, 1000000};
            nanosleep(&tick, NULL);
        }
    } else {
        atomic_store(&sweeper_started, 0);
    }
    pthread_sigmask(SIG_SETMASK, &previous, NULL);
    return error;
}

void bbx_altstacks_statistics(bbx_altstack_statistics *statistics) {
    memset(statistics, 0, sizeof(*statistics));
    statistics->sweeps = atomic_load(&sweeps);
    statistics->untracked_threads = atomic_load(&untracked);
    for (int i = 0; i < BBX_ALTSTACK_LIMIT; i++) {
        if (atomic_load(&table[i].tid) == 0) continue;
        switch (atomic_load(&table[i].state)) {
        case ALT_INSTALLED: statistics->prepared_threads++; break;
        case ALT_DECLINED: statistics->threads_with_their_own++; break;
        case ALT_UNREACHABLE: statistics->unreachable_threads++; break;
        case ALT_OFFERED: statistics->pending_offers++; break;
        default: break;
        }
    }
}
