// Crashes only C can cause, for the crash-capture tests (never shipped).
#ifndef BLACKBOX_TEST_CRASHES_H
#define BLACKBOX_TEST_CRASHES_H

void bbx_test_null_write(void);
int bbx_test_divide(int numerator, int denominator);
/// A write to the binary's code, a call into the heap, a read of an unmapped page, a non-canonical write.
void bbx_test_read_only_write(void);
void bbx_test_execute_heap(void);
int bbx_test_read_unmapped(void);
void bbx_test_non_canonical_write(void);
int bbx_test_misaligned(void);
/// A trap instruction (SIGILL, no Swift text); a floating-point division by zero, unmasked (SIGFPE).
void bbx_test_trap(void);
double bbx_test_float_divide(double denominator);
/// A read of a file mapping past the file's end (SIGBUS, BUS_ADRERR).
int bbx_test_read_past_file_end(void);
/// Names the calling thread (pthread_setname_np, which Swift's Glibc module does not export).
void bbx_test_name_thread(const char *name);
/// Never returns: stops inside a dl_iterate_phdr callback, holding the loader lock.
void bbx_test_hold_loader_lock(void);
/// True once a thread is inside bbx_test_hold_loader_lock's callback.
int bbx_test_loader_lock_held(void);

/// Installs a seccomp filter that refuses process_vm_readv with EPERM (as Docker's default profile
/// does without CAP_SYS_PTRACE), for this thread and the threads it starts. 0 or an errno value.
int bbx_test_refuse_process_vm_readv(void);

/// What one blocking call returned, and when, in `bbx_test_blocking_calls`.
typedef struct bbx_test_call_result {
    const char *name;
    long started_ms, elapsed_ms, expected_ms;
    long result, expected_result;
    int error, expected_error;
} bbx_test_call_result;

/// Sleeps, polls, selects, epoll waits, a pipe read, a semaphore and a condition wait, each on a thread
/// of its own for 1.5 s (woken through a pipe, or by its timeout; one by the app's own SIGUSR1), while
/// (`disturb`) thread captures and sweeps run every 100 ms. The number of results written.
int bbx_test_blocking_calls(int disturb, bbx_test_call_result *results, int capacity);

/// 1 ms ppolls, selects and nanosleeps made again and again, each on a thread of its own, while thread
/// captures follow each other for `duration_ms`: each result's `result` is how many of its calls
/// returned EINTR, `expected_ms` how many it made. The number of results written.
int bbx_test_blocking_call_races(long duration_ms, bbx_test_call_result *results, int capacity);

#endif
