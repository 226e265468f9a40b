// Every other thread's stack at a crash, captured async-signal-safely: each thread is sent a signal
// whose handler walks its own frame pointers into a slot prepared at install time; the crashing
// thread waits for the answers with a deadline and writes them (see docs/crash-capture.md).
#ifndef BLACKBOX_THREADS_H
#define BLACKBOX_THREADS_H

#include <sys/types.h>

#include "raw_writer.h"

/// Threads captured besides the crashing one; more are counted in a `threads-omitted` line.
#define BBX_THREAD_LIMIT 512
/// Frames kept per thread (the frame-pointer walk stops there).
#define BBX_THREAD_FRAMES 128
/// How long the crashing thread waits, in all, for the other threads to answer.
#define BBX_THREAD_DEADLINE_MS 1000

/// Maps the slots and installs the sampling handler on a free real-time signal. Ordinary code only;
/// returns 0 or an errno value (the report then says the other threads were not captured).
int bbx_threads_prepare(void);

/// Writes `thread-begin` … `thread-end` for every thread of the process but `self` and `helper` (the
/// crash handler's own watchdog thread), then `threads-end`. `dying`: from the fatal-signal handler
/// (every fallback signal may be taken over), else from ordinary code in a living process. Only one
/// capture runs at a time: 0, or EBUSY while another runs, or ENOSYS before `bbx_threads_prepare`.
int bbx_threads_write(bbx_writer *w, pid_t self, pid_t helper, int dying);

/// Called first thing by the fatal-signal handler: when the faulting thread was walking its own
/// frames for a capture, abandons that walk (siglongjmp, does not return). Returns otherwise.
void bbx_threads_recover_from_fault(void);

/// For the alternate-stack sweep, in a living process: the signal that reaches `tid` and runs the
/// sampler (the real-time one, else SIGPROF when nobody else handles it), or 0.
int bbx_threads_living_signal_for(pid_t tid);

/// Whether a capture is running (its requests and the sweep's share the signal).
int bbx_threads_capture_running(void);

/// The ids of the process's threads (`/proc/self/task`) into `tids`, at most `capacity`; returns how
/// many there are (more than `capacity` when some did not fit), or -1 when unreadable.
/// Async-signal-safe; its buffer is on the caller's stack (4 KiB).
int bbx_threads_list_ids(pid_t *tids, int capacity);

#endif
