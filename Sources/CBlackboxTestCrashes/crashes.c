#define _GNU_SOURCE
#include <link.h>
#include <pthread.h>
#include <stdatomic.h>
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
