// Scopes are Swift task-local values (`ScopeBinding.current`), so they follow the task: child tasks
// and unstructured `Task {}`s inherit them, and a suspended request's scope never shows on another
// request's thread. The handler asks the runtime for the current task's value of that key with
// `swift_task_localValueGet`, which only reads: the current task (a thread-local), then the task's
// list of task-local items, or the thread's fallback list outside any task. No lock, no allocation.
// The value is a `ScopeBinding` object whose first stored property (right after Swift's 16-byte heap
// object header; checked at registration) is the address of an immutable view of its fields, made in
// ordinary code when the scope began and freed with the object.
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdatomic.h>
#include <string.h>

#include "CCrashHandler.h"
#include "scopes.h"

typedef void **(*local_value_get_fn)(const void *key) __attribute__((swiftcall));

static _Atomic(local_value_get_fn) local_value_get;
static _Atomic(const void *) scope_key;

int bbx_scope_register(const void *key) {
    local_value_get_fn function = (local_value_get_fn)dlsym(RTLD_DEFAULT, "swift_task_localValueGet");
    if (function == NULL || key == NULL) return -1;
    atomic_store_explicit(&local_value_get, function, memory_order_release);
    atomic_store_explicit(&scope_key, key, memory_order_release);
    return 0;
}

void bbx_scope_write_fields(bbx_writer *w, const char *line, const char *fields, uint32_t length) {
    uint32_t at = 0;
    while (at < length) {
        const char *name = fields + at;
        size_t name_length = strnlen(name, length - at);
        at += (uint32_t)name_length + 1;
        if (at >= length) break;
        const char *value = fields + at;
        size_t value_length = strnlen(value, length - at);
        at += (uint32_t)value_length + 1;
        bbx_write_str(w, line);
        bbx_write_str(w, " ");
        bbx_write_bytes(w, name, name_length);
        bbx_write_str(w, " ");
        bbx_write_bytes(w, value, value_length);
        bbx_write_str(w, "\n");
    }
}

int bbx_scopes_registered(void) {
    return atomic_load_explicit(&local_value_get, memory_order_acquire) != NULL &&
           atomic_load_explicit(&scope_key, memory_order_acquire) != NULL;
}

const void *bbx_scope_binding_current(void) {
    local_value_get_fn function = atomic_load_explicit(&local_value_get, memory_order_acquire);
    const void *key = atomic_load_explicit(&scope_key, memory_order_acquire);
    if (function == NULL || key == NULL) return NULL;
    void **value = function(key);
    return value != NULL ? *value : NULL;
}

const bbx_scope_view *bbx_scope_current(void) {
    const char *binding = bbx_scope_binding_current();
    if (binding == NULL) return NULL;
    const bbx_scope_view *view = *(const bbx_scope_view *const *)(binding + 16);
    if (view == NULL || ((uintptr_t)view & 7) != 0 || view->magic != BBX_SCOPE_VIEW_MAGIC ||
        view->length > BBX_SCOPE_FIELD_BYTES)
        return NULL;
    return view;
}

void bbx_scopes_write(bbx_writer *w) {
    // No scope was ever entered: nothing to look up.
    if (!bbx_scopes_registered()) return;
    bbx_write_str(w, "scope-looked-up\n");
    bbx_write_flush(w);
    const bbx_scope_view *view = bbx_scope_current();
    if (view == NULL) return;
    bbx_scope_write_fields(w, "scope", view->fields, view->length);
    bbx_write_flush(w);
}
