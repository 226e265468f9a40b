// Crashes only C can cause, for the crash-capture tests (never shipped).
#ifndef BLACKBOX_TEST_CRASHES_H
#define BLACKBOX_TEST_CRASHES_H

void bbx_test_null_write(void);
int bbx_test_divide(int numerator, int denominator);

#endif
