// Blackbox's own signals (a hang report's thread capture, the alternate-stack sweep) must not change
// what the app's blocking calls return. `SA_RESTART` restarts reads, writes, waits and futex waits
// without a timeout, but the kernel ends sleeps, polls, selects and epoll waits with EINTR once any
// handler has run: a handler's `sleep(6)` returned after 2.2 s. So the sender notes the call the
// thread is in before it sends (`/proc/self/task/<tid>/syscall`), and the handler resumes that very
// call before returning (see blocking_calls.c and docs/crash-capture.md).
#ifndef BLACKBOX_BLOCKING_CALLS_H
#define BLACKBOX_BLOCKING_CALLS_H

#include <signal.h>
#include <sys/types.h>

/// The system call a thread was blocked in when a signal was sent to it.
typedef struct bbx_blocking_call {
    /// The call's number, or -1: not in a call (running), or unreadable.
    long number;
    unsigned long arguments[6];
    unsigned long stack_pointer;
    /// Where the thread resumes: right after its system-call instruction.
    unsigned long resume_address;
} bbx_blocking_call;

/// Reads the call `tid` is blocked in (`number` -1 when none). open/read/close only.
void bbx_blocking_call_read(pid_t tid, bbx_blocking_call *call);

/// At the end of the sampler's handler, on the thread (`context`: its ucontext): when the interrupted
/// code is `call`, ended by this signal with EINTR, resumes it (returns once it completed, or when an
/// app signal interrupts it: then EINTR stays). `capture_signals` stay blocked meanwhile (see
/// blocking_calls.c). Async-signal-safe.
void bbx_blocking_call_resume(const bbx_blocking_call *call, void *context, const sigset_t *capture_signals);

#endif
