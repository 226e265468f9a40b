// The crashed thread's request scope (route, method, request id, trace id…), read at a crash through
// the Swift runtime's own task-local lookup (see docs/crash-capture.md, "Scopes").
#ifndef BLACKBOX_SCOPES_H
#define BLACKBOX_SCOPES_H

#include "raw_writer.h"

/// Once a scope key was registered: `scope-looked-up`, then one `scope <name> <value>` line per field
/// of the scope the crashed thread's task (or, outside any task, the thread) had bound.
void bbx_scopes_write(bbx_writer *w);

#endif
