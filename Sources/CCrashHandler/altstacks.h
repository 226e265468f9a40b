// Alternate signal stacks for threads Blackbox did not create (Dispatch and Swift-concurrency workers,
// an app's own threads): without one, a stack overflow on the thread kills the process before any
// handler can run. A sweeper thread lists the process's threads now and then and offers each new
// one a stack mapped in advance, through the thread-capture signal; the thread's handler installs it
// with sigaltstack (see docs/crash-capture.md).
#ifndef BLACKBOX_ALTSTACKS_H
#define BLACKBOX_ALTSTACKS_H

#include <sys/types.h>

#include "blocking_calls.h"

/// Threads whose stacks the sweep keeps track of; more are left unprepared (and counted).
#define BBX_ALTSTACK_LIMIT 4096
/// Bytes of each offered stack (a guard page below it is extra).
#define BBX_ALTSTACK_SIZE (64 * 1024)

/// From the sampler's signal handler, on the thread itself (`context`: the handler's ucontext):
/// installs the stack offered to `tid`, unless the thread has one already, and copies the call the
/// thread was blocked in when offered into `interrupted` (left alone when there was no offer).
/// Async-signal-safe.
void bbx_altstacks_answer(pid_t tid, void *context, bbx_blocking_call *interrupted);

/// From a thread that installed its own alternate stack as it started (new_threads.c): the sweep
/// leaves it alone (no signal is sent to it). Not async-signal-safe.
void bbx_altstacks_note_prepared(pid_t tid);

/// From a thread that is exiting: its registration (above) is dropped at once, not at the next sweep.
void bbx_altstacks_forget(pid_t tid);

/// The sweeper thread's id (0 before it runs): left out of thread captures, like the watchdog.
pid_t bbx_altstacks_sweeper_tid(void);

#endif
