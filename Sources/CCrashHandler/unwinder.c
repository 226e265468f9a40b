#define _GNU_SOURCE
#define UNW_LOCAL_ONLY
#include "unwinder.h"

#include <dlfcn.h>
#include <libunwind.h>
#include <stdint.h>

// libunwind's public names are macros over per-architecture symbols (`unw_step` is `_ULx86_64_step`);
// UNW_OBJ gives the real name, which we look up with dlsym.
#define BBX_STRINGIFY2(x) #x
#define BBX_STRINGIFY(x) BBX_STRINGIFY2(x)
#define BBX_UNW_SYMBOL(fn) BBX_STRINGIFY(UNW_OBJ(fn))

typedef int (*init_local2_fn)(unw_cursor_t *, unw_context_t *, int);
typedef int (*init_local_fn)(unw_cursor_t *, unw_context_t *);
typedef int (*step_fn)(unw_cursor_t *);
typedef int (*get_reg_fn)(unw_cursor_t *, unw_regnum_t, unw_word_t *);
typedef int (*set_caching_policy_fn)(unw_addr_space_t, unw_caching_policy_t);

static struct {
    init_local2_fn init_local2;
    step_fn step;
    get_reg_fn get_reg;
} unwind;

int bbx_unwinder_available(void) { return unwind.step != NULL; }

int bbx_unwinder_prepare(void) {
    if (unwind.step != NULL) return 1;
    void *library = dlopen("libunwind.so.8", RTLD_NOW | RTLD_LOCAL);
    if (library == NULL) return 0;
    init_local2_fn init_local2 = (init_local2_fn)dlsym(library, BBX_UNW_SYMBOL(init_local2));
    init_local_fn init_local = (init_local_fn)dlsym(library, BBX_UNW_SYMBOL(init_local));
    step_fn step = (step_fn)dlsym(library, BBX_UNW_SYMBOL(step));
    get_reg_fn get_reg = (get_reg_fn)dlsym(library, BBX_UNW_SYMBOL(get_reg));
    set_caching_policy_fn set_caching_policy =
        (set_caching_policy_fn)dlsym(library, BBX_UNW_SYMBOL(set_caching_policy));
    unw_addr_space_t *address_space = (unw_addr_space_t *)dlsym(library, BBX_UNW_SYMBOL(local_addr_space));
    if (!init_local2 || !init_local || !step || !get_reg) return 0;

    // A cache would be filled under a lock the crashed thread might hold; walk uncached.
    if (set_caching_policy && address_space) set_caching_policy(*address_space, UNW_CACHE_NONE);

    // Warm-up: resolves libunwind's own lazy bindings and one-time setup outside any signal handler.
    ucontext_t here;
    if (getcontext(&here) == 0) {
        unw_cursor_t cursor;
        if (init_local(&cursor, (unw_context_t *)&here) == 0) {
            unw_word_t pc;
            for (int i = 0; i < 4 && step(&cursor) > 0; i++) get_reg(&cursor, UNW_REG_IP, &pc);
        }
    }
    unwind.init_local2 = init_local2;
    unwind.get_reg = get_reg;
    unwind.step = step;
    return 1;
}

static void write_frame(bbx_writer *w, const char *tag, uint64_t pc) {
    bbx_write_str(w, tag);
    bbx_write_hex(w, pc);
    bbx_write_str(w, "\n");
}

void bbx_collect_frame_pointers(
    const ucontext_t *context, uint64_t *frames, uint64_t *frame_pointers, int capacity, volatile int *count) {
#if defined(__x86_64__)
    uintptr_t pc = (uintptr_t)context->uc_mcontext.gregs[REG_RIP];
    uintptr_t fp = (uintptr_t)context->uc_mcontext.gregs[REG_RBP];
    uintptr_t sp = (uintptr_t)context->uc_mcontext.gregs[REG_RSP];
#elif defined(__aarch64__)
    uintptr_t pc = (uintptr_t)context->uc_mcontext.pc;
    uintptr_t fp = (uintptr_t)context->uc_mcontext.regs[29];
    uintptr_t sp = (uintptr_t)context->uc_mcontext.sp;
#else
    uintptr_t pc = 0, fp = 0, sp = 0;
#endif
    *count = 0;
    if (capacity <= 0) return;
    frames[0] = pc;
    if (frame_pointers) frame_pointers[0] = fp;
    *count = 1;
    // Each frame record is {previous fp, return address}. Frames only move up the stack, and a stack
    // is far smaller than 1 GiB: anything else means the chain is broken (or was never there).
    uintptr_t floor = sp;
    while (*count < capacity && fp != 0 && (fp & 7) == 0 && fp >= floor && fp - sp < (1ul << 30)) {
        uintptr_t next = ((const uintptr_t *)fp)[0];
        uintptr_t ret = ((const uintptr_t *)fp)[1];
        if (ret == 0) break;
        frames[*count] = ret;
        if (frame_pointers) frame_pointers[*count] = next;
        *count = *count + 1;
        floor = fp + 16;
        fp = next;
    }
}

void bbx_write_frame_pointers(bbx_writer *w, const uint64_t *frames, int count) {
    for (int i = 0; i < count; i++) {
        write_frame(w, "fp ", frames[i]);
        if (i % 16 == 15) bbx_write_flush(w);
    }
    bbx_write_str(w, "fp-end ");
    bbx_write_dec(w, count);
    bbx_write_str(w, "\n");
    bbx_write_flush(w);
}

void bbx_collect_libunwind(ucontext_t *context, uint64_t *frames, int capacity, volatile int *count) {
    *count = 0;
    unw_cursor_t cursor;
    if (unwind.step == NULL || unwind.init_local2(&cursor, (unw_context_t *)context, UNW_INIT_SIGNAL_FRAME) != 0)
        return;
    while (*count < capacity) {
        unw_word_t pc = 0;
        unwind.get_reg(&cursor, UNW_REG_IP, &pc);
        frames[*count] = pc;
        *count = *count + 1;
        if (unwind.step(&cursor) <= 0) break;
    }
}

void bbx_walk_libunwind(bbx_writer *w, ucontext_t *context) {
    if (unwind.step == NULL) {
        bbx_write_str(w, "unwind-end 0 unavailable\n");
        bbx_write_flush(w);
        return;
    }
    unw_cursor_t cursor;
    // UNW_INIT_SIGNAL_FRAME: start exactly at the interrupted pc (plain init_local would treat it as
    // a return address and misname a fault on a function's first instruction).
    if (unwind.init_local2(&cursor, (unw_context_t *)context, UNW_INIT_SIGNAL_FRAME) != 0) {
        bbx_write_str(w, "unwind-end 0 init-failed\n");
        bbx_write_flush(w);
        return;
    }
    uint64_t bottom[BBX_UNWIND_BOTTOM];
    long total = 0;
    int status = 0;
    const long limit = 1000000;  // a corrupt stack could loop; a real one this deep is not useful
    for (;;) {
        unw_word_t pc = 0;
        unwind.get_reg(&cursor, UNW_REG_IP, &pc);
        if (total < BBX_UNWIND_TOP) {
            write_frame(w, "unwind ", pc);
            if (total % 16 == 15) bbx_write_flush(w);
        } else {
            bottom[(total - BBX_UNWIND_TOP) % BBX_UNWIND_BOTTOM] = pc;
        }
        total++;
        if (total >= limit) break;
        status = unwind.step(&cursor);
        if (status <= 0) break;
    }
    if (total > BBX_UNWIND_TOP) {
        long kept = total - BBX_UNWIND_TOP;
        long first = 0;
        if (kept > BBX_UNWIND_BOTTOM) {
            bbx_write_str(w, "unwind-omitted ");
            bbx_write_dec(w, kept - BBX_UNWIND_BOTTOM);
            bbx_write_str(w, "\n");
            first = kept - BBX_UNWIND_BOTTOM;
        }
        for (long i = first; i < kept; i++) write_frame(w, "unwind ", bottom[i % BBX_UNWIND_BOTTOM]);
    }
    bbx_write_str(w, "unwind-end ");
    bbx_write_dec(w, total);
    bbx_write_str(w, status < 0 ? " error\n" : total >= limit ? " limit\n" : " ok\n");
    bbx_write_flush(w);
}
