// Stack walks for the handler: frame pointers (lock-free) and libunwind (DWARF CFI, takes locks).
#ifndef BLACKBOX_UNWINDER_H
#define BLACKBOX_UNWINDER_H

#include <stdint.h>
#include <ucontext.h>

#include "raw_writer.h"

/// Loads libunwind with dlopen (never linked: linking it would replace libgcc's `_Unwind_*` for the
/// whole process), turns its cache off and does one warm-up walk. Ordinary code only.
int bbx_unwinder_prepare(void);
int bbx_unwinder_available(void);

/// The frame-pointer chain from `context`: the interrupted pc, then return addresses, at most
/// `capacity`; with `frame_pointers`, each frame's own frame pointer too (the record its caller's
/// return address was read from is the next one's). Lock-free; `*count` grows with each frame
/// stored, so a walk a fault cuts short keeps what it found.
void bbx_collect_frame_pointers(
    const ucontext_t *context, uint64_t *frames, uint64_t *frame_pointers, int capacity, volatile int *count);

/// `fp <address>` lines and `fp-end <count>`.
void bbx_write_frame_pointers(bbx_writer *w, const uint64_t *frames, int count);

/// `unwind <address>` lines from libunwind, starting at the signal frame. Deep stacks keep the top
/// `BBX_UNWIND_TOP` and bottom `BBX_UNWIND_BOTTOM` frames with an `unwind-omitted <n>` line between.
void bbx_walk_libunwind(bbx_writer *w, ucontext_t *context);

/// libunwind's walk from `context` (a signal frame), at most `capacity` frames; nothing when libunwind
/// is missing. May block on the loader lock; `*count` grows as frames are stored.
void bbx_collect_libunwind(ucontext_t *context, uint64_t *frames, int capacity, volatile int *count);

#define BBX_UNWIND_TOP 100
#define BBX_UNWIND_BOTTOM 30

#endif
