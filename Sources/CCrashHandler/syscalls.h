// Raw system calls with every argument a `long`.
//
// `syscall()` is variadic: an `int` argument fills only half of its 8-byte slot, and the kernel
// reads the whole slot. For the sixth argument (on the stack) the other half is whatever the stack
// held (process_vm_readv's `flags` then read as garbage, and every read failed with EINVAL). These
// wrappers have prototypes, so the compiler widens each argument; `syscall` itself is poisoned below
// so that no file of the handler can call it directly. Include this header after every system header.
#ifndef BBX_SYSCALLS_H
#define BBX_SYSCALLS_H

#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

static inline long bbx_syscall0(long number) { return syscall(number); }
static inline long bbx_syscall1(long number, long a) { return syscall(number, a); }
static inline long bbx_syscall2(long number, long a, long b) { return syscall(number, a, b); }
static inline long bbx_syscall3(long number, long a, long b, long c) { return syscall(number, a, b, c); }
static inline long bbx_syscall4(long number, long a, long b, long c, long d) {
    return syscall(number, a, b, c, d);
}
static inline long bbx_syscall5(long number, long a, long b, long c, long d, long e) {
    return syscall(number, a, b, c, d, e);
}
static inline long bbx_syscall6(long number, long a, long b, long c, long d, long e, long f) {
    return syscall(number, a, b, c, d, e, f);
}

// Copies `count` bytes of this process's memory at `from` without faulting: process_vm_readv answers
// EFAULT for an unmapped address. The bytes read, or -1 with errno set (EPERM or ENOSYS where a
// seccomp profile or the kernel refuses the call).
static inline long bbx_read_own_memory(void *to, const void *from, size_t count) {
    struct iovec local = {.iov_base = to, .iov_len = count};
    struct iovec remote = {.iov_base = (void *)from, .iov_len = count};
    return bbx_syscall6(SYS_process_vm_readv, getpid(), (long)&local, 1, (long)&remote, 1, 0);
}

#pragma GCC poison syscall

#endif
