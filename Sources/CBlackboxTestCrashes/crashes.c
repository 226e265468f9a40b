#include "CBlackboxTestCrashes.h"

__attribute__((noinline)) void bbx_test_null_write(void) { *(volatile int *)0 = 42; }

// x86 raises SIGFPE (FPE_INTDIV) on integer division by zero; `volatile` keeps the compiler from
// folding or removing it.
__attribute__((noinline)) int bbx_test_divide(int numerator, int denominator) {
    volatile int d = denominator;
    return numerator / d;
}
