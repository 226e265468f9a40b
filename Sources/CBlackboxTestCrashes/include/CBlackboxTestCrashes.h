// Crashes only C can cause, for the crash-capture tests (never shipped).
#ifndef BLACKBOX_TEST_CRASHES_H
#define BLACKBOX_TEST_CRASHES_H

void bbx_test_null_write(void);
int bbx_test_divide(int numerator, int denominator);
/// Names the calling thread (pthread_setname_np, which Swift's Glibc module does not export).
void bbx_test_name_thread(const char *name);
/// Never returns: stops inside a dl_iterate_phdr callback, holding the loader lock.
void bbx_test_hold_loader_lock(void);
/// True once a thread is inside bbx_test_hold_loader_lock's callback.
int bbx_test_loader_lock_held(void);

/// Installs a seccomp filter that refuses process_vm_readv with EPERM (as Docker's default profile
/// does without CAP_SYS_PTRACE), for this thread and the threads it starts. 0 or an errno value.
int bbx_test_refuse_process_vm_readv(void);

#endif
