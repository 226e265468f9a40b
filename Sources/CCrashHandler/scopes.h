// The crashed thread's request scope (route, method, request id, trace id…), read at a crash through
// the Swift runtime's own task-local lookup (see docs/crash-capture.md, "Scopes").
#ifndef BLACKBOX_SCOPES_H
#define BLACKBOX_SCOPES_H

#include <stdint.h>

#include "CCrashHandler.h"
#include "raw_writer.h"

/// Whether a scope key was registered (a scope was ever entered).
int bbx_scopes_registered(void);

/// The scope the calling thread's current task (or, outside any task, the thread) has bound; NULL when
/// none. Only reads (see scopes.c): callable in a signal handler on the thread itself.
const bbx_scope_view *bbx_scope_current(void);

/// One `<line> <name> <value>` line per field of `fields` (`name\0value\0` pairs, `length` bytes).
void bbx_scope_write_fields(bbx_writer *w, const char *line, const char *fields, uint32_t length);

/// Once a scope key was registered: `scope-looked-up`, then one `scope <name> <value>` line per field
/// of the scope the crashed thread's task (or, outside any task, the thread) had bound.
void bbx_scopes_write(bbx_writer *w);

#endif
