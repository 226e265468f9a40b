// The annotation table. Writers (ordinary code) take a mutex among themselves and publish each entry
// under a sequence counter (odd while it changes); the handler copies an entry and keeps the copy only
// if the counter was even and unchanged around it. Handwritten: no library offers a lock-free table a
// signal handler may read.
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>

#include "CCrashHandler.h"
#include "annotations.h"

typedef struct annotation {
    atomic_uint sequence;
    char key[BBX_ANNOTATION_KEY_BYTES + 1];
    char value[BBX_ANNOTATION_VALUE_BYTES + 1];
} annotation;

static annotation table[BBX_ANNOTATION_LIMIT];
static pthread_mutex_t writers = PTHREAD_MUTEX_INITIALIZER;

// Ordinary code, under `writers`.
static void publish(annotation *entry, const char *key, const char *value) {
    atomic_fetch_add_explicit(&entry->sequence, 1, memory_order_acq_rel);
    atomic_thread_fence(memory_order_release);
    if (key != entry->key) {
        memset(entry->key, 0, sizeof(entry->key));
        if (key != NULL) strncpy(entry->key, key, BBX_ANNOTATION_KEY_BYTES);
    }
    memset(entry->value, 0, sizeof(entry->value));
    if (value != NULL) strncpy(entry->value, value, BBX_ANNOTATION_VALUE_BYTES);
    atomic_thread_fence(memory_order_release);
    atomic_fetch_add_explicit(&entry->sequence, 1, memory_order_acq_rel);
}

int bbx_crash_set_annotation(const char *key, const char *value) {
    if (key == NULL || key[0] == 0 || strlen(key) > BBX_ANNOTATION_KEY_BYTES) return EINVAL;
    if (value != NULL && strlen(value) > BBX_ANNOTATION_VALUE_BYTES) return EINVAL;
    pthread_mutex_lock(&writers);
    annotation *existing = NULL, *free_entry = NULL;
    for (int i = 0; i < BBX_ANNOTATION_LIMIT; i++) {
        if (table[i].key[0] == 0) {
            if (free_entry == NULL) free_entry = &table[i];
        } else if (strcmp(table[i].key, key) == 0) {
            existing = &table[i];
        }
    }
    int result = 0;
    if (existing != NULL) {
        // Removing clears the key too: the entry is free again.
        publish(existing, value == NULL ? NULL : existing->key, value);
    } else if (value == NULL) {
        result = 0;
    } else if (free_entry != NULL) {
        publish(free_entry, key, value);
    } else {
        result = ENOSPC;
    }
    pthread_mutex_unlock(&writers);
    return result;
}

void bbx_annotations_write(bbx_writer *w) {
    char key[BBX_ANNOTATION_KEY_BYTES + 1];
    char value[BBX_ANNOTATION_VALUE_BYTES + 1];
    for (int i = 0; i < BBX_ANNOTATION_LIMIT; i++) {
        annotation *entry = &table[i];
        for (int attempt = 0; attempt < 4; attempt++) {
            unsigned before = atomic_load_explicit(&entry->sequence, memory_order_acquire);
            if (before & 1) continue;  // being changed right now
            memcpy(key, entry->key, sizeof(key));
            memcpy(value, entry->value, sizeof(value));
            atomic_thread_fence(memory_order_acquire);
            if (atomic_load_explicit(&entry->sequence, memory_order_relaxed) != before) continue;
            key[BBX_ANNOTATION_KEY_BYTES] = 0;
            value[BBX_ANNOTATION_VALUE_BYTES] = 0;
            if (key[0] != 0) {
                bbx_write_str(w, "annotation ");
                bbx_write_str(w, key);
                bbx_write_str(w, " ");
                bbx_write_str(w, value);
                bbx_write_str(w, "\n");
            }
            break;
        }
    }
    bbx_write_flush(w);
}
