// Values the app sets while it runs (user, request id, a feature flag) that the crash handler writes
// into every report: a fixed table in static memory, so the handler reads it without allocating or
// taking a lock (see docs/crash-capture.md, "Annotations").
#ifndef BLACKBOX_ANNOTATIONS_H
#define BLACKBOX_ANNOTATIONS_H

#include "raw_writer.h"

/// Writes an `annotation <key> <value>` line per set annotation. A value being changed at the very
/// moment of the crash is read again (a few times) or left out; never written torn.
void bbx_annotations_write(bbx_writer *w);

#endif
