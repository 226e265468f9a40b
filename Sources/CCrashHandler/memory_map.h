// The process's memory map around an address, from /proc/self/maps, for the crash report.
#ifndef BLACKBOX_MEMORY_MAP_H
#define BLACKBOX_MEMORY_MAP_H

#include <stdint.h>

#include "raw_writer.h"

/// For each of `count` addresses, writes the mapping that holds it (`map <role> <maps line>`) and the
/// mappings on either side (`map <role>-below …`, `map <role>-above …`); an address in no mapping gets
/// only its two neighbours. One pass over /proc/self/maps with open, read and close: async-signal-safe.
void bbx_memory_map_write(bbx_writer *w, const uint64_t *addresses, const char *const *roles, int count);

#endif
