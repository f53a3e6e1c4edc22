// `cksum`: the CRC-32 and size of files, an example toolhost extension in C.
//
// It exports `toolhost:tool/tool` from bindings that `wit-bindgen c`
// generates from the repository's `wit/` (tool_component.h, built by
// build.sh), and reads files through the host's `fs-read` Operations, so it
// sees only the directories the user granted it. The host validates the
// arguments against SCHEMA before `execute` runs: `paths` is a non-empty
// array of strings.
//
// Memory: what the host passes in belongs to this code and is freed here;
// what it returns is allocated with malloc and freed by the bindings after
// the host has read it.

#include "tool_component.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SCHEMA                                                                          \
    "{\"type\":\"object\",\"required\":[\"paths\"],\"properties\":{\"paths\":{\"type\":" \
    "\"array\",\"minItems\":1,\"maxItems\":100,\"items\":{\"type\":\"string\"},"        \
    "\"description\":\"Files to checksum. Relative paths are relative to the "          \
    "workspace.\"}}}"

#define DESCRIPTION                                                                     \
    "Compute the CRC-32 (IEEE 802.3, as zlib and gzip) and the size in bytes of each "  \
    "file, one line per file: checksum, size, path. Up to 100 files per call."

// Bytes asked of the host per read.
#define CHUNK (256 * 1024)

// ---------------------------------------------------------------------------
// CRC-32, table-driven
// ---------------------------------------------------------------------------

static uint32_t crc_table[256];

static void crc_init(void) {
    for (uint32_t n = 0; n < 256; n++) {
        uint32_t c = n;
        for (int k = 0; k < 8; k++) {
            c = (c & 1) ? 0xEDB88320u ^ (c >> 1) : c >> 1;
        }
        crc_table[n] = c;
    }
}

static uint32_t crc_update(uint32_t crc, const uint8_t *p, size_t len) {
    crc = ~crc;
    while (len--) {
        crc = crc_table[(crc ^ *p++) & 0xff] ^ (crc >> 8);
    }
    return ~crc;
}

// ---------------------------------------------------------------------------
// A growing text buffer
// ---------------------------------------------------------------------------

typedef struct {
    char *ptr;
    size_t len, cap;
} text_t;

static void text_append(text_t *t, const char *fmt, ...) {
    va_list args;
    va_start(args, fmt);
    int need = vsnprintf(NULL, 0, fmt, args);
    va_end(args);
    if (need < 0) {
        return;
    }
    if (t->len + (size_t)need + 1 > t->cap) {
        size_t cap = t->cap ? t->cap * 2 : 256;
        while (cap < t->len + (size_t)need + 1) {
            cap *= 2;
        }
        t->ptr = realloc(t->ptr, cap);
        if (!t->ptr) {
            abort();
        }
        t->cap = cap;
    }
    va_start(args, fmt);
    vsnprintf(t->ptr + t->len, (size_t)need + 1, fmt, args);
    va_end(args);
    t->len += (size_t)need;
}

// ---------------------------------------------------------------------------
// The arguments: {"paths": ["…", …]}, already validated by the host
// ---------------------------------------------------------------------------

typedef struct {
    const char *at, *end;
} cursor_t;

static void skip_space(cursor_t *c) {
    while (c->at < c->end && (*c->at == ' ' || *c->at == '\n' || *c->at == '\r' || *c->at == '\t')) {
        c->at++;
    }
}

// Append one UTF-8 encoded code point.
static void put_utf8(text_t *t, uint32_t cp) {
    if (cp < 0x80) {
        text_append(t, "%c", (int)cp);
    } else if (cp < 0x800) {
        text_append(t, "%c%c", (int)(0xC0 | (cp >> 6)), (int)(0x80 | (cp & 0x3F)));
    } else if (cp < 0x10000) {
        text_append(t, "%c%c%c", (int)(0xE0 | (cp >> 12)), (int)(0x80 | ((cp >> 6) & 0x3F)),
                    (int)(0x80 | (cp & 0x3F)));
    } else {
        text_append(t, "%c%c%c%c", (int)(0xF0 | (cp >> 18)), (int)(0x80 | ((cp >> 12) & 0x3F)),
                    (int)(0x80 | ((cp >> 6) & 0x3F)), (int)(0x80 | (cp & 0x3F)));
    }
}

static int hex4(const char *p, uint32_t *out) {
    uint32_t v = 0;
    for (int i = 0; i < 4; i++) {
        char ch = p[i];
        v <<= 4;
        if (ch >= '0' && ch <= '9') v |= (uint32_t)(ch - '0');
        else if (ch >= 'a' && ch <= 'f') v |= (uint32_t)(ch - 'a' + 10);
        else if (ch >= 'A' && ch <= 'F') v |= (uint32_t)(ch - 'A' + 10);
        else return 0;
    }
    *out = v;
    return 1;
}

// A JSON string at the cursor, decoded into `out` (NUL-terminated). 0 on a
// malformed string.
static int parse_string(cursor_t *c, text_t *out) {
    if (c->at >= c->end || *c->at != '"') {
        return 0;
    }
    c->at++;
    text_append(out, "%s", "");
    while (c->at < c->end && *c->at != '"') {
        char ch = *c->at++;
        if (ch != '\\') {
            text_append(out, "%c", ch);
            continue;
        }
        if (c->at >= c->end) {
            return 0;
        }
        char esc = *c->at++;
        switch (esc) {
            case '"': text_append(out, "\""); break;
            case '\\': text_append(out, "\\"); break;
            case '/': text_append(out, "/"); break;
            case 'b': text_append(out, "\b"); break;
            case 'f': text_append(out, "\f"); break;
            case 'n': text_append(out, "\n"); break;
            case 'r': text_append(out, "\r"); break;
            case 't': text_append(out, "\t"); break;
            case 'u': {
                uint32_t cp;
                if (c->end - c->at < 4 || !hex4(c->at, &cp)) return 0;
                c->at += 4;
                if (cp >= 0xD800 && cp < 0xDC00 && c->end - c->at >= 6 && c->at[0] == '\\' &&
                    c->at[1] == 'u') {
                    uint32_t low;
                    if (hex4(c->at + 2, &low) && low >= 0xDC00 && low < 0xE000) {
                        cp = 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00);
                        c->at += 6;
                    }
                }
                put_utf8(out, cp);
                break;
            }
            default: return 0;
        }
    }
    if (c->at >= c->end) {
        return 0;
    }
    c->at++;
    return 1;
}

// Skip any JSON value (the host validated the text; this only has to find
// where the value ends).
static int skip_value(cursor_t *c) {
    skip_space(c);
    if (c->at >= c->end) return 0;
    if (*c->at == '"') {
        text_t scratch = {0};
        int ok = parse_string(c, &scratch);
        free(scratch.ptr);
        return ok;
    }
    if (*c->at == '{' || *c->at == '[') {
        int depth = 0;
        while (c->at < c->end) {
            char ch = *c->at;
            if (ch == '"') {
                if (!skip_value(c)) return 0;
                continue;
            }
            if (ch == '{' || ch == '[') depth++;
            if (ch == '}' || ch == ']') {
                depth--;
                if (depth == 0) {
                    c->at++;
                    return 1;
                }
            }
            c->at++;
        }
        return 0;
    }
    while (c->at < c->end && *c->at != ',' && *c->at != '}' && *c->at != ']') c->at++;
    return 1;
}

// The strings of the top-level "paths" array, into `paths` (each
// NUL-terminated, owned by the caller); their count, or -1.
static int parse_paths(const char *json, size_t len, char ***paths) {
    cursor_t c = {json, json + len};
    int count = 0;
    *paths = NULL;
    skip_space(&c);
    if (c.at >= c.end || *c.at++ != '{') return -1;
    for (;;) {
        skip_space(&c);
        if (c.at < c.end && *c.at == '}') return count;
        text_t key = {0};
        if (!parse_string(&c, &key)) return -1;
        skip_space(&c);
        if (c.at >= c.end || *c.at++ != ':') { free(key.ptr); return -1; }
        skip_space(&c);
        int is_paths = key.ptr && strcmp(key.ptr, "paths") == 0;
        free(key.ptr);
        if (is_paths && c.at < c.end && *c.at == '[') {
            c.at++;
            for (;;) {
                skip_space(&c);
                if (c.at < c.end && *c.at == ']') { c.at++; break; }
                text_t item = {0};
                if (!parse_string(&c, &item)) return -1;
                *paths = realloc(*paths, sizeof(char *) * (size_t)(count + 1));
                (*paths)[count++] = item.ptr;
                skip_space(&c);
                if (c.at < c.end && *c.at == ',') c.at++;
            }
        } else if (!skip_value(&c)) {
            return -1;
        }
        skip_space(&c);
        if (c.at < c.end && *c.at == ',') c.at++;
    }
}

// ---------------------------------------------------------------------------
// The tool
// ---------------------------------------------------------------------------

void exports_toolhost_tool_tool_definitions(exports_toolhost_tool_tool_list_tool_definition_t *ret) {
    crc_init();
    ret->len = 1;
    ret->ptr = calloc(1, sizeof(exports_toolhost_tool_tool_tool_definition_t));
    exports_toolhost_tool_tool_tool_definition_t *def = &ret->ptr[0];
    tool_component_string_dup(&def->name, "cksum");
    tool_component_string_dup(&def->label, "Checksum");
    tool_component_string_dup(&def->description, DESCRIPTION);
    tool_component_string_dup(&def->parameters, SCHEMA);
    def->prompt_snippet.is_some = true;
    tool_component_string_dup(&def->prompt_snippet.val, "CRC-32 and size of files");
    def->prompt_guidelines.len = 0;
    def->prompt_guidelines.ptr = NULL;
    def->execution_mode = TOOLHOST_TOOL_TYPES_EXECUTION_MODE_PARALLEL;
}

bool exports_toolhost_tool_tool_prepare_arguments(tool_component_string_t *name,
                                                  tool_component_string_t *arguments,
                                                  tool_component_option_string_t *ret,
                                                  tool_component_string_t *err) {
    (void)err;
    tool_component_string_free(name);
    tool_component_string_free(arguments);
    ret->is_some = false; // the arguments as they are
    return true;
}

// `path` made absolute against `cwd`, as the host resolves it.
static char *absolute(const char *path, const tool_component_string_t *cwd) {
    text_t out = {0};
    if (path[0] == '/') {
        text_append(&out, "%s", path);
    } else {
        text_append(&out, "%.*s/%s", (int)cwd->len, (const char *)cwd->ptr, path);
    }
    return out.ptr;
}

// Checksum one file into `report`; false (with the reason in `report`'s
// error text) when the host refused or failed the read.
static bool checksum(const char *shown, const char *abs, text_t *report, text_t *error) {
    uint32_t crc = 0;
    uint64_t size = 0;
    for (;;) {
        tool_component_string_t path;
        tool_component_string_set(&path, abs);
        tool_component_list_u8_t chunk;
        toolhost_tool_fs_read_fs_error_t fail;
        if (!toolhost_tool_fs_read_read_file(&path, size, CHUNK, &chunk, &fail)) {
            // The host's message names the absolute path; a relative one
            // as the model wrote it comes first.
            if (strcmp(shown, abs) != 0) {
                text_append(error, "%s: ", shown);
            }
            text_append(error, "%.*s", (int)fail.message.len, (const char *)fail.message.ptr);
            tool_component_string_free(&fail.message);
            return false;
        }
        crc = crc_update(crc, chunk.ptr, chunk.len);
        size += chunk.len;
        size_t got = chunk.len;
        tool_component_list_u8_free(&chunk);
        if (got < CHUNK) {
            break;
        }
        if (toolhost_tool_cancellation_is_cancelled()) {
            text_append(error, "Operation aborted");
            return false;
        }
    }
    text_append(report, "%08x  %10llu  %s\n", crc, (unsigned long long)size, shown);
    return true;
}

bool exports_toolhost_tool_tool_execute(tool_component_string_t *name,
                                        exports_toolhost_tool_tool_call_context_t *context,
                                        tool_component_string_t *arguments,
                                        exports_toolhost_tool_tool_tool_result_t *ret,
                                        tool_component_string_t *err) {
    crc_init(); // a fresh instance per call: definitions() has not run in it
    char **paths = NULL;
    int count = parse_paths((const char *)arguments->ptr, arguments->len, &paths);
    text_t report = {0}, error = {0};
    bool ok = count > 0;
    if (!ok) {
        text_append(&error, "cksum: the arguments have no paths");
    }
    for (int i = 0; ok && i < count; i++) {
        char *abs = absolute(paths[i], &context->cwd);
        ok = checksum(paths[i], abs, &report, &error);
        free(abs);
    }
    for (int i = 0; i < count; i++) {
        free(paths[i]);
    }
    free(paths);
    tool_component_string_free(name);
    tool_component_string_free(arguments);
    exports_toolhost_tool_tool_call_context_free(context);

    if (!ok) {
        // The error text becomes the call's error result.
        tool_component_string_dup(err, error.ptr ? error.ptr : "cksum failed");
        free(error.ptr);
        free(report.ptr);
        return false;
    }
    free(error.ptr);
    if (report.len > 0 && report.ptr[report.len - 1] == '\n') {
        report.ptr[--report.len] = '\0';
    }
    memset(ret, 0, sizeof(*ret));
    ret->content.len = 1;
    ret->content.ptr = calloc(1, sizeof(toolhost_tool_types_content_block_t));
    ret->content.ptr[0].tag = TOOLHOST_TOOL_TYPES_CONTENT_BLOCK_TEXT;
    // The buffer's ownership passes to the result.
    ret->content.ptr[0].val.text.ptr = (uint8_t *)report.ptr;
    ret->content.ptr[0].val.text.len = report.len;
    return true;
}
