/* The one YAML document of a config, with its nesting depth capped while
 * the events stream by, before libyaml builds a document of it. */
#include "bench/base/yaml_doc.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench/base/pb.h"

/* A config is a few KB; /dev/zero is not one. */
#define PB_YAML_MAX_BYTES (64 << 20)

static int parser_error(const yaml_parser_t *parser, const char *name, char *msg, size_t msglen)
{
    const char *problem = parser->problem ? parser->problem : "unknown problem";
    switch (parser->error) {
    case YAML_MEMORY_ERROR:
        snprintf(msg, msglen, "%s: out of memory while reading YAML", name);
        return PB_ERR_NOMEM;
    case YAML_READER_ERROR:
        snprintf(msg, msglen, "%s: cannot read YAML: %s at byte %zu", name, problem,
                 parser->problem_offset);
        return PB_ERR_CONFIG;
    default:
        snprintf(msg, msglen, "%s:%zu:%zu: YAML syntax error: %s", name,
                 parser->problem_mark.line + 1, parser->problem_mark.column + 1, problem);
        return PB_ERR_CONFIG;
    }
}

/* A parser over len bytes of text. */
static int open_parser(yaml_parser_t *parser, const char *text, size_t len, const char *name,
                       char *msg, size_t msglen)
{
    if (!yaml_parser_initialize(parser)) {
        snprintf(msg, msglen, "%s: out of memory", name);
        return PB_ERR_NOMEM;
    }
    yaml_parser_set_input_string(parser, (const unsigned char *)text, len);
    return PB_OK;
}

/* Streams the events, failing at the first collection that opens deeper
 * than PB_YAML_MAX_DEPTH (before libyaml's scanner, which is quadratic in
 * depth, gets far) and at the first syntax error. */
static int check_depth(const char *text, size_t len, const char *name, char *msg, size_t msglen)
{
    yaml_parser_t parser;
    int rc = open_parser(&parser, text, len, name, msg, msglen);
    if (rc != PB_OK)
        return rc;
    int depth = 0;
    for (bool done = false; !done && rc == PB_OK;) {
        yaml_event_t event;
        if (!yaml_parser_parse(&parser, &event)) {
            rc = parser_error(&parser, name, msg, msglen);
            break;
        }
        switch (event.type) {
        case YAML_SEQUENCE_START_EVENT:
        case YAML_MAPPING_START_EVENT:
            if (++depth > PB_YAML_MAX_DEPTH) {
                snprintf(msg, msglen, "%s:%zu:%zu: the YAML nests deeper than %d levels", name,
                         event.start_mark.line + 1, event.start_mark.column + 1, PB_YAML_MAX_DEPTH);
                rc = PB_ERR_CONFIG;
            }
            break;
        case YAML_SEQUENCE_END_EVENT:
        case YAML_MAPPING_END_EVENT: depth--; break;
        case YAML_STREAM_END_EVENT: done = true; break;
        default: break;
        }
        yaml_event_delete(&event);
    }
    yaml_parser_delete(&parser);
    return rc;
}

/* Loads the first document; a second one is an error. */
static int load_document(const char *text, size_t len, const char *name, yaml_document_t *doc,
                         char *msg, size_t msglen)
{
    yaml_parser_t parser;
    int rc = open_parser(&parser, text, len, name, msg, msglen);
    if (rc != PB_OK)
        return rc;
    yaml_document_t extra;
    if (!yaml_parser_load(&parser, doc)) {
        rc = parser_error(&parser, name, msg, msglen);
    } else if (!yaml_parser_load(&parser, &extra)) {
        rc = parser_error(&parser, name, msg, msglen);
        yaml_document_delete(doc);
    } else {
        if (yaml_document_get_root_node(&extra)) {
            snprintf(msg, msglen, "%s:%zu:%zu: the file holds more than one YAML document", name,
                     extra.start_mark.line + 1, extra.start_mark.column + 1);
            rc = PB_ERR_CONFIG;
            yaml_document_delete(doc);
        }
        yaml_document_delete(&extra);
    }
    yaml_parser_delete(&parser);
    return rc;
}

/* The whole file at path in a new buffer (free it), read once so that a
 * pipe works too; *len gets its size. */
static int read_file(const char *path, char **text, size_t *len, char *msg, size_t msglen)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        /* A path that names no file is the command line's mistake (exit 2);
         * a file that exists but cannot be read is an I/O error. */
        int err = errno;
        snprintf(msg, msglen, "cannot open '%s': %s", path, strerror(err));
        return err == ENOENT || err == ENOTDIR ? PB_ERR_CONFIG : PB_ERR;
    }
    size_t capacity = 0;
    int rc = PB_OK;
    *text = NULL;
    *len = 0;
    for (;;) {
        if (*len == capacity) {
            if (capacity >= PB_YAML_MAX_BYTES) {
                snprintf(msg, msglen, "%s is larger than %d MiB: not a pbench config", path,
                         PB_YAML_MAX_BYTES >> 20);
                rc = PB_ERR_CONFIG;
                break;
            }
            capacity = capacity ? 2 * capacity : 16384;
            char *grown = realloc(*text, capacity);
            if (!grown) {
                snprintf(msg, msglen, "%s: out of memory", path);
                rc = PB_ERR_NOMEM;
                break;
            }
            *text = grown;
        }
        size_t got = fread(*text + *len, 1, capacity - *len, f);
        *len += got;
        if (got == 0)
            break;
    }
    if (rc == PB_OK && ferror(f)) {
        snprintf(msg, msglen, "cannot read '%s': %s", path, strerror(errno));
        rc = PB_ERR;
    }
    fclose(f);
    if (rc != PB_OK) {
        free(*text);
        *text = NULL;
    }
    return rc;
}

int pb_yaml_load(const char *path, const char *text, const char *name, yaml_document_t *doc,
                 char *msg, size_t msglen)
{
    char *file_text = NULL;
    size_t len = text ? strlen(text) : 0;
    int rc = text ? PB_OK : read_file(path, &file_text, &len, msg, msglen);
    if (rc != PB_OK)
        return rc;
    const char *input = text ? text : file_text;
    rc = check_depth(input, len, name, msg, msglen);
    if (rc == PB_OK)
        rc = load_document(input, len, name, doc, msg, msglen);
    free(file_text);
    return rc;
}
