#define _GNU_SOURCE
#include <errno.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <link.h>
#include <pthread.h>
#include <stddef.h>
#include <stdatomic.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>
#include "CBlackboxTestCrashes.h"

__attribute__((noinline)) void bbx_test_null_write(void) { *(volatile int *)0 = 42; }

// x86 raises SIGFPE (FPE_INTDIV) on integer division by zero; `volatile` keeps the compiler from
// folding or removing it.
__attribute__((noinline)) int bbx_test_divide(int numerator, int denominator) {
    volatile int d = denominator;
    return numerator / d;
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
