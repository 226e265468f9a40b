// The scope of each task (request route, method, request id, trace id…) in a fixed table the crash
// handler reads without allocating or locking: it writes the scope published for the task running on
// the crashed thread, and no other (see docs/crash-capture.md, "Scopes").
#ifndef BLACKBOX_SCOPES_H
#define BLACKBOX_SCOPES_H

#include "raw_writer.h"

/// Writes `scope-task <key>` (0: the crashed thread ran no task and no thread-bound scope) and one
/// `scope <name> <value>` line per field of the innermost scope published for that key. A scope being
/// published at the very moment of the crash is read again (a few times) or left out; never torn.
void bbx_scopes_write(bbx_writer *w);

#endif
