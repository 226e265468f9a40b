// Stack walks for the handler: frame pointers (lock-free) and libunwind (DWARF CFI, takes locks).
#ifndef BLACKBOX_UNWINDER_H
#define BLACKBOX_UNWINDER_H

#include <ucontext.h>

#include "raw_writer.h"

/// Loads libunwind with dlopen (never linked: linking it would replace libgcc's `_Unwind_*` for the
/// whole process), turns its cache off and does one warm-up walk. Ordinary code only.
int bbx_unwinder_prepare(void);
int bbx_unwinder_available(void);

/// `fp <address>` lines from the frame-pointer chain, starting with the faulting pc.
void bbx_walk_frame_pointers(bbx_writer *w, const ucontext_t *context);

/// `unwind <address>` lines from libunwind, starting at the signal frame. Deep stacks keep the top
/// `BBX_UNWIND_TOP` and bottom `BBX_UNWIND_BOTTOM` frames with an `unwind-omitted <n>` line between.
void bbx_walk_libunwind(bbx_writer *w, ucontext_t *context);

#define BBX_UNWIND_TOP 100
#define BBX_UNWIND_BOTTOM 30

#endif
