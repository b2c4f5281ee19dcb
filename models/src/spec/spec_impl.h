/*
 * The model spec parser's shared helpers (private to models/src/spec): its error messages
 * ("<source>: <JSON path>: <what was expected>") and field readers (model_spec_fields.c), used
 * by model_spec.c and the layer parsers beside it.
 */
#ifndef HETCL_SPEC_IMPL_H
#define HETCL_SPEC_IMPL_H

#include <hetcl/model_spec.h>

#include <hetcl_internal/base.h>

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define N_OF(a) ((int) (sizeof(a) / sizeof((a)[0])))

struct parser {
    hetcl_context *ctx;
    const char *source; /* file path or name, the first word of every message */
};

/* "<source>: <where>: <message>", or "<source>: <message>" when where is NULL or "";
 * HETCL_ERR_FORMAT. */
hetcl_status hetcl__spec_bad(const struct parser *p, const char *where, const char *fmt, ...)
        HETCL_PRINTF(3, 4);
/* A JSON value as an error message shows it (strings quoted and cut, containers by kind). */
void hetcl__spec_describe(const cJSON *x, char *buf, size_t cap);
/* "prefix.key" ("key" when prefix is empty); _input_key quotes a key from the input. */
void hetcl__spec_join_path(char *dst, size_t cap, const char *prefix, const char *key);
void hetcl__spec_join_input_key(char *dst, size_t cap, const char *prefix, const char *key);
/* "[c, h, w]". */
void hetcl__spec_format_shape(const struct hetcl_model_shape *s, char *buf, size_t cap);
/* Unknown and repeated members of obj are errors ("inputs" is every layer's). */
hetcl_status hetcl__spec_check_fields(const struct parser *p, const cJSON *obj, const char *prefix,
                                      const char *const *allowed, int n_allowed);
/* An integer in [min, HETCL_MODEL_SPEC_MAX_DIM]. */
hetcl_status hetcl__spec_to_int(const struct parser *p, const cJSON *x, const char *where,
                                int64_t min, int64_t *out);
/* obj.key as an integer >= min (absent: def, or an error when required). */
hetcl_status hetcl__spec_get_int(const struct parser *p, const cJSON *obj, const char *prefix,
                                 const char *key, bool required, int64_t def, int64_t min,
                                 int64_t *out);
/* obj.key as one integer or [height, width], each >= min (absent: def). */
hetcl_status hetcl__spec_get_pair(const struct parser *p, const cJSON *obj, const char *prefix,
                                  const char *key, bool required, const int64_t def[2], int64_t min,
                                  int64_t out[2]);
/* obj.key as the index of a string of names[0 .. n) (noun: what kind of name). */
hetcl_status hetcl__spec_get_enum(const struct parser *p, const cJSON *obj, const char *prefix,
                                  const char *key, const char *noun, const char *const *names,
                                  int n, bool required, int def, int *out);
hetcl_status hetcl__spec_get_bool(const struct parser *p, const cJSON *obj, const char *prefix,
                                  const char *key, bool def, bool *out);

/* A maxpool2d or avgpool2d layer's fields (size, stride, padding, padding_end, ceil_mode,
 * count_include_pad) into l, whose type is set. */
hetcl_status hetcl__spec_parse_pool(const struct parser *p, const cJSON *x, const char *prefix,
                                    struct hetcl_model_layer *l);

/* A kernel layer's fields (kernel, bandwidth, units) into l (model_spec_kernel.c). */
hetcl_status hetcl__spec_parse_kernel(const struct parser *p, const cJSON *x, const char *prefix,
                                      struct hetcl_model_layer *l);
/* A slide layer's units and hashing into l; its activation, bias and init are left to the
 * caller (model_spec_slide.c). */
hetcl_status hetcl__spec_parse_slide(const struct parser *p, const cJSON *x, const char *prefix,
                                     struct hetcl_model_layer *l);

#endif /* HETCL_SPEC_IMPL_H */
