// The scope table. Each slot is claimed by one writer (a compare-and-swap on `claimed`, so writers
// never wait for each other), filled under a sequence counter (odd while it changes), and only then
// given its key. The handler matches the key of the crashed thread's task, copies the slot and keeps
// the copy only if the counter was even and unchanged around it. Handwritten: no library offers a
// table a signal handler may read.
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdatomic.h>
#include <string.h>

#include "CCrashHandler.h"
#include "scopes.h"
#include "syscalls.h"

typedef struct scope_slot {
    atomic_int claimed;
    atomic_uintptr_t key;
    atomic_uint sequence;
    uint32_t depth;
    uint32_t length;
    char fields[BBX_SCOPE_FIELD_BYTES];
} scope_slot;

static scope_slot slots[BBX_SCOPE_LIMIT];

// The Swift runtime's current task (a thread-local read), resolved once in ordinary code: the handler
// never calls dlsym. Swift's calling convention, which clang spells `swiftcall`.
typedef void *(*current_task_fn)(void) __attribute__((swiftcall));
static _Atomic(current_task_fn) current_task_function;

static current_task_fn resolve_current_task(void) {
    current_task_fn function = atomic_load_explicit(&current_task_function, memory_order_acquire);
    if (function == NULL) {
        function = (current_task_fn)dlsym(RTLD_DEFAULT, "swift_task_getCurrent");
        atomic_store_explicit(&current_task_function, function, memory_order_release);
    }
    return function;
}

// Tasks are aligned pointers below 2^63; a thread id keyed this way never equals one.
static uintptr_t key_of(current_task_fn function) {
    void *task = function != NULL ? function() : NULL;
    if (task != NULL) return (uintptr_t)task;
    return ((uintptr_t)1 << 63) | (uintptr_t)bbx_syscall0(SYS_gettid);
}

uintptr_t bbx_scope_current_key(void) { return key_of(resolve_current_task()); }

int bbx_scope_publish(uintptr_t key, uint32_t depth, const char *fields, uint32_t length) {
    if (key == 0 || length > BBX_SCOPE_FIELD_BYTES) return -1;
    // Start where this key hashes to, so that concurrent requests rarely probe the same slots.
    unsigned start = (unsigned)((key >> 4) ^ (key >> 20)) % BBX_SCOPE_LIMIT;
    for (unsigned probe = 0; probe < BBX_SCOPE_LIMIT; probe++) {
        unsigned index = (start + probe) % BBX_SCOPE_LIMIT;
        scope_slot *slot = &slots[index];
        int expected = 0;
        if (atomic_load_explicit(&slot->claimed, memory_order_relaxed) != 0 ||
            !atomic_compare_exchange_strong_explicit(&slot->claimed, &expected, 1, memory_order_acquire,
                                                     memory_order_relaxed))
            continue;
        atomic_fetch_add_explicit(&slot->sequence, 1, memory_order_acq_rel);
        atomic_thread_fence(memory_order_release);
        slot->depth = depth;
        slot->length = length;
        memcpy(slot->fields, fields, length);
        atomic_thread_fence(memory_order_release);
        atomic_fetch_add_explicit(&slot->sequence, 1, memory_order_acq_rel);
        atomic_store_explicit(&slot->key, key, memory_order_release);
        return (int)index;
    }
    return -1;
}

void bbx_scope_withdraw(int index) {
    if (index < 0 || index >= BBX_SCOPE_LIMIT) return;
    scope_slot *slot = &slots[index];
    atomic_store_explicit(&slot->key, 0, memory_order_release);
    atomic_store_explicit(&slot->claimed, 0, memory_order_release);
}

// Fields are `name\0value\0` pairs, names without spaces and values without line breaks (the Swift
// side cleans them).
static void write_fields(bbx_writer *w, const char *fields, uint32_t length) {
    uint32_t at = 0;
    while (at < length) {
        const char *name = fields + at;
        size_t name_length = strnlen(name, length - at);
        at += (uint32_t)name_length + 1;
        if (at >= length) break;
        const char *value = fields + at;
        size_t value_length = strnlen(value, length - at);
        at += (uint32_t)value_length + 1;
        bbx_write_str(w, "scope ");
        bbx_write_bytes(w, name, name_length);
        bbx_write_str(w, " ");
        bbx_write_bytes(w, value, value_length);
        bbx_write_str(w, "\n");
    }
}

void bbx_scopes_write(bbx_writer *w) {
    current_task_fn function = atomic_load_explicit(&current_task_function, memory_order_acquire);
    // Nothing was ever published: no scope to find, and no runtime call to make.
    if (function == NULL) return;
    uintptr_t key = key_of(function);
    bbx_write_str(w, "scope-task ");
    bbx_write_hex(w, key);
    bbx_write_str(w, "\n");
    static char copy[BBX_SCOPE_FIELD_BYTES];
    uint32_t best_length = 0, best_depth = 0;
    int found = 0;
    static char best[BBX_SCOPE_FIELD_BYTES];
    for (int i = 0; i < BBX_SCOPE_LIMIT; i++) {
        scope_slot *slot = &slots[i];
        if (atomic_load_explicit(&slot->key, memory_order_acquire) != key) continue;
        for (int attempt = 0; attempt < 4; attempt++) {
            unsigned before = atomic_load_explicit(&slot->sequence, memory_order_acquire);
            if (before & 1) continue;
            uint32_t depth = slot->depth, length = slot->length;
            if (length > BBX_SCOPE_FIELD_BYTES) break;
            memcpy(copy, slot->fields, length);
            atomic_thread_fence(memory_order_acquire);
            if (atomic_load_explicit(&slot->sequence, memory_order_relaxed) != before) continue;
            // The innermost scope wins; a slot given to another key meanwhile is not this task's.
            if (atomic_load_explicit(&slot->key, memory_order_acquire) != key) break;
            if (!found || depth > best_depth) {
                memcpy(best, copy, length);
                best_length = length;
                best_depth = depth;
                found = 1;
            }
            break;
        }
    }
    if (found) write_fields(w, best, best_length);
    bbx_write_flush(w);
}
