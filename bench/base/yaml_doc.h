/* The one YAML document of a config file or string, loaded with libyaml's
 * document API after a streaming pass that caps nesting depth (libyaml's
 * scanner is quadratic in it). Errors read "FILE:LINE:COL: sentence". */
#ifndef PB_YAML_DOC_H
#define PB_YAML_DOC_H

#include <stddef.h>

#include <yaml.h>

/* No pbench config nests more than about six levels. */
#define PB_YAML_MAX_DEPTH 64

/* Loads the only document of the file at path (text == NULL) or of text,
 * named name in messages, into doc (release it with yaml_document_delete
 * on PB_OK only). A syntax error, a second document or nesting deeper than
 * PB_YAML_MAX_DEPTH fails with PB_ERR_CONFIG and "NAME:LINE:COL: ..." at
 * the offending event; a file that cannot be opened with PB_ERR; memory
 * with PB_ERR_NOMEM. */
int pb_yaml_load(const char *path, const char *text, const char *name, yaml_document_t *doc,
                 char *msg, size_t msglen);

#endif
