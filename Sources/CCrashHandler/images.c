#define _GNU_SOURCE
#include "images.h"

#include "CCrashHandler.h"

#include <elf.h>
#include <link.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

// One line per image: `image <bias> <start> <end> <build-id hex or -> <path>`. The bias is what to
// subtract from a pc to get the address the ELF file (and llvm-symbolizer) uses.
typedef struct prepared_table {
    size_t length;
    size_t count;
    uintptr_t *biases;  // sorted as loaded; used to spot late images
    uintptr_t *code;    // [start, end) pairs of the executable segments
    size_t code_count;
    char text[];
} prepared_table;

static _Atomic(prepared_table *) current_table;

typedef struct builder {
    char *text;
    size_t length, capacity;
    uintptr_t *biases;
    size_t count, bias_capacity;
    uintptr_t *code;
    size_t code_count, code_capacity;
} builder;

static void append_code_range(builder *b, uintptr_t start, uintptr_t end) {
    if (b->code_count + 2 > b->code_capacity) {
        size_t capacity = b->code_capacity ? b->code_capacity * 2 : 128;
        uintptr_t *grown = realloc(b->code, capacity * sizeof(uintptr_t));
        if (grown == NULL) return;
        b->code = grown;
        b->code_capacity = capacity;
    }
    b->code[b->code_count++] = start;
    b->code[b->code_count++] = end;
}

static void append(builder *b, const char *bytes, size_t count) {
    if (b->length + count > b->capacity) {
        size_t capacity = (b->capacity ? b->capacity * 2 : 8192) + count;
        char *grown = realloc(b->text, capacity);
        if (grown == NULL) return;
        b->text = grown;
        b->capacity = capacity;
    }
    memcpy(b->text + b->length, bytes, count);
    b->length += count;
}

static void append_hex(builder *b, uint64_t value) {
    char digits[18];
    int i = sizeof(digits);
    do {
        digits[--i] = "0123456789abcdef"[value & 15];
        value >>= 4;
    } while (value);
    digits[--i] = 'x';
    digits[--i] = '0';
    append(b, digits + i, sizeof(digits) - (size_t)i);
}

static const unsigned char *find_build_id(struct dl_phdr_info *info, size_t *length);

// The loader's name for the image; the main executable, which has none there, by the kernel's path
// (in `buffer`); NULL when that cannot be read.
static const char *image_path(struct dl_phdr_info *info, char *buffer, size_t size) {
    if (info->dlpi_name != NULL && info->dlpi_name[0] != 0) return info->dlpi_name;
    ssize_t n = readlink("/proc/self/exe", buffer, size - 1);
    if (n <= 0) return NULL;
    buffer[n] = 0;
    return buffer;
}

// The image's NT_GNU_BUILD_ID as hex, or `-`.
static void append_build_id(builder *b, struct dl_phdr_info *info) {
    size_t length;
    const unsigned char *desc = find_build_id(info, &length);
    if (desc == NULL) {
        append(b, "-", 1);
        return;
    }
    for (size_t k = 0; k < length; k++) {
        char pair[2] = {"0123456789abcdef"[desc[k] >> 4], "0123456789abcdef"[desc[k] & 15]};
        append(b, pair, 2);
    }
}

static int visit_image(struct dl_phdr_info *info, size_t size, void *context) {
    (void)size;
    builder *b = context;
    uintptr_t low = UINTPTR_MAX, high = 0;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type != PT_LOAD) continue;
        uintptr_t start = info->dlpi_addr + ph->p_vaddr;
        if (start < low) low = start;
        if (start + ph->p_memsz > high) high = start + ph->p_memsz;
        if (ph->p_flags & PF_X) append_code_range(b, start, start + ph->p_memsz);
    }
    if (high == 0) return 0;

    char path[4096];
    const char *name = image_path(info, path, sizeof(path));
    if (name == NULL) name = "[main]";
    if (strncmp(name, "linux-vdso", 10) == 0) name = "[vdso]";

    append(b, "image ", 6);
    append_hex(b, info->dlpi_addr);
    append(b, " ", 1);
    append_hex(b, low);
    append(b, " ", 1);
    append_hex(b, high);
    append(b, " ", 1);
    append_build_id(b, info);
    append(b, " ", 1);
    append(b, name, strlen(name));
    append(b, "\n", 1);

    if (b->count == b->bias_capacity) {
        size_t capacity = b->bias_capacity ? b->bias_capacity * 2 : 64;
        uintptr_t *grown = realloc(b->biases, capacity * sizeof(uintptr_t));
        if (grown == NULL) return 0;
        b->biases = grown;
        b->bias_capacity = capacity;
    }
    b->biases[b->count++] = info->dlpi_addr;
    return 0;
}

typedef struct each_context {
    void (*visit)(const bbx_loaded_image *image, void *context);
    void *context;
} each_context;

// The build id's bytes in the image's PT_NOTE segments (mapped while it is loaded).
static const unsigned char *find_build_id(struct dl_phdr_info *info, size_t *length) {
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type != PT_NOTE) continue;
        const char *p = (const char *)(info->dlpi_addr + ph->p_vaddr);
        const char *end = p + ph->p_memsz;
        while (p + sizeof(ElfW(Nhdr)) <= end) {
            const ElfW(Nhdr) *note = (const ElfW(Nhdr) *)p;
            const char *name = p + sizeof(ElfW(Nhdr));
            const unsigned char *desc = (const unsigned char *)(name + ((note->n_namesz + 3) & ~3u));
            if ((const char *)desc + note->n_descsz > end) break;
            if (note->n_type == NT_GNU_BUILD_ID && note->n_namesz == 4 && memcmp(name, "GNU", 4) == 0) {
                *length = note->n_descsz;
                return desc;
            }
            p = (const char *)desc + ((note->n_descsz + 3) & ~3u);
        }
    }
    *length = 0;
    return NULL;
}

static int visit_loaded(struct dl_phdr_info *info, size_t size, void *context) {
    (void)size;
    each_context *each = context;
    uintptr_t low = UINTPTR_MAX, end_of_text = 0;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type != PT_LOAD) continue;
        uintptr_t start = info->dlpi_addr + ph->p_vaddr;
        if (start < low) low = start;
        if ((ph->p_flags & PF_X) && start + ph->p_memsz > end_of_text) end_of_text = start + ph->p_memsz;
    }
    if (low == UINTPTR_MAX) return 0;
    char path[4096];
    const char *name = image_path(info, path, sizeof(path));
    if (name == NULL || name[0] != '/') return 0;  // the vDSO: no file to read
    long page = sysconf(_SC_PAGESIZE);
    bbx_loaded_image image = {
        .base = low & ~(uintptr_t)(page > 0 ? page - 1 : 4095),
        .end_of_text = end_of_text,
        .path = name,
    };
    image.build_id = find_build_id(info, &image.build_id_length);
    each->visit(&image, each->context);
    return 0;
}

void bbx_images_each(void (*visit)(const bbx_loaded_image *image, void *context), void *context) {
    each_context each = {visit, context};
    dl_iterate_phdr(visit_loaded, &each);
}

void bbx_images_prepare(void) {
    builder b = {0};
    dl_iterate_phdr(visit_image, &b);
    prepared_table *table = malloc(sizeof(prepared_table) + b.length);
    if (table != NULL) {
        table->length = b.length;
        table->count = b.count;
        table->biases = b.biases;
        table->code = b.code;
        table->code_count = b.code_count / 2;
        if (b.length) memcpy(table->text, b.text, b.length);
        // The previous table is deliberately leaked: a handler on another thread may be reading it,
        // and tables are rebuilt rarely (install, after loading plugins).
        atomic_store_explicit(&current_table, table, memory_order_release);
    } else {
        free(b.biases);
        free(b.code);
    }
    free(b.text);
}

static int is_known(const prepared_table *table, uintptr_t bias) {
    for (size_t i = 0; i < table->count; i++)
        if (table->biases[i] == bias) return 1;
    return 0;
}

void bbx_images_write(bbx_writer *w) {
    const prepared_table *table = atomic_load_explicit(&current_table, memory_order_acquire);
    if (table == NULL) return;
    bbx_write_bytes(w, table->text, table->length);
    // Objects loaded after the table was prepared: base and path only (no build-id without parsing
    // memory that might be half-mapped). The r_debug list is what debuggers read; it needs no lock.
    int late = 0;
    for (const struct link_map *map = _r_debug.r_map; map != NULL && late < 256; map = map->l_next) {
        if (is_known(table, map->l_addr) || map->l_name == NULL || map->l_name[0] == 0) continue;
        bbx_write_str(w, "late-image ");
        bbx_write_hex(w, map->l_addr);
        bbx_write_str(w, " ");
        bbx_write_str(w, map->l_name);
        bbx_write_str(w, "\n");
        late++;
    }
}

int bbx_images_contain_code(uintptr_t address) {
    const prepared_table *table = atomic_load_explicit(&current_table, memory_order_acquire);
    if (table == NULL) return 0;
    for (size_t i = 0; i < table->code_count; i++)
        if (address >= table->code[2 * i] && address < table->code[2 * i + 1]) return 1;
    return 0;
}
