#define _GNU_SOURCE
#include <errno.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <link.h>
#include <pthread.h>
#include <stddef.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>
#if defined(__x86_64__)
#include <xmmintrin.h>
#endif
#include "CBlackboxTestCrashes.h"

__attribute__((noinline)) void bbx_test_null_write(void) { *(volatile int *)0 = 42; }

// x86 raises SIGFPE (FPE_INTDIV) on integer division by zero; `volatile` keeps the compiler from
// folding or removing it.
__attribute__((noinline)) int bbx_test_divide(int numerator, int denominator) {
    volatile int d = denominator;
    return numerator / d;
}

// Memory faults the diagnosis tells apart by the map at crash time (docs/crash-capture.md, `map`).

// A write to the binary's own code. (Not to its constants: the Swift toolchain links `.rodata` into a
// writable segment, so a write to a C `static const` there does not fault.)
__attribute__((noinline)) void bbx_test_read_only_write(void) {
    *(volatile unsigned char *)(uintptr_t)&bbx_test_read_only_write = 0xcc;
}

// A call into a heap buffer: mapped, but not executable.
__attribute__((noinline)) void bbx_test_execute_heap(void) {
    void *volatile buffer = malloc(64);
    if (buffer == NULL) abort();
    ((void (*)(void))(uintptr_t)buffer)();
}

// A read of a page that was unmapped: nothing is mapped there any more (a use after free, for mmap).
__attribute__((noinline)) int bbx_test_read_unmapped(void) {
    long size = sysconf(_SC_PAGESIZE);
    char *page = mmap(NULL, (size_t)size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (page == MAP_FAILED) abort();
    munmap(page, (size_t)size);
    return *(volatile char *)(page + 16);
}

// A read past the end of a mapped file: the mapping is there, the file's page behind it is not.
__attribute__((noinline)) int bbx_test_read_past_file_end(void) {
    long size = sysconf(_SC_PAGESIZE);
    int fd = memfd_create("bbx-cut-short", MFD_CLOEXEC);
    if (fd < 0 || ftruncate(fd, size) != 0) abort();
    char *mapped = mmap(NULL, (size_t)size * 2, PROT_READ, MAP_SHARED, fd, 0);
    if (mapped == MAP_FAILED) abort();
    return *(volatile char *)(mapped + size + 8);
}

// A trap instruction of C's (ud2 on x86_64): SIGILL with no Swift runtime text.
__attribute__((noinline)) void bbx_test_trap(void) { __builtin_trap(); }

// A floating-point division by zero with that exception unmasked (masked by default: the result is
// infinity). x86_64 only; elsewhere it returns.
__attribute__((noinline)) double bbx_test_float_divide(double denominator) {
#if defined(__x86_64__)
    _mm_setcsr(_mm_getcsr() & ~_MM_MASK_DIV_ZERO);
#endif
    volatile double d = denominator;
    return 1.0 / d;
}

// A pointer outside the canonical address space: a general-protection fault, which carries no address.
__attribute__((noinline)) void bbx_test_non_canonical_write(void) {
    *(volatile int *)(uintptr_t)0x8000000000000010ULL = 1;
}

// A read of an int at an odd address where the hardware checks alignment: on x86_64 with the
// alignment-check flag set (EFLAGS.AC; Linux sets CR0.AM, so user code may turn it on), on aarch64 an
// exclusive load, which must be aligned. Both raise SIGBUS (BUS_ADRALN).
__attribute__((noinline)) int bbx_test_misaligned(void) {
    static char buffer[16] __attribute__((aligned(16)));
    volatile int *misaligned = (volatile int *)(void *)(buffer + 1);
#if defined(__x86_64__)
    __asm__ volatile("pushfq\n\torq $0x40000, (%%rsp)\n\tpopfq" ::: "memory", "cc");
    return *misaligned;
#elif defined(__aarch64__)
    int value;
    __asm__ volatile("ldxr %w0, [%1]" : "=r"(value) : "r"(misaligned) : "memory");
    return value;
#else
    abort();
#endif
}

void bbx_test_name_thread(const char *name) { pthread_setname_np(pthread_self(), name); }

static atomic_int loader_lock_held;

static int stop_inside(struct dl_phdr_info *info, size_t size, void *data) {
    (void)info, (void)size, (void)data;
    atomic_store(&loader_lock_held, 1);
    for (;;) sleep(1);
    return 0;
}

__attribute__((noinline)) void bbx_test_hold_loader_lock(void) { dl_iterate_phdr(stop_inside, NULL); }

int bbx_test_loader_lock_held(void) { return atomic_load(&loader_lock_held); }

int bbx_test_refuse_process_vm_readv(void) {
#if defined(__x86_64__)
    const unsigned int arch = AUDIT_ARCH_X86_64;
#elif defined(__aarch64__)
    const unsigned int arch = AUDIT_ARCH_AARCH64;
#else
    return ENOSYS;
#endif
    struct sock_filter filter[] = {
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, arch, 1, 0),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_process_vm_readv, 0, 1),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | (EPERM & SECCOMP_RET_DATA)),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
    };
    struct sock_fprog program = {.len = sizeof(filter) / sizeof(filter[0]), .filter = filter};
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) return errno;
    return prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &program, 0, 0) == 0 ? 0 : errno;
}
