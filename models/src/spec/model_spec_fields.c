/* Model specs' field readers and error helpers (spec_impl.h), and the pools' fields. */
#include "spec/spec_impl.h"

#include <hetcl_internal/base.h>

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

/* ---- error helpers ------------------------------------------------------------------------ */

hetcl_status hetcl__spec_bad(const struct parser *p, const char *where, const char *fmt, ...)
{
    char msg[640]; /* room for a quotation (HETCL_QUOTE_CAP) and the sentence around it */
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (where && *where)
        return hetcl__fail(p->ctx, HETCL_ERR_FORMAT, "%s: %s: %s", p->source, where, msg);
    return hetcl__fail(p->ctx, HETCL_ERR_FORMAT, "%s: %s", p->source, msg);
}

/* A JSON value as an error message shows it: strings quoted, cut and escaped (hetcl__quote),
 * containers by kind. */
void hetcl__spec_describe(const cJSON *x, char *buf, size_t cap)
{
    if (!x) {
        snprintf(buf, cap, "nothing");
    } else if (cJSON_IsString(x) && x->valuestring) {
        hetcl__quote(buf, cap, x->valuestring);
    } else if (cJSON_IsNumber(x)) {
        snprintf(buf, cap, "%.10g", x->valuedouble);
    } else if (cJSON_IsBool(x)) {
        snprintf(buf, cap, "%s", cJSON_IsTrue(x) ? "true" : "false");
    } else if (cJSON_IsNull(x)) {
        snprintf(buf, cap, "null");
    } else if (cJSON_IsArray(x)) {
        snprintf(buf, cap, "an array of %d", cJSON_GetArraySize(x));
    } else if (cJSON_IsObject(x)) {
        snprintf(buf, cap, "an object");
    } else {
        snprintf(buf, cap, "an invalid value");
    }
}

void hetcl__spec_join_path(char *dst, size_t cap, const char *prefix, const char *key)
{
    snprintf(dst, cap, "%s%s%s", prefix, *prefix ? "." : "", key);
}

/* A member name from the input joined to the path: as it is when it is a plain word, quoted
 * when it is long or holds anything else (hetcl__quote_name). */
void hetcl__spec_join_input_key(char *dst, size_t cap, const char *prefix, const char *key)
{
    char q[HETCL_QUOTE_CAP];
    hetcl__spec_join_path(dst, cap, prefix, hetcl__quote_name(q, sizeof q, key));
}

void hetcl__spec_format_shape(const struct hetcl_model_shape *s, char *buf, size_t cap)
{
    size_t n = (size_t) snprintf(buf, cap, "[");
    for (int i = 0; i < s->rank && n < cap; i++)
        n += (size_t) snprintf(buf + n, cap - n, "%s%lld", i ? ", " : "", (long long) s->dims[i]);
    if (n < cap)
        snprintf(buf + n, cap - n, "]");
}

/* ---- field readers ------------------------------------------------------------------------ */

/* Rejects members not in allowed[] (a misspelt field would otherwise be ignored) and repeated
 * members (cJSON would keep the first silently). Stops at the first offence, so the quadratic
 * duplicate scan covers at most n_allowed + 1 members. */
hetcl_status hetcl__spec_check_fields(const struct parser *p, const cJSON *obj, const char *prefix,
                                      const char *const *allowed, int n_allowed)
{
    char where[128 + HETCL_QUOTE_CAP];
    for (const cJSON *c = obj->child; c; c = c->next) {
        const char *key = c->string ? c->string : "";
        hetcl__spec_join_input_key(where, sizeof where, prefix, key);
        /* every layer may name its inputs (spec_graph.h) */
        bool known = strncmp(prefix, "layers[", 7) == 0 && strcmp(key, "inputs") == 0;
        for (int i = 0; i < n_allowed && !known; i++)
            known = strcmp(key, allowed[i]) == 0;
        if (!known) {
            char list[256];
            size_t n = 0;
            list[0] = '\0';
            for (int i = 0; i < n_allowed && n < sizeof list; i++)
                n += (size_t) snprintf(list + n, sizeof list - n, "%s%s", i ? ", " : "",
                                       allowed[i]);
            return hetcl__spec_bad(p, where, "unknown field (expected one of: %s)", list);
        }
        for (const cJSON *d = obj->child; d != c; d = d->next)
            if (d->string && strcmp(d->string, key) == 0)
                return hetcl__spec_bad(p, where, "duplicate field");
    }
    return HETCL_OK;
}

/* Checks that x is an integer in [min, HETCL_MODEL_SPEC_MAX_DIM]; where names it. */
hetcl_status hetcl__spec_to_int(const struct parser *p, const cJSON *x, const char *where,
                                int64_t min, int64_t *out)
{
    char got[HETCL_QUOTE_CAP];
    if (cJSON_IsNumber(x) && isfinite(x->valuedouble) && x->valuedouble == floor(x->valuedouble)) {
        double v = x->valuedouble;
        if (v >= (double) min && v <= (double) HETCL_MODEL_SPEC_MAX_DIM) {
            *out = (int64_t) v;
            return HETCL_OK;
        }
        if (v > (double) HETCL_MODEL_SPEC_MAX_DIM) {
            hetcl__spec_describe(x, got, sizeof got);
            return hetcl__spec_bad(p, where, "expected an integer <= %lld, got %s",
                                   (long long) HETCL_MODEL_SPEC_MAX_DIM, got);
        }
    }
    hetcl__spec_describe(x, got, sizeof got);
    return hetcl__spec_bad(p, where, "expected an integer >= %lld, got %s", (long long) min, got);
}

hetcl_status hetcl__spec_get_int(const struct parser *p, const cJSON *obj, const char *prefix,
                                 const char *key, bool required, int64_t def, int64_t min,
                                 int64_t *out)
{
    char where[128];
    hetcl__spec_join_path(where, sizeof where, prefix, key);
    const cJSON *x = cJSON_GetObjectItemCaseSensitive(obj, key);
    if (!x) {
        if (required)
            return hetcl__spec_bad(p, where, "missing (expected an integer >= %lld)",
                                   (long long) min);
        *out = def;
        return HETCL_OK;
    }
    return hetcl__spec_to_int(p, x, where, min, out);
}

/* An [h, w] pair written as one integer (both) or an array of two integers. */
hetcl_status hetcl__spec_get_pair(const struct parser *p, const cJSON *obj, const char *prefix,
                                  const char *key, bool required, const int64_t def[2], int64_t min,
                                  int64_t out[2])
{
    char where[128], item[160], got[HETCL_QUOTE_CAP];
    hetcl__spec_join_path(where, sizeof where, prefix, key);
    const cJSON *x = cJSON_GetObjectItemCaseSensitive(obj, key);
    if (!x) {
        if (required)
            return hetcl__spec_bad(p, where,
                                   "missing (expected an integer >= %lld or [height, width])",
                                   (long long) min);
        out[0] = def[0];
        out[1] = def[1];
        return HETCL_OK;
    }
    if (cJSON_IsNumber(x)) {
        hetcl_status s = hetcl__spec_to_int(p, x, where, min, &out[0]);
        out[1] = out[0];
        return s;
    }
    if (cJSON_IsArray(x) && cJSON_GetArraySize(x) == 2) {
        for (int i = 0; i < 2; i++) {
            snprintf(item, sizeof item, "%s[%d]", where, i);
            hetcl_status s = hetcl__spec_to_int(p, cJSON_GetArrayItem(x, i), item, min, &out[i]);
            if (s != HETCL_OK)
                return s;
        }
        return HETCL_OK;
    }
    hetcl__spec_describe(x, got, sizeof got);
    return hetcl__spec_bad(p, where,
                           "expected an integer >= %lld or an array of 2 ([height, width]), got %s",
                           (long long) min, got);
}

/* A string from names[0 .. n); noun says what kind of name it is ("activation"). */
hetcl_status hetcl__spec_get_enum(const struct parser *p, const cJSON *obj, const char *prefix,
                                  const char *key, const char *noun, const char *const *names,
                                  int n, bool required, int def, int *out)
{
    char where[128], list[256], got[HETCL_QUOTE_CAP];
    size_t len = 0;
    list[0] = '\0';
    for (int i = 0; i < n && len < sizeof list; i++)
        len += (size_t) snprintf(list + len, sizeof list - len, "%s%s", i ? ", " : "", names[i]);
    hetcl__spec_join_path(where, sizeof where, prefix, key);
    const cJSON *x = cJSON_GetObjectItemCaseSensitive(obj, key);
    if (!x) {
        if (required)
            return hetcl__spec_bad(p, where, "missing (expected one of: %s)", list);
        *out = def;
        return HETCL_OK;
    }
    hetcl__spec_describe(x, got, sizeof got);
    if (!cJSON_IsString(x) || !x->valuestring)
        return hetcl__spec_bad(p, where, "expected a string, one of: %s; got %s", list, got);
    for (int i = 0; i < n; i++)
        if (strcmp(x->valuestring, names[i]) == 0) {
            *out = i;
            return HETCL_OK;
        }
    return hetcl__spec_bad(p, where, "unknown %s %s (expected one of: %s)", noun, got, list);
}

hetcl_status hetcl__spec_get_bool(const struct parser *p, const cJSON *obj, const char *prefix,
                                  const char *key, bool def, bool *out)
{
    char where[128], got[HETCL_QUOTE_CAP];
    const cJSON *x = cJSON_GetObjectItemCaseSensitive(obj, key);
    if (!x) {
        *out = def;
        return HETCL_OK;
    }
    if (cJSON_IsBool(x)) {
        *out = cJSON_IsTrue(x);
        return HETCL_OK;
    }
    hetcl__spec_join_path(where, sizeof where, prefix, key);
    hetcl__spec_describe(x, got, sizeof got);
    return hetcl__spec_bad(p, where, "expected true or false, got %s", got);
}

/* ---- pools -------------------------------------------------------------------------------- */

static const char *const pool_fields[] = {
        "type",        "size",      "stride",   "padding",
        "padding_end", "ceil_mode", "dilation", "count_include_pad"};

hetcl_status hetcl__spec_parse_pool(const struct parser *p, const cJSON *x, const char *prefix,
                                    struct hetcl_model_layer *l)
{
    static const int64_t one[2] = {1, 1}, zero[2] = {0, 0};
    hetcl_status s;
    if ((s = hetcl__spec_check_fields(p, x, prefix, pool_fields, N_OF(pool_fields))) != HETCL_OK ||
        (s = hetcl__spec_get_pair(p, x, prefix, "size", true, one, 1, l->kernel)) != HETCL_OK ||
        /* The stride defaults to the size: non-overlapping windows, as in LeNet. */
        (s = hetcl__spec_get_pair(p, x, prefix, "stride", false, l->kernel, 1, l->stride)) !=
                HETCL_OK ||
        (s = hetcl__spec_get_pair(p, x, prefix, "padding", false, zero, 0, l->padding)) !=
                HETCL_OK ||
        (s = hetcl__spec_get_pair(p, x, prefix, "padding_end", false, l->padding, 0,
                                  l->padding_end)) != HETCL_OK ||
        (s = hetcl__spec_get_bool(p, x, prefix, "ceil_mode", false, &l->ceil_mode)) != HETCL_OK ||
        (s = hetcl__spec_get_pair(p, x, prefix, "dilation", false, one, 1, l->dilation)) !=
                HETCL_OK)
        return s;
    if (l->type == HETCL_MODEL_LAYER_AVGPOOL2D &&
        (s = hetcl__spec_get_bool(p, x, prefix, "count_include_pad", false,
                                  &l->count_include_pad)) != HETCL_OK)
        return s;
    if (l->type == HETCL_MODEL_LAYER_MAXPOOL2D &&
        cJSON_GetObjectItemCaseSensitive(x, "count_include_pad")) {
        char where[64];
        snprintf(where, sizeof where, "%s.count_include_pad", prefix);
        return hetcl__spec_bad(p, where, "applies only to avgpool2d");
    }
    /* a window's extent: its taps with the dilation's gaps between them */
    int64_t extent[2];
    for (int a = 0; a < 2; a++) {
        char where[64];
        snprintf(where, sizeof where, "%s.dilation", prefix);
        if (l->dilation[a] > INT32_MAX || l->kernel[a] > INT32_MAX)
            return hetcl__spec_bad(p, where, "expected sizes and dilations below 2^31");
        extent[a] = (l->kernel[a] - 1) * l->dilation[a] + 1;
    }
    for (int a = 0; a < 2; a++)
        if (l->padding[a] >= extent[a] || l->padding_end[a] >= extent[a]) {
            char where[64];
            snprintf(where, sizeof where, "%s.%s", prefix,
                     l->padding[a] >= extent[a] ? "padding" : "padding_end");
            return hetcl__spec_bad(p, where,
                                   "expected each pad < the window's extent [%lld, %lld] (its "
                                   "size, dilated)",
                                   (long long) extent[0], (long long) extent[1]);
        }
    return HETCL_OK;
}
