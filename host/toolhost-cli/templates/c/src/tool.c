// {{tool}}: count the lines and bytes of a text file in the workspace.
//
// A toolhost extension in C, built with clang and wasi-libc. `wit-bindgen c`
// generates build/extension.h from the `extension` world of wit/world.wit:
// the host's Operations it imports (`fs-read`, `cancellation`) as functions,
// and the functions of the `tool` interface it exports, which this file
// defines. The Operations refuse every path outside the directories granted.
//
// Memory: what the host passes in belongs to this code and is freed here;
// what it returns is allocated with malloc and freed by the bindings after
// the host has read it.

#define _GNU_SOURCE // asprintf
#include "extension.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

// The JSON Schema of the arguments: the host validates (and coerces) every
// call against it before `execute` sees the arguments.
#define PARAMETERS                                                                 \
    "{\"type\":\"object\",\"required\":[\"path\"],\"properties\":{\"path\":{"      \
    "\"type\":\"string\",\"description\":\"The file, relative to the workspace or " \
    "absolute\"}}}"

// Bytes asked of the host per read (it returns at most 4 MiB).
#define CHUNK (1024 * 1024)

void exports_toolhost_tool_tool_definitions(exports_toolhost_tool_tool_list_tool_definition_t *ret) {
    ret->len = 1;
    ret->ptr = calloc(1, sizeof(exports_toolhost_tool_tool_tool_definition_t));
    exports_toolhost_tool_tool_tool_definition_t *def = &ret->ptr[0];
    extension_string_dup(&def->name, "{{tool}}");
    extension_string_dup(&def->label, "Line count");
    extension_string_dup(&def->description, "Count the lines and bytes of a text file in the workspace.");
    extension_string_dup(&def->parameters, PARAMETERS);
    def->prompt_snippet.is_some = true;
    extension_string_dup(&def->prompt_snippet.val, "Count the lines of a file");
    def->execution_mode = TOOLHOST_TOOL_TYPES_EXECUTION_MODE_PARALLEL;
}

bool exports_toolhost_tool_tool_prepare_arguments(extension_string_t *name, extension_string_t *arguments,
                                                  extension_option_string_t *ret, extension_string_t *err) {
    (void)err;
    extension_string_free(name);
    extension_string_free(arguments);
    ret->is_some = false; // the arguments are used as the model wrote them
    return true;
}

// The string value of `"key"` in the JSON object `json` (the host has
// checked it against PARAMETERS), unescaped into a new string; NULL when it
// is absent. Escapes beyond \uXXXX pairs are kept as written.
static char *string_field(const char *json, size_t len, const char *key) {
    char quoted[64];
    snprintf(quoted, sizeof quoted, "\"%s\"", key);
    const char *end = json + len, *at = json;
    size_t klen = strlen(quoted);
    for (; at + klen <= end; at++) {
        if (memcmp(at, quoted, klen) != 0) continue;
        const char *p = at + klen;
        while (p < end && (*p == ' ' || *p == ':' || *p == '\t' || *p == '\n')) p++;
        if (p >= end || *p != '"') continue;
        char *out = malloc(end - p), *o = out;
        for (p++; p < end && *p != '"'; p++) {
            if (*p != '\\' || p + 1 >= end) {
                *o++ = *p;
                continue;
            }
            char c = *++p;
            switch (c) {
            case 'n': *o++ = '\n'; break;
            case 't': *o++ = '\t'; break;
            case 'r': *o++ = '\r'; break;
            case 'b': *o++ = '\b'; break;
            case 'f': *o++ = '\f'; break;
            case 'u': {
                unsigned cp = 0;
                if (p + 4 >= end || sscanf(p + 1, "%4x", &cp) != 1) break;
                p += 4;
                if (cp < 0x80) {
                    *o++ = (char)cp;
                } else if (cp < 0x800) {
                    *o++ = (char)(0xc0 | cp >> 6);
                    *o++ = (char)(0x80 | (cp & 0x3f));
                } else {
                    *o++ = (char)(0xe0 | cp >> 12);
                    *o++ = (char)(0x80 | (cp >> 6 & 0x3f));
                    *o++ = (char)(0x80 | (cp & 0x3f));
                }
                break;
            }
            default: *o++ = c; // \" \\ \/
            }
        }
        *o = '\0';
        return out;
    }
    return NULL;
}

// Count the file's lines and bytes into `text`; false, with the reason in
// `text`, when the host refused or failed the read.
static bool count(const char *path, const extension_string_t *cwd, char **text) {
    char *absolute; // the host's Operations take absolute paths
    if (path[0] == '/') {
        absolute = strdup(path);
    } else if (asprintf(&absolute, "%.*s/%s", (int)cwd->len, (const char *)cwd->ptr, path) < 0) {
        absolute = NULL;
    }
    unsigned long long bytes = 0, lines = 0;
    uint8_t last = '\n';
    bool ok = true;
    for (;;) {
        if (toolhost_tool_cancellation_is_cancelled()) {
            *text = strdup("Operation aborted");
            ok = false;
            break;
        }
        extension_string_t at;
        extension_string_set(&at, absolute);
        extension_list_u8_t chunk;
        toolhost_tool_fs_read_fs_error_t fail;
        if (!toolhost_tool_fs_read_read_file(&at, bytes, CHUNK, &chunk, &fail)) {
            if (fail.code == TOOLHOST_TOOL_FS_TYPES_ERROR_CODE_NOT_FOUND) {
                asprintf(text, "%s does not exist", path);
            } else {
                asprintf(text, "%.*s", (int)fail.message.len, (const char *)fail.message.ptr);
            }
            extension_string_free(&fail.message);
            ok = false;
            break;
        }
        size_t got = chunk.len;
        for (size_t i = 0; i < got; i++) lines += chunk.ptr[i] == '\n';
        if (got > 0) last = chunk.ptr[got - 1];
        bytes += got;
        extension_list_u8_free(&chunk);
        if (got == 0) break;
    }
    if (ok) {
        if (last != '\n') lines++; // the last line has no newline
        asprintf(text, "%s: %llu lines, %llu bytes", path, lines, bytes);
    }
    free(absolute);
    return ok;
}

// Returning false is the tool failing: `err` is the error result's text.
bool exports_toolhost_tool_tool_execute(extension_string_t *name, exports_toolhost_tool_tool_call_context_t *context,
                                        extension_string_t *arguments, exports_toolhost_tool_tool_tool_result_t *ret,
                                        extension_string_t *err) {
    char *path = string_field((const char *)arguments->ptr, arguments->len, "path");
    char *text = NULL;
    bool ok = path != NULL && count(path, &context->cwd, &text);
    if (path == NULL) text = strdup("path must be a string");
    free(path);
    extension_string_free(name);
    extension_string_free(arguments);
    exports_toolhost_tool_tool_call_context_free(context);
    if (!ok) {
        extension_string_dup(err, text);
        free(text);
        return false;
    }
    memset(ret, 0, sizeof(*ret));
    ret->content.len = 1;
    ret->content.ptr = calloc(1, sizeof(toolhost_tool_types_content_block_t));
    ret->content.ptr[0].tag = TOOLHOST_TOOL_TYPES_CONTENT_BLOCK_TEXT;
    // The buffer's ownership passes to the result.
    ret->content.ptr[0].val.text.ptr = (uint8_t *)text;
    ret->content.ptr[0].val.text.len = strlen(text);
    return true;
}
