// The binary image table: prepared in ordinary code, written verbatim by the handler.
#ifndef BLACKBOX_IMAGES_H
#define BLACKBOX_IMAGES_H

#include <stdint.h>

#include "raw_writer.h"

/// Rebuilds the table from dl_iterate_phdr (takes the loader lock: never call from the handler).
void bbx_images_prepare(void);

/// Writes the prepared `image` lines, then `late-image` lines for objects loaded since (from the
/// loader's r_debug list, which needs no lock). Async-signal-safe.
void bbx_images_write(bbx_writer *w);

/// Whether `address` is in an executable segment of a prepared image. Async-signal-safe.
int bbx_images_contain_code(uintptr_t address);

#endif
