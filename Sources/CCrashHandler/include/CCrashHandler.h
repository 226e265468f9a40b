// Crash capture: the async-signal-safe half (see docs/crash-capture.md).
//
// Everything rich (symbolication, JSON, upload) happens in Swift on the next launch; this part only
// records what the dying process knows into a raw, line-oriented report. Swift calls these functions
// from ordinary code, never from a signal handler.
#ifndef BLACKBOX_CCRASHHANDLER_H
#define BLACKBOX_CCRASHHANDLER_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct bbx_crash_options {
    /// Directory for raw reports; must exist. Opened once at install time.
    const char *pending_directory;
    /// Preformatted `key value` lines written verbatim near the top of every report (app name,
    /// version, host, process start...). Copied.
    const char *header_lines;
    /// The journal ring's data area (mapped twice back to back) and its reservation counter, so the
    /// handler can copy the last records; NULL when there is no journal.
    const void *journal_data;
    uint64_t journal_capacity;
    const uint64_t *journal_write_position;
    /// How many bytes of the journal's tail to copy (0: none).
    uint32_t journal_tail_bytes;
    /// The writer's released position and the word where the writer thread keeps its id while it
    /// runs (0 otherwise): after the report, the handler waits a short while (`BBX_LOG_DRAIN_MS`)
    /// until the writer has written the lines logged before the crash to every output. NULL: no wait.
    const uint64_t *journal_read_position;
    const uint64_t *journal_writer_thread;
    /// Nonzero: after a report is written, hand the crash to the Swift runtime's backtracer as well
    /// (it symbolicates in process: seconds before the process exits). Zero: the Swift runtime's
    /// handler runs only when no report could be written. Handlers of anyone else always run.
    int chain_swift_backtracer;
} bbx_crash_options;

/// How long, at most, the handler waits after the report for the log writer to write the lines
/// logged before the crash (the console and journald get them only from the writer; the log file
/// would also get them at the next start, from the journal).
#define BBX_LOG_DRAIN_MS 250

/// Installs the handlers for SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT, SIGTRAP and SIGSYS, gives the
/// calling thread an alternate stack, and prepares everything the handler needs. Idempotent: later
/// calls replace the options. Returns 0 or an errno value.
int bbx_crash_install(const bbx_crash_options *options);

/// True once `bbx_crash_install` succeeded.
int bbx_crash_is_installed(void);

/// Gives the calling thread an alternate signal stack of `size` bytes (at least 64 KiB) unless it has
/// one that large already, so that a stack overflow on it can be reported. Returns 0 or an errno value.
int bbx_crash_ensure_alternate_stack(uint64_t size);

/// Nonzero: every thread started from now on (through pthread_create: Dispatch and Swift-concurrency
/// workers, Foundation threads, an app's own) installs an alternate signal stack before its start
/// routine runs, so that a stack overflow in its first instant is reported. Zero: only the sweep.
void bbx_crash_cover_new_threads(int on);

/// How many threads installed their alternate stack as they started (see above).
uint64_t bbx_crash_covered_thread_count(void);

/// Starts (once) a thread that, every `interval_ms`, offers an alternate signal stack to each thread
/// that has none (Dispatch and Swift-concurrency workers, an app's own threads), so that a stack
/// overflow on it is reported. Requires `bbx_crash_install`. Returns 0 or an errno value.
int bbx_altstacks_start(unsigned interval_ms);

/// One sweep now, from the calling thread (ordinary code): the number of threads offered a stack.
int bbx_altstacks_sweep(void);

typedef struct bbx_altstack_statistics {
    uint64_t sweeps;
    /// Threads the sweep gave a stack, and threads that had their own (Blackbox's, prepared ones).
    uint64_t prepared_threads;
    uint64_t threads_with_their_own;
    /// Threads that block every signal the sweep may send, and offers not answered yet.
    uint64_t unreachable_threads;
    uint64_t pending_offers;
    /// Threads beyond the table's limit at the last sweep.
    uint64_t untracked_threads;
} bbx_altstack_statistics;

void bbx_altstacks_statistics(bbx_altstack_statistics *statistics);

/// Re-reads the loaded images (call after dlopen'ing plugins).
void bbx_crash_refresh_images(void);

/// One object the dynamic loader has loaded, as `bbx_images_each` hands it over.
typedef struct bbx_loaded_image {
    /// Where its first loadable segment (holding its ELF header) is mapped, page aligned.
    uintptr_t base;
    /// The end of its last executable segment.
    uintptr_t end_of_text;
    const unsigned char *build_id;  // NULL when it has none
    size_t build_id_length;
    /// Its path; the main executable's as the kernel knows it. Valid during the call only.
    const char *path;
} bbx_loaded_image;

/// Calls `visit` for each loaded object with a path (not the vDSO), in the loader's order. Holds the
/// loader's lock meanwhile, so no object is unloaded while it is read: ordinary code only, never a
/// signal handler, and `visit` must not load or unload anything.
void bbx_images_each(void (*visit)(const bbx_loaded_image *image, void *context), void *context);

/// Whether libunwind was found (the report then carries a libunwind walk besides the frame-pointer walk).
int bbx_crash_has_libunwind(void);

/// Writes every other thread's stack as raw-report lines (`thread-begin` … `threads-end`) to `fd`,
/// from ordinary code in a living process (a hang report): the calling thread and the crash
/// handler's own are left out; threads that block the sampling signal are sent SIGPROF only when
/// nobody else handles it. Returns 0, EBUSY while another capture runs, or ENOSYS when crash capture
/// is not installed.
int bbx_capture_other_threads(int fd);

/// Crash-time annotations: at most `BBX_ANNOTATION_LIMIT` keys of at most `BBX_ANNOTATION_KEY_BYTES`
/// bytes (no space or newline) with values of at most `BBX_ANNOTATION_VALUE_BYTES` bytes (no newline),
/// held in static memory and written into every later crash report.
#define BBX_ANNOTATION_LIMIT 32
#define BBX_ANNOTATION_KEY_BYTES 31
#define BBX_ANNOTATION_VALUE_BYTES 255

/// Sets (or, with a NULL value, removes) an annotation. Ordinary code only; thread-safe. Returns 0,
/// EINVAL (a key or value too long or empty key) or ENOSPC (the table is full).
int bbx_crash_set_annotation(const char *key, const char *value);

/// Scopes: what a task is doing (a request's route, method, id, trace id…), a Swift task-local
/// value that the handler reads for the crashed thread's task. Each scope's fields, as `name\0value\0`
/// pairs, sit in an immutable view the Swift side allocates and frees.
#define BBX_SCOPE_FIELD_BYTES 640
#define BBX_SCOPE_VIEW_MAGIC 0x65706f6373786262ULL

typedef struct bbx_scope_view {
    uint64_t magic;
    uint32_t length;
    uint32_t reserved;
    char fields[];
} bbx_scope_view;

/// Registers the task-local key (the `TaskLocal` object) whose values are scope bindings, and resolves
/// the runtime's lookup. Ordinary code, once. Returns 0, or -1 when the runtime has no lookup.
int bbx_scope_register(const void *key);

/// The current task's (or, outside any task, the thread's) binding object for the registered key,
/// not retained; NULL when none is bound or nothing was registered. For ordinary code on the hot path
/// (a log call with an error inside a request): the binding stays alive while the caller runs inside
/// its scope, and reading it this way skips the task-local getter's copy (a retain and a release).
const void *bbx_scope_binding_current(void);

/// Crash-time delivery: after the raw report is complete (and fsynced), the handler starts
/// `executable` with `arguments` and the report's path as its last argument, in `environment` only
/// (`NAME=value` strings), waits for it at most `deadline_ms`, kills it at the deadline, and only then
/// lets the process die by its signal. The helper deletes the report once the collector stored it;
/// otherwise it stays for the next launch, with a `delivery` line saying what happened.
#define BBX_DELIVERY_MAX_ARGUMENTS 16
#define BBX_DELIVERY_MAX_ENVIRONMENT 32

typedef struct bbx_crash_delivery {
    const char *executable;
    const char *const *arguments;
    int argument_count;
    const char *const *environment;
    int environment_count;
    /// Where raw reports are written (the install's `pending_directory`), to form the report's path.
    const char *report_directory;
    uint32_t deadline_ms;
} bbx_crash_delivery;

/// Sets (or, with NULL, turns off) crash-time delivery. Everything is copied. Ordinary code only.
/// Returns 0, EINVAL or ENOMEM.
int bbx_crash_set_delivery(const bbx_crash_delivery *delivery);

/// Test support: make the handler itself fault after the header (1), or in a phase that is not
/// protected (2), to exercise the nested-crash path.
void bbx_crash_set_test_fault(int mode);

#ifdef __cplusplus
}
#endif

#endif
