// Resuming the blocking call a Blackbox signal cut short (see blocking_calls.h).
//
// When a handler runs, the kernel ends an interrupted sleep or poll with EINTR even under SA_RESTART.
// The handler resumes it in one of two ways, only when the interrupted context is exactly the noted
// call (same call number, arguments, stack pointer and return address, and EINTR as its result):
//  - The calls whose remaining time the kernel keeps in the thread's restart block (nanosleep, a
//    relative clock_nanosleep, poll): restart_syscall, from the handler, before rt_sigreturn clears
//    that block. This is what the kernel itself does after a stop and continue: the call goes on to
//    its original deadline. Meanwhile the thread's mask is the interrupted code's, so an app's signal
//    still interrupts the call (its EINTR then stays), but for the signals of Blackbox's living
//    captures: a capture nested in the restart would end it (its rt_sigreturn clears the block), so
//    the thread shows as blocking signals in hang reports until its call ends. A crash's capture
//    still reaches it (it may take SIGUSR2 or SIGUSR1). Futex waits are left alone: their callers
//    (glibc's condition variables, Dispatch, the Swift runtime) take EINTR as the spurious wake-up
//    a futex may always have.
//  - The calls that can be repeated unchanged (an absolute clock_nanosleep; select, pselect6 and
//    ppoll, whose timeout Linux rewrites to the time left; epoll waits without a timeout): the
//    context is rewound to the system-call instruction, so the thread makes the call again.
// Anything else keeps the EINTR (documented in docs/crash-capture.md).
#define _GNU_SOURCE
#include "blocking_calls.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <string.h>
#include <time.h>
#include <ucontext.h>
#include <unistd.h>

#include "proc_files.h"
#include "syscalls.h"

// Parses "<number> 0x<arg>… 0x<sp> 0x<pc>" as /proc/<pid>/task/<tid>/syscall prints it.
static int parse_call(const char *text, bbx_blocking_call *call) {
    const char *c = text;
    int negative = *c == '-';
    if (negative) c++;
    if (*c < '0' || *c > '9') return 0;
    long number = 0;
    for (; *c >= '0' && *c <= '9'; c++) number = number * 10 + (*c - '0');
    if (negative) return 0;
    unsigned long values[8];
    for (int i = 0; i < 8; i++) {
        if (c[0] != ' ' || c[1] != '0' || c[2] != 'x') return 0;
        c += 3;
        unsigned long value = 0;
        int digits = 0;
        for (;; c++, digits++) {
            if (*c >= '0' && *c <= '9') value = value << 4 | (unsigned long)(*c - '0');
            else if (*c >= 'a' && *c <= 'f') value = value << 4 | (unsigned long)(*c - 'a' + 10);
            else break;
        }
        if (digits == 0) return 0;
        values[i] = value;
    }
    call->number = number;
    memcpy(call->arguments, values, sizeof(call->arguments));
    call->stack_pointer = values[6];
    call->resume_address = values[7];
    return 1;
}

void bbx_blocking_call_read(pid_t tid, bbx_blocking_call *call) {
    char path[64], text[256];
    bbx_task_path(path, sizeof(path), tid, "syscall");
    if (bbx_read_small_file(path, text, sizeof(text)) <= 0 || !parse_call(text, call)) call->number = -1;
}

// The kernel keeps the rest of the call in the thread's restart block when it is interrupted.
static int kept_in_restart_block(const bbx_blocking_call *call) {
    switch (call->number) {
#ifdef SYS_nanosleep
    case SYS_nanosleep: return 1;
#endif
#ifdef SYS_poll
    case SYS_poll: return 1;
#endif
    case SYS_clock_nanosleep: return !(call->arguments[1] & TIMER_ABSTIME);
    default: return 0;
    }
}

// Making the same call again does what the interrupted one would have done.
static int repeatable(const bbx_blocking_call *call) {
    switch (call->number) {
    case SYS_clock_nanosleep: return (call->arguments[1] & TIMER_ABSTIME) != 0;
#ifdef SYS_select
    case SYS_select: return 1;
#endif
    case SYS_pselect6: return 1;
    case SYS_ppoll: return 1;
#ifdef SYS_epoll_wait
    case SYS_epoll_wait: return (int)call->arguments[3] == -1;
#endif
    case SYS_epoll_pwait: return (int)call->arguments[3] == -1;
    default: return 0;
    }
}

// The interrupted context, for one architecture: its result register, whether it is `call` at its
// return address, and how to rewind it.
#if defined(__x86_64__)
static long *result_register(ucontext_t *context) { return (long *)&context->uc_mcontext.gregs[REG_RAX]; }

static int interrupted_at(const ucontext_t *context, const bbx_blocking_call *call) {
    const greg_t *r = context->uc_mcontext.gregs;
    const unsigned long arguments[6] = {
        (unsigned long)r[REG_RDI], (unsigned long)r[REG_RSI], (unsigned long)r[REG_RDX],
        (unsigned long)r[REG_R10], (unsigned long)r[REG_R8], (unsigned long)r[REG_R9]};
    return (unsigned long)r[REG_RIP] == call->resume_address && (unsigned long)r[REG_RSP] == call->stack_pointer &&
           memcmp(arguments, call->arguments, sizeof(arguments)) == 0;
}

static void rewind_to_call(ucontext_t *context, const bbx_blocking_call *call) {
    context->uc_mcontext.gregs[REG_RAX] = (greg_t)call->number;
    context->uc_mcontext.gregs[REG_RIP] -= 2;  // `syscall` is two bytes
}

// The call the interrupted code made, from the context alone: for when the sender's note is stale (the
// thread entered this call between the sender's read and its signal; after a capture's resume, the
// next capture's read finds the thread still in the handler). Only glibc's own shape of a call is
// trusted: `mov $number, %eax` right before `syscall`, with rcx holding the return address as
// `syscall` leaves it (the code read without faulting). The six arguments are still in their
// registers (`syscall` keeps them).
static int call_from_context(const ucontext_t *context, bbx_blocking_call *call) {
    const greg_t *r = context->uc_mcontext.gregs;
    unsigned long resume = (unsigned long)r[REG_RIP];
    unsigned char code[7];
    if ((unsigned long)r[REG_RCX] != resume || resume < sizeof(code) ||
        bbx_read_own_memory(code, (const void *)(resume - sizeof(code)), sizeof(code)) != (long)sizeof(code))
        return 0;
    if (code[0] != 0xb8 || code[5] != 0x0f || code[6] != 0x05) return 0;
    int32_t number;
    memcpy(&number, code + 1, sizeof(number));
    const unsigned long arguments[6] = {
        (unsigned long)r[REG_RDI], (unsigned long)r[REG_RSI], (unsigned long)r[REG_RDX],
        (unsigned long)r[REG_R10], (unsigned long)r[REG_R8], (unsigned long)r[REG_R9]};
    call->number = number;
    memcpy(call->arguments, arguments, sizeof(arguments));
    call->stack_pointer = (unsigned long)r[REG_RSP];
    call->resume_address = resume;
    return 1;
}
#elif defined(__aarch64__)
static long *result_register(ucontext_t *context) { return (long *)&context->uc_mcontext.regs[0]; }

// x0 holds the result now; the call's number stays in x8.
static int interrupted_at(const ucontext_t *context, const bbx_blocking_call *call) {
    const mcontext_t *m = &context->uc_mcontext;
    return m->pc == call->resume_address && m->sp == call->stack_pointer && m->regs[8] == (unsigned long)call->number &&
           memcmp(&m->regs[1], &call->arguments[1], 5 * sizeof(unsigned long)) == 0;
}

static void rewind_to_call(ucontext_t *context, const bbx_blocking_call *call) {
    context->uc_mcontext.regs[0] = call->arguments[0];
    context->uc_mcontext.pc -= 4;  // `svc #0`
}

// x0, the first argument, is the result now: without the sender's note the call cannot be made again.
static int call_from_context(const ucontext_t *context, bbx_blocking_call *call) {
    (void)context;
    (void)call;
    return 0;
}
#endif

void bbx_blocking_call_resume(const bbx_blocking_call *call, void *raw_context, const sigset_t *capture_signals) {
#if defined(__x86_64__) || defined(__aarch64__)
    ucontext_t *context = raw_context;
    if (*result_register(context) != -EINTR) return;
    bbx_blocking_call from_context;
    if (call->number < 0 || !interrupted_at(context, call)) {
        if (!call_from_context(context, &from_context)) return;
        call = &from_context;
    }
    if (repeatable(call)) {
        rewind_to_call(context, call);
    } else if (kept_in_restart_block(call)) {
        sigset_t during_call, handler_mask;
        memcpy(&during_call, &context->uc_sigmask, sizeof(during_call));
        sigorset(&during_call, &during_call, capture_signals);
        sigprocmask(SIG_SETMASK, &during_call, &handler_mask);
        long result = bbx_syscall0(SYS_restart_syscall);
        long outcome = result == -1 ? -(long)errno : result;
        sigprocmask(SIG_SETMASK, &handler_mask, NULL);
        *result_register(context) = outcome;
    }
#else
    (void)call;
    (void)raw_context;
    (void)capture_signals;
#endif
}
