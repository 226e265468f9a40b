// The signal handler and its installation.
//
// Async-signal-safety: from the moment a fatal signal arrives, this file calls only write, read, open,
// openat, close, fdatasync, clock_gettime, getpid, syscall(SYS_gettid / SYS_tgkill / SYS_futex /
// SYS_getdents64 / SYS_process_vm_readv), sigaction,
// (for crash-time delivery, delivery.c: clone, execve, wait4 and kill),
// sigprocmask, sigsetjmp/siglongjmp, alarm, nanosleep and memcpy/strlen, plus libunwind, which is
// not lock-free and therefore runs last (see docs/crash-capture.md). Everything else — opening the
// directory, the image table, loading libunwind, copying options — is prepared at install time.
#define _GNU_SOURCE
#include "CCrashHandler.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/futex.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <ucontext.h>
#include <unistd.h>

#include "altstacks.h"
#include "annotations.h"
#include "delivery.h"
#include "images.h"
#include "memory_map.h"
#include "raw_writer.h"
#include "scopes.h"
#include "threads.h"
#include "unwinder.h"
#include "syscalls.h"

static const int handled_signals[] = {SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT, SIGTRAP, SIGSYS};
#define HANDLED_COUNT (sizeof(handled_signals) / sizeof(handled_signals[0]))

// Options in effect; replaced as a whole (and the old copy leaked) so the handler never sees a mix.
typedef struct installed_options {
    int directory_fd;
    char *header_lines;
    const unsigned char *journal_data;
    uint64_t journal_capacity;
    const uint64_t *journal_write_position;
    uint32_t journal_tail_bytes;
    const uint64_t *journal_read_position;
    const uint64_t *journal_writer_thread;
    // The installing process: a forked child that crashes has no writer thread to wait for.
    pid_t pid;
    int chain_swift_backtracer;
} installed_options;

static _Atomic(installed_options *) options_in_effect;
static struct sigaction previous_actions[NSIG];
// Whether the handler we replaced for a signal is the Swift runtime's backtracer (found with dladdr
// at install time, where it is allowed).
static int previous_is_swift_runtime[NSIG];
static atomic_int installed;
static pthread_mutex_t install_lock = PTHREAD_MUTEX_INITIALIZER;
typedef _Atomic(const char *) *(*fatal_message_buffer_fn)(void);
static _Atomic(const char *) *fatal_message_buffer;
static atomic_int test_fault_mode;

// Crash state. Only the first crashing thread writes a report; the others wait for it to end the
// process. The writer and the recovery point are static because only that one thread uses them.
static atomic_int crashing_thread;
static atomic_int crash_signal;
static atomic_int report_fd = -1;
static atomic_int report_finished;
// Set once a report file was opened and written: the crash is on record.
static atomic_int report_written;
static bbx_writer writer;
static sigjmp_buf recovery_point;
static volatile sig_atomic_t recovery_armed;
static volatile sig_atomic_t nested_signal;

static pid_t current_thread_id(void) { return (pid_t)bbx_syscall0(SYS_gettid); }

static const char *signal_name(int sig) {
    switch (sig) {
    case SIGSEGV: return "SIGSEGV";
    case SIGBUS: return "SIGBUS";
    case SIGILL: return "SIGILL";
    case SIGFPE: return "SIGFPE";
    case SIGABRT: return "SIGABRT";
    case SIGTRAP: return "SIGTRAP";
    case SIGSYS: return "SIGSYS";
    default: return "SIG?";
    }
}

// MARK: Dying

// Ends the process by `sig` with the default action, whichever thread calls it.
static void die_by_signal(int sig, pid_t thread) {
    struct sigaction dfl;
    memset(&dfl, 0, sizeof(dfl));
    dfl.sa_handler = SIG_DFL;
    sigaction(sig, &dfl, NULL);
    sigset_t unblock;
    sigemptyset(&unblock);
    sigaddset(&unblock, sig);
    sigprocmask(SIG_UNBLOCK, &unblock, NULL);
    bbx_syscall3(SYS_tgkill, getpid(), thread, sig);
    // tgkill to ourselves is delivered before the syscall returns; to another thread, very soon.
    for (;;) {
        struct timespec second = {1, 0};
        nanosleep(&second, NULL);
    }
}

// Another thread calling exit() while a crash is being handled (the Swift backtracer resumes the
// other threads before our thread re-raises, so `main` could return first) must not turn the crash
// into exit status 0: wait for the report, then die by the crash signal.
static void exit_guard(void) {
    int sig = atomic_load(&crash_signal);
    if (sig == 0) return;
    // The watchdog's bound for the report, then crash-time delivery's own.
    uint32_t ticks = 100 + bbx_delivery_deadline_ms() / 100;
    for (uint32_t i = 0; i < ticks && !atomic_load(&report_finished); i++) {
        struct timespec tick = {0, 100 * 1000 * 1000};
        nanosleep(&tick, NULL);
    }
    die_by_signal(sig, current_thread_id());
}

// libunwind can block on the loader lock held by a thread we interrupted. If the report is not done
// in time, end the process by the original signal anyway. The timeout is watched twice, because
// neither way alone always works: a thread started at install time waits on a futex the handler
// wakes (it blocks every signal, so it runs whatever the other threads block: libunwind blocks all
// signals on the crashing thread while it waits for a lock), and alarm(), for a forked child where
// that thread does not exist. Either one ends the process from its own thread: the crashing thread
// may have the crash signal blocked (libunwind again), so a signal sent to it could stay pending.
#define WATCHDOG_SECONDS 10
enum { WATCH_IDLE, WATCH_ARMED, WATCH_DONE };
static atomic_uint watch_state;
static atomic_int watchdog_thread_id;

static void watchdog_fired(void) {
    int fd = atomic_load(&report_fd);
    if (fd >= 0) {
        static const char line[] = "watchdog-timeout\n";
        ssize_t ignored = write(fd, line, sizeof(line) - 1);
        (void)ignored;
    }
    die_by_signal(atomic_load(&crash_signal), current_thread_id());
}

static void alarm_fired(int sig) {
    (void)sig;
    if (atomic_load(&watch_state) == WATCH_ARMED) watchdog_fired();
}

static long futex_wait(atomic_uint *word, unsigned expected, const struct timespec *timeout) {
    return bbx_syscall6(SYS_futex, (long)word, FUTEX_WAIT_PRIVATE, expected, (long)timeout, 0, 0);
}

static void *watch_crashes(void *unused) {
    (void)unused;
    atomic_store(&watchdog_thread_id, (int)current_thread_id());
    while (atomic_load(&watch_state) == WATCH_IDLE) futex_wait(&watch_state, WATCH_IDLE, NULL);
    struct timespec deadline;
    clock_gettime(CLOCK_MONOTONIC, &deadline);
    deadline.tv_sec += WATCHDOG_SECONDS;
    for (;;) {
        struct timespec now;
        clock_gettime(CLOCK_MONOTONIC, &now);
        long long remaining = (long long)(deadline.tv_sec - now.tv_sec) * 1000000000LL + (deadline.tv_nsec - now.tv_nsec);
        if (atomic_load(&watch_state) != WATCH_ARMED) return NULL;
        if (remaining <= 0) break;
        struct timespec wait = {(time_t)(remaining / 1000000000LL), (long)(remaining % 1000000000LL)};
        futex_wait(&watch_state, WATCH_ARMED, &wait);
    }
    watchdog_fired();
    return NULL;
}

// Ordinary code, at install.
static void start_watchdog_thread(void) {
    sigset_t all, previous;
    sigfillset(&all);
    // The new thread inherits this mask: no signal of the app's is ever delivered to it.
    pthread_sigmask(SIG_SETMASK, &all, &previous);
    pthread_t thread;
    if (pthread_create(&thread, NULL, watch_crashes, NULL) == 0) {
        pthread_setname_np(thread, "bbx-crash-watch");
        pthread_detach(thread);
    }
    pthread_sigmask(SIG_SETMASK, &previous, NULL);
}

static void arm_watchdog(void) {
    struct sigaction alarm_action;
    memset(&alarm_action, 0, sizeof(alarm_action));
    alarm_action.sa_handler = alarm_fired;
    sigaction(SIGALRM, &alarm_action, NULL);
    alarm(WATCHDOG_SECONDS);
    atomic_store(&watch_state, WATCH_ARMED);
    bbx_syscall6(SYS_futex, (long)&watch_state, FUTEX_WAKE_PRIVATE, 1, 0, 0, 0);
}

static void disarm_watchdog(void) {
    alarm(0);
    atomic_store(&watch_state, WATCH_DONE);
    bbx_syscall6(SYS_futex, (long)&watch_state, FUTEX_WAKE_PRIVATE, 1, 0, 0, 0);
}

// MARK: Report sections

static void write_header(const installed_options *options, int sig, const siginfo_t *info) {
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    bbx_write_str(&writer, "blackbox-raw-crash 2\n");
    bbx_write_str(&writer, options->header_lines);
    bbx_write_str(&writer, "signal ");
    bbx_write_dec(&writer, sig);
    bbx_write_str(&writer, " ");
    bbx_write_str(&writer, signal_name(sig));
    bbx_write_str(&writer, "\ncode ");
    bbx_write_dec(&writer, info->si_code);
    bbx_write_str(&writer, "\naddress ");
    bbx_write_hex(&writer, (uint64_t)(uintptr_t)info->si_addr);
    if (info->si_code <= 0) {
        bbx_write_str(&writer, "\nsender-pid ");
        bbx_write_dec(&writer, info->si_pid);
    }
    bbx_write_str(&writer, "\ntime ");
    bbx_write_dec(&writer, now.tv_sec);
    bbx_write_str(&writer, " ");
    bbx_write_dec(&writer, now.tv_nsec);
    bbx_write_str(&writer, "\npid ");
    bbx_write_dec(&writer, getpid());
    bbx_write_str(&writer, "\ntid ");
    bbx_write_dec(&writer, current_thread_id());
    bbx_write_str(&writer, "\nthread ");
    char name[32];
    int fd = open("/proc/thread-self/comm", O_RDONLY | O_CLOEXEC);
    ssize_t n = fd >= 0 ? read(fd, name, sizeof(name) - 1) : -1;
    if (fd >= 0) close(fd);
    if (n > 0 && name[n - 1] == '\n') n--;
    if (n > 0) bbx_write_bytes(&writer, name, (size_t)n);
    bbx_write_str(&writer, "\n");
    bbx_write_flush(&writer);
}

static void write_register(const char *name, uint64_t value) {
    bbx_write_str(&writer, "register ");
    bbx_write_str(&writer, name);
    bbx_write_str(&writer, " ");
    bbx_write_hex(&writer, value);
    bbx_write_str(&writer, "\n");
}

static void write_registers(const ucontext_t *context) {
#if defined(__x86_64__)
    static const struct {
        const char *name;
        int index;
    } order[] = {{"rax", REG_RAX}, {"rbx", REG_RBX}, {"rcx", REG_RCX}, {"rdx", REG_RDX}, {"rsi", REG_RSI},
                 {"rdi", REG_RDI}, {"rbp", REG_RBP}, {"rsp", REG_RSP}, {"r8", REG_R8},   {"r9", REG_R9},
                 {"r10", REG_R10}, {"r11", REG_R11}, {"r12", REG_R12}, {"r13", REG_R13}, {"r14", REG_R14},
                 {"r15", REG_R15}, {"rip", REG_RIP}, {"rflags", REG_EFL}};
    for (size_t i = 0; i < sizeof(order) / sizeof(order[0]); i++)
        write_register(order[i].name, (uint64_t)context->uc_mcontext.gregs[order[i].index]);
#elif defined(__aarch64__)
    static const char *names[] = {"x0",  "x1",  "x2",  "x3",  "x4",  "x5",  "x6",  "x7",  "x8",  "x9",
                                  "x10", "x11", "x12", "x13", "x14", "x15", "x16", "x17", "x18", "x19",
                                  "x20", "x21", "x22", "x23", "x24", "x25", "x26", "x27", "x28", "fp", "lr"};
    for (int i = 0; i < 31; i++) write_register(names[i], context->uc_mcontext.regs[i]);
    write_register("sp", context->uc_mcontext.sp);
    write_register("pc", context->uc_mcontext.pc);
#endif
    bbx_write_flush(&writer);
}

// The Swift runtime keeps the text of the last fatal error (fatalError always; nil-unwrap and index
// messages in debug builds) in a buffer it exports.
static void write_fatal_message(void) {
    if (fatal_message_buffer == NULL) return;
    const char *message = atomic_load(fatal_message_buffer);
    if (message == NULL) return;
    size_t length = strnlen(message, 16384);
    bbx_write_str(&writer, "message ");
    bbx_write_dec(&writer, (int64_t)length);
    bbx_write_str(&writer, "\n");
    bbx_write_bytes(&writer, message, length);
    bbx_write_str(&writer, "\n");
    bbx_write_flush(&writer);
}

// The last records of the journal, raw: the next launch decodes and formats them. Records are
// 8-aligned at stream positions, so the tail starts on a multiple of 8; the data area is mapped twice,
// so the copy is one contiguous range.
static void write_journal_tail(const installed_options *options) {
    if (options->journal_data == NULL || options->journal_tail_bytes == 0) return;
    uint64_t end = __atomic_load_n(options->journal_write_position, __ATOMIC_ACQUIRE);
    uint64_t length = options->journal_tail_bytes;
    if (length > options->journal_capacity) length = options->journal_capacity;
    if (length > end) length = end;
    uint64_t start = (end - length + 7) & ~(uint64_t)7;
    length = end - start;
    bbx_write_str(&writer, "journal ");
    bbx_write_dec(&writer, (int64_t)start);
    bbx_write_str(&writer, " ");
    bbx_write_dec(&writer, (int64_t)length);
    bbx_write_str(&writer, "\n");
    bbx_write_direct(&writer, options->journal_data + (start & (options->journal_capacity - 1)), length);
    bbx_write_str(&writer, "\n");
    bbx_write_flush(&writer);
}

// Runs one section; a fault inside it (SA_NODEFER lets it re-enter the handler) jumps back here, the
// section is abandoned with a note, and the report goes on with the next one.
#define SECTION(name, body)                                                                                \
    do {                                                                                                   \
        if (sigsetjmp(recovery_point, 1) == 0) {                                                           \
            recovery_armed = 1;                                                                            \
            body;                                                                                          \
            recovery_armed = 0;                                                                            \
        } else {                                                                                           \
            writer.used = 0;                                                                               \
            bbx_write_str(&writer, "\nnested-fault ");                                                     \
            bbx_write_dec(&writer, nested_signal);                                                         \
            bbx_write_str(&writer, " " name "\n");                                                         \
            bbx_write_flush(&writer);                                                                      \
        }                                                                                                  \
    } while (0)

static void test_fault(void) { *(volatile int *)(uintptr_t)8 = 1; }

static uint64_t monotonic_ns(void) {
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (uint64_t)now.tv_sec * 1000000000u + (uint64_t)now.tv_nsec;
}

#define CRASHED_THREAD_FRAMES 512
static uint64_t crashed_thread_frames[CRASHED_THREAD_FRAMES];
static uint64_t crashed_thread_frame_pointers[CRASHED_THREAD_FRAMES];
static volatile int crashed_thread_frame_count;

// Swift async callers. A Swift async function keeps its async context pointer just below its frame
// record (at fp - 8); the context starts with its caller's context and the caller's resume function,
// so following it gives the async functions that awaited this one (the logical stack the Swift
// backtracer prints as [async] frames). Which frame is an async function only symbols say, and they
// are for the next launch: here, each of the first frames whose candidate chain looks real (every
// resume address in an image's code) is written as `async <frame> <resume>…`, and processing keeps
// the chain of the first frame whose function is an async partial function.
#define ASYNC_FRAMES_CHECKED 64
#define ASYNC_CHAIN_LIMIT 64

// Reads `count` words at `address` without faulting: most candidates are not contexts at all (the
// slot holds whatever the function saved there), so a wild pointer must cost nothing. 0 on success.
// process_vm_readv first; where it is refused (Docker's default seccomp profile blocks it without
// CAP_SYS_PTRACE, and so do some kernels) a pipe made at install: write(2) copies from `address` in
// the kernel, which answers EFAULT for an unmapped address instead of faulting, and the bytes come
// back with read(2).
static int probe_pipe[2] = {-1, -1};
static int vm_readv_refused;

static int read_words(uint64_t address, uint64_t *words, size_t count) {
    size_t bytes = count * sizeof(uint64_t);
    if (!vm_readv_refused) {
        long read_bytes = bbx_read_own_memory(words, (const void *)(uintptr_t)address, bytes);
        if (read_bytes == (long)bytes) return 0;
        if (read_bytes >= 0 || errno == EFAULT) return -1;
        vm_readv_refused = 1;
    }
    if (probe_pipe[1] < 0) return -1;
    ssize_t written = write(probe_pipe[1], (const void *)(uintptr_t)address, bytes);
    if (written <= 0) return -1;
    // A read that crossed into an unmapped page wrote a part: drain it, so the pipe stays empty.
    ssize_t drained = read(probe_pipe[0], words, (size_t)written);
    return written == (ssize_t)bytes && drained == written ? 0 : -1;
}

// Ordinary code, at install.
static void prepare_memory_probe(void) {
    if (probe_pipe[0] < 0 && pipe2(probe_pipe, O_CLOEXEC | O_NONBLOCK) != 0) probe_pipe[0] = probe_pipe[1] = -1;
}

static void write_async_chain(int frame, uint64_t context) {
    uint64_t chain[ASYNC_CHAIN_LIMIT];
    int length = 0;
    while (length < ASYNC_CHAIN_LIMIT && context != 0 && (context & 7) == 0) {
        uint64_t words[2];
        if (read_words(context, words, 2) != 0) break;
        uint64_t resume = words[1];
        if (!bbx_images_contain_code((uintptr_t)resume)) break;
        chain[length++] = resume;
        context = words[0];
    }
    if (length == 0) return;
    bbx_write_str(&writer, "async ");
    bbx_write_dec(&writer, frame);
    for (int i = 0; i < length; i++) {
        bbx_write_str(&writer, " ");
        bbx_write_hex(&writer, chain[i]);
    }
    bbx_write_str(&writer, "\n");
}

static void write_async_candidates(void) {
    int count = crashed_thread_frame_count;
    for (int i = 0; i < count && i < ASYNC_FRAMES_CHECKED; i++) {
        uint64_t fp = crashed_thread_frame_pointers[i];
        // The frame records were checked by the walk: fp - 8 is on the stack.
        if (fp < 16 || (fp & 7) != 0) continue;
        uint64_t context;
        if (read_words(fp - 8, &context, 1) == 0) write_async_chain(i, context);
    }
    bbx_write_flush(&writer);
}

// For a fault the kernel raised (SIGSEGV, SIGBUS): the mappings around the fault address and the
// stack pointer, and on x86_64 whether the faulting access read, wrote or fetched an instruction (the
// page fault's error code). The next launch tells a guard page from read-only data with them.
static void write_memory_map(int sig, const siginfo_t *info, const ucontext_t *context) {
    if ((sig != SIGSEGV && sig != SIGBUS) || info->si_code <= 0) return;
    uint64_t stack_pointer = 0;
#if defined(__x86_64__)
    if (context->uc_mcontext.gregs[REG_TRAPNO] == 14) {
        greg_t error = context->uc_mcontext.gregs[REG_ERR];
        bbx_write_str(&writer, (error & 0x10)  ? "fault-access execute\n"
                               : (error & 0x2) ? "fault-access write\n"
                                               : "fault-access read\n");
    }
    stack_pointer = (uint64_t)context->uc_mcontext.gregs[REG_RSP];
#elif defined(__aarch64__)
    stack_pointer = context->uc_mcontext.sp;
#endif
    static const char *const roles[] = {"stack", "fault"};
    uint64_t addresses[] = {stack_pointer, (uint64_t)(uintptr_t)info->si_addr};
    // A general-protection fault (a non-canonical pointer) carries no address.
    bbx_memory_map_write(&writer, addresses, roles, info->si_code == SI_KERNEL ? 1 : 2);
}

static void write_report(const installed_options *options, int sig, siginfo_t *info, ucontext_t *context) {
    uint64_t started = monotonic_ns();
    SECTION("header", write_header(options, sig, info); if (atomic_load(&test_fault_mode) == 1) test_fault());
    SECTION("registers", write_registers(context));
    SECTION("message", write_fatal_message());
    SECTION("annotations", bbx_annotations_write(&writer));
    SECTION("scope", bbx_scopes_write(&writer));
    SECTION("frame-pointers", bbx_collect_frame_pointers(context, crashed_thread_frames, crashed_thread_frame_pointers,
                                                         CRASHED_THREAD_FRAMES, &crashed_thread_frame_count));
    bbx_write_frame_pointers(&writer, crashed_thread_frames, crashed_thread_frame_count);
    SECTION("async", write_async_candidates());
    SECTION("memory-map", write_memory_map(sig, info, context));
    SECTION("images", bbx_images_write(&writer));
    SECTION("journal", write_journal_tail(options));
    if (atomic_load(&test_fault_mode) == 2) test_fault();
    // Before libunwind, which can block: the other threads' walks are lock-free and bounded in time.
    SECTION("threads",
            (void)bbx_threads_write(&writer, current_thread_id(), (pid_t)atomic_load(&watchdog_thread_id), 1));
    // Last: libunwind may take the loader lock, which the interrupted code might hold.
    SECTION("unwind", bbx_walk_libunwind(&writer, context));
    bbx_write_str(&writer, "handler-duration-ns ");
    bbx_write_dec(&writer, (int64_t)(monotonic_ns() - started));
    bbx_write_str(&writer, "\nend\n");
    bbx_write_flush(&writer);
}

// The journal's record layout (docs/journal.md): the commit word, the length, the header's size.
#define JOURNAL_COMMIT_BIT (1ULL << 63)
#define JOURNAL_RECORD_LENGTH_OFFSET 8
#define JOURNAL_RECORD_HEADER_BYTES 48

// The end of the records committed in [from, to): the first record whose commit word does not name
// its position (a reservation its producer never finished, perhaps the crashed thread's own) stops
// the writer too. A record freed and reused meanwhile names a later position and stops the walk.
static uint64_t committed_end(const installed_options *options, uint64_t from, uint64_t to) {
    uint64_t position = from;
    while (position < to) {
        const unsigned char *record = options->journal_data + (position & (options->journal_capacity - 1));
        if (__atomic_load_n((const uint64_t *)record, __ATOMIC_ACQUIRE) != (position | JOURNAL_COMMIT_BIT)) break;
        uint32_t length = *(const volatile uint32_t *)(record + JOURNAL_RECORD_LENGTH_OFFSET);
        if (length < JOURNAL_RECORD_HEADER_BYTES || length > options->journal_capacity) break;
        position += ((uint64_t)length + 7) & ~(uint64_t)7;
    }
    return position;
}

// The console, stdout and journald get a line only from the writer thread, which runs on while the
// handler works and usually has caught up by the time the report is written. When it has not (a
// loaded machine, a writer paused between batches), the crashing request's last lines would be
// missing from `kubectl logs` (the journal keeps them for the next start, which writes only the
// file): wait, a bounded while, until the writer released every record committed now. Not when the
// crash is the writer's own, or in a forked child (no writer runs there). Returns what the report's
// `log-writer` line says when some lines reached no output but the journal, else NULL.
static const char *wait_for_log_writer(const installed_options *options, pid_t self) {
    if (options->journal_data == NULL || options->journal_read_position == NULL ||
        options->journal_writer_thread == NULL || getpid() != options->pid)
        return NULL;
    uint64_t writer_thread = __atomic_load_n(options->journal_writer_thread, __ATOMIC_ACQUIRE);
    if (writer_thread == 0) return NULL;
    uint64_t released = __atomic_load_n(options->journal_read_position, __ATOMIC_ACQUIRE);
    uint64_t target =
        committed_end(options, released, __atomic_load_n(options->journal_write_position, __ATOMIC_ACQUIRE));
    if (writer_thread == (uint64_t)self) return released < target ? "crashed" : NULL;
    uint64_t deadline = monotonic_ns() + (uint64_t)BBX_LOG_DRAIN_MS * 1000000ULL;
    while (__atomic_load_n(options->journal_read_position, __ATOMIC_ACQUIRE) < target) {
        if (monotonic_ns() >= deadline) return "timed-out";
        struct timespec pause = {0, 1000000};
        nanosleep(&pause, NULL);
    }
    return NULL;
}

// After `end`, as crash-time delivery's line: the log writer did not write every line logged before
// the crash to the console, stdout or journald.
static void write_log_writer_outcome(int fd, const char *outcome) {
    writer.fd = fd;
    writer.used = 0;
    bbx_write_str(&writer, "log-writer ");
    bbx_write_str(&writer, outcome);
    bbx_write_str(&writer, "\n");
    bbx_write_flush(&writer);
    fdatasync(fd);
}

static char report_name_buffer[sizeof(((bbx_writer *)0)->buffer)];
static const char *report_name;

static int open_report(const installed_options *options, int sig) {
    // crash-<seconds>-<pid>-<signal>.raw: unique enough (one crash per process), sortable by time.
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    bbx_writer name = {.fd = -1};
    report_name = NULL;
    bbx_write_str(&name, "crash-");
    bbx_write_dec(&name, now.tv_sec);
    bbx_write_str(&name, "-");
    bbx_write_dec(&name, getpid());
    bbx_write_str(&name, "-");
    bbx_write_dec(&name, sig);
    bbx_write_str(&name, ".raw");
    name.buffer[name.used] = 0;
    memcpy(report_name_buffer, name.buffer, name.used + 1);
    int fd = openat(options->directory_fd, report_name_buffer, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd >= 0) report_name = report_name_buffer;
    return fd;
}

// MARK: The handler

// Crash-time delivery, bounded by its own deadline (the watchdog is disarmed: nothing here can block
// on a lock). A report left behind says why, for the next launch.
static void deliver(int fd) {
    int status = 0;
    bbx_delivery_outcome outcome = bbx_delivery_run(report_name, &status);
    const char *what = NULL;
    switch (outcome) {
    case BBX_DELIVERY_OFF:
    case BBX_DELIVERY_DELIVERED: return;
    case BBX_DELIVERY_FAILED: what = WIFSIGNALED(status) ? "killed-by-signal " : "exit-status "; break;
    case BBX_DELIVERY_TIMED_OUT: what = "timed-out"; break;
    case BBX_DELIVERY_NOT_STARTED: what = "not-started"; break;
    case BBX_DELIVERY_UNKNOWN: what = "unknown"; break;
    }
    writer.fd = fd;
    writer.used = 0;
    bbx_write_str(&writer, "delivery ");
    bbx_write_str(&writer, what);
    if (outcome == BBX_DELIVERY_FAILED) bbx_write_dec(&writer, WIFSIGNALED(status) ? WTERMSIG(status) : WEXITSTATUS(status));
    bbx_write_str(&writer, "\n");
    bbx_write_flush(&writer);
    fdatasync(fd);
}

static void chain_and_die(int sig, siginfo_t *info, void *context);

static void handle_crash(int sig, siginfo_t *info, void *context) {
#if defined(__x86_64__)
    // The kernel keeps the interrupted code's alignment-check flag (EFLAGS.AC) for the handler: with
    // it set, any misaligned access of ours (libunwind's, a report line's) would fault again.
    __asm__ volatile("pushfq\n\tandq $~0x40000, (%%rsp)\n\tpopfq" ::: "memory", "cc");
#endif
    // A fault while another thread's stack is being sampled belongs to that walk, not to the app.
    bbx_threads_recover_from_fault();
    pid_t self = current_thread_id();
    int expected = 0;
    if (!atomic_compare_exchange_strong(&crashing_thread, &expected, (int)self)) {
        if (expected == (int)self) {
            // A fault inside our own handler.
            if (recovery_armed) {
                recovery_armed = 0;
                nested_signal = sig;
                siglongjmp(recovery_point, 1);
            }
            int fd = atomic_load(&report_fd);
            if (fd >= 0) {
                static const char line[] = "\nnested-fault-unrecoverable\n";
                ssize_t ignored = write(fd, line, sizeof(line) - 1);
                (void)ignored;
            }
            die_by_signal(atomic_load(&crash_signal), self);
        }
        // Another thread is writing the report and will end the process; wait for it.
        for (;;) {
            struct timespec second = {1, 0};
            nanosleep(&second, NULL);
        }
    }
    atomic_store(&crash_signal, sig);

    arm_watchdog();

    installed_options *options = atomic_load(&options_in_effect);
    if (options != NULL) {
        int fd = open_report(options, sig);
        atomic_store(&report_fd, fd);
        writer.fd = fd;
        writer.used = 0;
        if (fd >= 0) {
            write_report(options, sig, info, (ucontext_t *)context);
            fdatasync(fd);
            atomic_store(&report_written, 1);
        }
    }
    disarm_watchdog();
    const char *log_writer_outcome = options != NULL ? wait_for_log_writer(options, self) : NULL;
    int fd = atomic_load(&report_fd);
    if (fd >= 0) {
        if (log_writer_outcome != NULL) write_log_writer_outcome(fd, log_writer_outcome);
        deliver(fd);
        atomic_store(&report_fd, -1);
        close(fd);
    }
    atomic_store(&report_finished, 1);
    chain_and_die(sig, info, context);
}

// Hands the crash to whoever had the signal before us, then makes sure the process dies by the
// original signal. The Swift runtime's backtracer is skipped once our report is written (unless asked
// for): it symbolicates in the dying process, which kept a crashed server alive and holding its port
// for 5 s idle and 12-20 s under load, against milliseconds without it.
static void chain_and_die(int sig, siginfo_t *info, void *context) {
    struct sigaction previous = previous_actions[sig];
    installed_options *options = atomic_load(&options_in_effect);
    int reported = atomic_load(&report_written);
    int skip = previous_is_swift_runtime[sig] && reported && (options == NULL || !options->chain_swift_backtracer);
    if (!skip && previous.sa_handler != SIG_DFL && previous.sa_handler != SIG_IGN) {
        sigaction(sig, &previous, NULL);
        if (previous.sa_flags & SA_SIGINFO)
            previous.sa_sigaction(sig, info, context);
        else
            previous.sa_handler(sig);
    }
    die_by_signal(sig, current_thread_id());
}

// MARK: Installation

static pthread_key_t alternate_stack_key;
static pthread_once_t alternate_stack_key_once = PTHREAD_ONCE_INIT;

typedef struct alternate_stack {
    void *mapping;
    size_t mapping_size;
} alternate_stack;

static void release_alternate_stack(void *value) {
    alternate_stack *stack = value;
    // A thread that registered with the sweep as it started (new_threads.c) leaves its entry now.
    bbx_altstacks_forget((pid_t)bbx_syscall0(SYS_gettid));
    stack_t disable = {.ss_flags = SS_DISABLE};
    sigaltstack(&disable, NULL);
    munmap(stack->mapping, stack->mapping_size);
    free(stack);
}

static void make_alternate_stack_key(void) { pthread_key_create(&alternate_stack_key, release_alternate_stack); }

int bbx_crash_ensure_alternate_stack(uint64_t size) {
    if (size < 65536) size = 65536;
    stack_t current;
    if (sigaltstack(NULL, &current) == 0 && !(current.ss_flags & SS_DISABLE) && current.ss_size >= size) return 0;
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    size_t usable = ((size_t)size + page - 1) & ~(page - 1);
    // One guard page below the stack: an overflow of the handler itself faults instead of scribbling.
    void *mapping = mmap(NULL, usable + page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (mapping == MAP_FAILED) return errno;
    mprotect(mapping, page, PROT_NONE);
    stack_t stack = {.ss_sp = (char *)mapping + page, .ss_size = usable, .ss_flags = 0};
    if (sigaltstack(&stack, NULL) != 0) {
        int error = errno;
        munmap(mapping, usable + page);
        return error;
    }
    alternate_stack *record = malloc(sizeof(alternate_stack));
    if (record != NULL) {
        record->mapping = mapping;
        record->mapping_size = usable + page;
        pthread_once(&alternate_stack_key_once, make_alternate_stack_key);
        // Freed when the thread exits. The main thread's never is, which is what we want.
        pthread_setspecific(alternate_stack_key, record);
    }
    return 0;
}

void bbx_crash_refresh_images(void) { bbx_images_prepare(); }

int bbx_capture_other_threads(int fd) {
    if (!atomic_load(&installed)) return ENOSYS;
    bbx_writer lines = {.fd = fd};
    bbx_images_write(&lines);
    return bbx_threads_write(&lines, current_thread_id(), (pid_t)atomic_load(&watchdog_thread_id), 0);
}

int bbx_crash_has_libunwind(void) { return bbx_unwinder_available(); }

int bbx_crash_is_installed(void) { return atomic_load(&installed); }

void bbx_crash_set_test_fault(int mode) { atomic_store(&test_fault_mode, mode); }

// Whether a handler lives in the image of the Swift runtime (its backtracer installs itself before
// main): libswiftCore.so, or the executable itself when the standard library is linked statically
// (then an app's own handler in the executable counts too: docs/crash-capture.md says so).
static int is_swift_runtime_handler(const struct sigaction *action) {
    if (action->sa_handler == SIG_DFL || action->sa_handler == SIG_IGN) return 0;
    void *address = (action->sa_flags & SA_SIGINFO) ? (void *)action->sa_sigaction : (void *)action->sa_handler;
    void *runtime = dlsym(RTLD_DEFAULT, "swift_getFatalErrorMessageBuffer");
    Dl_info handler_image, runtime_image;
    if (runtime == NULL || dladdr(address, &handler_image) == 0 || dladdr(runtime, &runtime_image) == 0) return 0;
    return handler_image.dli_fbase == runtime_image.dli_fbase;
}

int bbx_crash_install(const bbx_crash_options *options) {
    if (options == NULL || options->pending_directory == NULL) return EINVAL;
    if (options->journal_data != NULL &&
        (options->journal_capacity == 0 || (options->journal_capacity & (options->journal_capacity - 1)) != 0 ||
         options->journal_write_position == NULL))
        return EINVAL;

    installed_options *copy = calloc(1, sizeof(installed_options));
    if (copy == NULL) return ENOMEM;
    copy->directory_fd = open(options->pending_directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (copy->directory_fd < 0) {
        int error = errno;
        free(copy);
        return error;
    }
    copy->header_lines = strdup(options->header_lines ? options->header_lines : "");
    copy->journal_data = options->journal_data;
    copy->journal_capacity = options->journal_capacity;
    copy->journal_write_position = options->journal_write_position;
    copy->journal_tail_bytes = options->journal_tail_bytes;
    copy->journal_read_position = options->journal_read_position;
    copy->journal_writer_thread = options->journal_writer_thread;
    copy->pid = getpid();
    copy->chain_swift_backtracer = options->chain_swift_backtracer;

    pthread_mutex_lock(&install_lock);
    int error = bbx_crash_ensure_alternate_stack(65536);
    if (error == 0 && !atomic_load(&installed)) {
        bbx_unwinder_prepare();
        bbx_images_prepare();
        prepare_memory_probe();
        // Without it, reports carry the crashed thread only (and say so).
        (void)bbx_threads_prepare();
        fatal_message_buffer_fn lookup =
            (fatal_message_buffer_fn)dlsym(RTLD_DEFAULT, "swift_getFatalErrorMessageBuffer");
        if (lookup != NULL) fatal_message_buffer = lookup();
        struct sigaction action;
        memset(&action, 0, sizeof(action));
        action.sa_sigaction = handle_crash;
        // SA_NODEFER: a fault inside the handler re-enters it (and is recovered) instead of killing
        // the process silently.
        action.sa_flags = SA_SIGINFO | SA_ONSTACK | SA_NODEFER;
        sigemptyset(&action.sa_mask);
        for (size_t i = 0; i < HANDLED_COUNT && error == 0; i++) {
            int sig = handled_signals[i];
            if (sigaction(sig, &action, &previous_actions[sig]) != 0) error = errno;
            previous_is_swift_runtime[sig] = is_swift_runtime_handler(&previous_actions[sig]);
        }
        if (error == 0) {
            start_watchdog_thread();
            atexit(exit_guard);
            atomic_store(&installed, 1);
        }
    }
    if (error == 0) {
        // Replaced, never freed: a crashing thread may be reading the previous one.
        atomic_store(&options_in_effect, copy);
    } else {
        close(copy->directory_fd);
        free(copy->header_lines);
        free(copy);
    }
    pthread_mutex_unlock(&install_lock);
    return error;
}
