/*
 * The JSON Schema validator's walk and keywords (schema_impl.h): type, enum, const, the numeric,
 * string, array and object keywords, $ref, allOf, anyOf, oneOf and not.
 */
#include "schema_impl.h"

#include <math.h>
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- keyword helpers --------------------------------------------------------------------- */

static bool is_integral(double d)
{
    return isfinite(d) && floor(d) == d;
}

static const char *json_type_name(const cJSON *x)
{
    if (cJSON_IsNull(x))
        return "null";
    if (cJSON_IsBool(x))
        return "boolean";
    if (cJSON_IsNumber(x))
        return "number";
    if (cJSON_IsString(x))
        return "string";
    if (cJSON_IsArray(x))
        return "array";
    if (cJSON_IsObject(x))
        return "object";
    return "raw";
}

/* 1 if x is of the named type, 0 if not, -1 if the name is not a JSON Schema type. */
static int type_matches(const cJSON *x, const char *name)
{
    static const char *const names[] = {"null",   "boolean", "object", "array",
                                        "number", "string",  "integer"};
    bool known = false;
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        known = known || strcmp(name, names[i]) == 0;
    if (!known)
        return -1;
    if (strcmp(name, "integer") == 0)
        return cJSON_IsNumber(x) && is_integral(x->valuedouble);
    return strcmp(name, json_type_name(x)) == 0;
}

/* Reads an optional numeric keyword; a present non-number is a schema error. */
static hetcl_status get_number(struct vctx *v, const cJSON *s, const char *kw, bool *has,
                               double *out)
{
    const cJSON *k = cJSON_GetObjectItemCaseSensitive(s, kw);
    *has = k != NULL;
    if (!k)
        return HETCL_OK;
    if (!cJSON_IsNumber(k))
        return hetcl__schema_error(v, "\"%s\" must be a number", kw);
    *out = k->valuedouble;
    return HETCL_OK;
}

/* Reads an optional count keyword (minItems, maxLength...): a non-negative integer. */
static hetcl_status get_count(struct vctx *v, const cJSON *s, const char *kw, bool *has,
                              double *out)
{
    hetcl_status st = get_number(v, s, kw, has, out);
    if (st == HETCL_OK && *has && (!is_integral(*out) || *out < 0))
        return hetcl__schema_error(v, "\"%s\" must be a non-negative integer", kw);
    return st;
}

/* Appends " >= 0 and < 10" for the schema's numeric bounds (well-typed ones only: a wrong type
 * is reported where the bound is checked). */
static void append_bounds(const cJSON *s, char *buf, size_t cap)
{
    static const struct {
        const char *kw, *op;
    } bounds[] = {{"minimum", ">="},
                  {"exclusiveMinimum", ">"},
                  {"maximum", "<="},
                  {"exclusiveMaximum", "<"}};
    bool first = true;
    for (size_t i = 0; i < sizeof bounds / sizeof bounds[0]; i++) {
        const cJSON *k = cJSON_GetObjectItemCaseSensitive(s, bounds[i].kw);
        if (!cJSON_IsNumber(k))
            continue;
        char num[40];
        hetcl__schema_format_number(k->valuedouble, num, sizeof num);
        size_t n = strlen(buf);
        if (n < cap)
            snprintf(buf + n, cap - n, "%s %s %s", first ? "" : " and", bounds[i].op, num);
        first = false;
    }
}

/* "integer" when the schema's type admits integers but not all numbers, else "number". */
static const char *numeric_noun(const cJSON *s)
{
    const cJSON *t = cJSON_GetObjectItemCaseSensitive(s, "type");
    bool integer = false, number = false;
    if (cJSON_IsString(t)) {
        integer = strcmp(t->valuestring, "integer") == 0;
    } else if (cJSON_IsArray(t)) {
        const cJSON *e;
        cJSON_ArrayForEach(e, t)
        {
            if (cJSON_IsString(e)) {
                integer = integer || strcmp(e->valuestring, "integer") == 0;
                number = number || strcmp(e->valuestring, "number") == 0;
            }
        }
    }
    return integer && !number ? "integer" : "number";
}

/* Unicode code points in a UTF-8 string: every byte that is not a continuation byte. */
static size_t utf8_length(const char *s)
{
    size_t n = 0;
    for (; *s; s++)
        if (((unsigned char) *s & 0xC0) != 0x80)
            n++;
    return n;
}

/* ---- keywords ---------------------------------------------------------------------------- */

static hetcl_status check_type(struct vctx *v, const cJSON *s, const cJSON *t, const cJSON *x)
{
    char want[200] = "";
    bool numeric_only = true;
    const cJSON *one = t, *e = NULL;
    if (cJSON_IsArray(t)) {
        if (cJSON_GetArraySize(t) == 0)
            return hetcl__schema_error(v, "\"type\" must not be an empty array");
        one = t->child;
    } else if (!cJSON_IsString(t)) {
        return hetcl__schema_error(v, "\"type\" must be a type name or an array of them");
    }
    for (e = one; e; e = cJSON_IsArray(t) ? e->next : NULL) {
        if (!cJSON_IsString(e))
            return hetcl__schema_error(v, "\"type\" array items must be strings");
        int m = type_matches(x, e->valuestring);
        if (m < 0)
            return hetcl__schema_error(v, "unknown type \"%s\"", e->valuestring);
        if (m > 0)
            return HETCL_OK;
        numeric_only = numeric_only && (strcmp(e->valuestring, "number") == 0 ||
                                        strcmp(e->valuestring, "integer") == 0);
        size_t n = strlen(want);
        snprintf(want + n, sizeof want - n, "%s%s", n ? " or " : "", e->valuestring);
    }
    if (numeric_only)
        append_bounds(s, want, sizeof want);
    char got[SHOW_CAP];
    hetcl__schema_show_value(x, got, sizeof got);
    return hetcl__schema_violation(v, "expected %s, got %s", want, got);
}

static hetcl_status check_enum(struct vctx *v, const cJSON *k, const cJSON *x)
{
    if (!cJSON_IsArray(k))
        return hetcl__schema_error(v, "\"enum\" must be an array");
    const cJSON *e;
    cJSON_ArrayForEach(e, k)
    {
        if (cJSON_Compare(e, x, true))
            return HETCL_OK;
    }
    char want[160], got[SHOW_CAP];
    hetcl__schema_show_json(k, want, sizeof want);
    hetcl__schema_show_value(x, got, sizeof got);
    return hetcl__schema_violation(v, "expected one of %s, got %s", want, got);
}

static hetcl_status check_const(struct vctx *v, const cJSON *k, const cJSON *x)
{
    if (cJSON_Compare(k, x, true))
        return HETCL_OK;
    char want[160], got[SHOW_CAP];
    hetcl__schema_show_json(k, want, sizeof want);
    hetcl__schema_show_value(x, got, sizeof got);
    return hetcl__schema_violation(v, "expected %s, got %s", want, got);
}

static hetcl_status check_number(struct vctx *v, const cJSON *s, const cJSON *x)
{
    static const char *const kws[] = {"minimum", "exclusiveMinimum", "maximum", "exclusiveMaximum"};
    double d = x->valuedouble;
    bool bad = false;
    for (size_t i = 0; i < sizeof kws / sizeof kws[0]; i++) {
        bool has = false;
        double b = 0;
        hetcl_status st = get_number(v, s, kws[i], &has, &b);
        if (st != HETCL_OK)
            return st;
        if (has)
            bad = bad || (i == 0 && d < b) || (i == 1 && d <= b) || (i == 2 && d > b) ||
                  (i == 3 && d >= b);
    }
    if (!bad)
        return HETCL_OK;
    char want[200], got[SHOW_CAP];
    snprintf(want, sizeof want, "%s", numeric_noun(s));
    append_bounds(s, want, sizeof want);
    hetcl__schema_show_value(x, got, sizeof got);
    return hetcl__schema_violation(v, "expected %s, got %s", want, got);
}

static hetcl_status check_string(struct vctx *v, const cJSON *s, const cJSON *x)
{
    bool has_min = false, has_max = false;
    double min = 0, max = 0;
    hetcl_status st = get_count(v, s, "minLength", &has_min, &min);
    if (st == HETCL_OK)
        st = get_count(v, s, "maxLength", &has_max, &max);
    if (st != HETCL_OK)
        return st;
    char got[SHOW_CAP];
    if (has_min || has_max) {
        double len = (double) utf8_length(x->valuestring);
        if ((has_min && len < min) || (has_max && len > max)) {
            hetcl__schema_show_value(x, got, sizeof got);
            if (has_min && len < min)
                return hetcl__schema_violation(
                        v, "expected a string of at least %.0f characters, got %s (%.0f)", min, got,
                        len);
            return hetcl__schema_violation(
                    v, "expected a string of at most %.0f characters, got %s (%.0f)", max, got,
                    len);
        }
    }
    const cJSON *p = cJSON_GetObjectItemCaseSensitive(s, "pattern");
    if (!p)
        return HETCL_OK;
    if (!cJSON_IsString(p))
        return hetcl__schema_error(v, "\"pattern\" must be a string");
    const char *why = NULL;
    char *posix = hetcl__schema_ecma_to_posix(p->valuestring, &why);
    if (!posix) {
        if (!why)
            return hetcl__schema_no_memory(v);
        return hetcl__schema_error(v, "\"pattern\" /%s/ uses %s", p->valuestring, why);
    }
    regex_t re;
    int rc = regcomp(&re, posix, REG_EXTENDED | REG_NOSUB);
    free(posix);
    if (rc != 0) {
        char why_re[128];
        regerror(rc, &re, why_re, sizeof why_re);
        return hetcl__schema_error(v, "\"pattern\" /%s/ does not compile: %s", p->valuestring,
                                   why_re);
    }
    rc = regexec(&re, x->valuestring, 0, NULL, 0);
    regfree(&re);
    if (rc == 0)
        return HETCL_OK;
    if (rc != REG_NOMATCH)
        return hetcl__schema_error(v, "\"pattern\" /%s/ could not be matched (regexec error %d)",
                                   p->valuestring, rc);
    hetcl__schema_show_value(x, got, sizeof got);
    return hetcl__schema_violation(v, "expected a string matching /%s/, got %s", p->valuestring,
                                   got);
}

static hetcl_status check_array(struct vctx *v, const cJSON *s, const cJSON *x)
{
    bool has_min = false, has_max = false;
    double min = 0, max = 0;
    hetcl_status st = get_count(v, s, "minItems", &has_min, &min);
    if (st == HETCL_OK)
        st = get_count(v, s, "maxItems", &has_max, &max);
    if (st != HETCL_OK)
        return st;
    int n = cJSON_GetArraySize(x);
    if (has_min && n < min)
        return hetcl__schema_violation(v, "expected an array of at least %.0f items, got %d", min,
                                       n);
    if (has_max && n > max)
        return hetcl__schema_violation(v, "expected an array of at most %.0f items, got %d", max,
                                       n);
    const cJSON *items = cJSON_GetObjectItemCaseSensitive(s, "items");
    if (!items)
        return HETCL_OK;
    if (cJSON_IsArray(items))
        return hetcl__schema_error(v, "\"items\" as an array (tuple validation) is not supported");
    int i = 0;
    const cJSON *e;
    cJSON_ArrayForEach(e, x)
    {
        size_t saved = hetcl__schema_path_push_index(v, i++);
        st = hetcl__schema_walk(v, items, e);
        hetcl__schema_path_pop(v, saved);
        if (st != HETCL_OK)
            return st;
    }
    return HETCL_OK;
}

static hetcl_status check_object(struct vctx *v, const cJSON *s, const cJSON *x)
{
    const cJSON *req = cJSON_GetObjectItemCaseSensitive(s, "required");
    const cJSON *props = cJSON_GetObjectItemCaseSensitive(s, "properties");
    const cJSON *extra = cJSON_GetObjectItemCaseSensitive(s, "additionalProperties");
    if (req) {
        if (!cJSON_IsArray(req))
            return hetcl__schema_error(v, "\"required\" must be an array of strings");
        const cJSON *e;
        cJSON_ArrayForEach(e, req)
        {
            if (!cJSON_IsString(e))
                return hetcl__schema_error(v, "\"required\" must be an array of strings");
            if (!cJSON_GetObjectItemCaseSensitive(x, e->valuestring))
                return hetcl__schema_violation(v, "missing required property \"%s\"",
                                               e->valuestring);
        }
    }
    if (props && !cJSON_IsObject(props))
        return hetcl__schema_error(v, "\"properties\" must be an object");
    if (extra && !cJSON_IsBool(extra) && !cJSON_IsObject(extra))
        return hetcl__schema_error(v, "\"additionalProperties\" must be a boolean or a schema");
    const cJSON *m;
    cJSON_ArrayForEach(m, x)
    {
        const cJSON *sub = props ? cJSON_GetObjectItemCaseSensitive(props, m->string) : NULL;
        if (!sub && !extra)
            continue;
        size_t saved = hetcl__schema_path_push_key(v, m->string);
        hetcl_status st;
        if (!sub && cJSON_IsFalse(extra))
            st = hetcl__schema_violation(v, "unexpected property (not in \"properties\" and "
                                            "\"additionalProperties\" is false)");
        else
            st = hetcl__schema_walk(v, sub ? sub : extra, m);
        hetcl__schema_path_pop(v, saved);
        if (st != HETCL_OK)
            return st;
    }
    return HETCL_OK;
}

/* Resolves a same-document JSON pointer ("#", "#/$defs/name", "#/a/0/b") against the root. */
static hetcl_status resolve_ref(struct vctx *v, const char *ref, const cJSON **out)
{
    if (ref[0] != '#')
        return hetcl__schema_error(v,
                                   "$ref \"%s\": only same-document references (\"#/...\") are "
                                   "supported",
                                   ref);
    if (ref[1] != '\0' && ref[1] != '/')
        return hetcl__schema_error(v,
                                   "$ref \"%s\": anchors are not supported; use a JSON pointer "
                                   "such as \"#/$defs/name\"",
                                   ref);
    const cJSON *cur = v->root;
    const char *p = ref + 1;
    while (*p == '/') {
        char seg[256];
        size_t n = 0;
        for (p++; *p && *p != '/'; p++) {
            char c = *p;
            if (c == '~') {
                if (p[1] != '0' && p[1] != '1')
                    return hetcl__schema_error(v, "$ref \"%s\": \"~\" must be followed by 0 or 1",
                                               ref);
                c = *++p == '0' ? '~' : '/';
            }
            if (n + 1 >= sizeof seg)
                return hetcl__schema_error(v, "$ref \"%s\": a segment is too long", ref);
            seg[n++] = c;
        }
        seg[n] = '\0';
        if (cJSON_IsObject(cur)) {
            cur = cJSON_GetObjectItemCaseSensitive(cur, seg);
        } else if (cJSON_IsArray(cur) && n > 0 && strspn(seg, "0123456789") == n && n < 10) {
            cur = cJSON_GetArrayItem(cur, atoi(seg));
        } else {
            cur = NULL;
        }
        if (!cur)
            return hetcl__schema_error(v, "$ref \"%s\" does not resolve", ref);
    }
    *out = cur;
    return HETCL_OK;
}

/*
 * anyOf (want_one = false) and oneOf (want_one = true). Each branch reports into its own
 * scratch buffer; when none matches, the message quotes the branch whose violation lies deepest
 * in the document, the best guess at the alternative the author meant.
 */
static hetcl_status check_alternatives(struct vctx *v, const char *kw, const cJSON *list,
                                       bool want_one, const cJSON *x)
{
    if (!cJSON_IsArray(list) || cJSON_GetArraySize(list) == 0)
        return hetcl__schema_error(v, "\"%s\" must be a non-empty array of schemas", kw);
    char *saved_err = v->err;
    size_t saved_cap = v->err_cap;
    char *cur = malloc(SCRATCH_CAP), *best = malloc(SCRATCH_CAP);
    if (!cur || !best) {
        free(cur);
        free(best);
        return hetcl__schema_no_memory(v);
    }
    best[0] = '\0';
    size_t best_len = 0;
    int best_i = -1, matched = -1, i = 0;
    hetcl_status st = HETCL_OK;
    const cJSON *b;
    v->err = cur;
    v->err_cap = SCRATCH_CAP;
    cJSON_ArrayForEach(b, list)
    {
        cur[0] = '\0';
        hetcl_status bs = hetcl__schema_walk(v, b, x);
        if (bs == HETCL_OK) {
            if (!want_one || matched >= 0) {
                st = HETCL_OK;
                break;
            }
            matched = i;
        } else if (bs == HETCL_ERR_FORMAT) {
            if (best_i < 0 || v->fail_path_len > best_len) {
                memcpy(best, cur, SCRATCH_CAP);
                best_len = v->fail_path_len;
                best_i = i;
            }
        } else {
            st = bs; /* a broken schema or no memory: not a mismatch, pass it up */
            hetcl__schema_copy_str(saved_err, saved_cap, cur);
            break;
        }
        i++;
    }
    v->err = saved_err;
    v->err_cap = saved_cap;
    if (st == HETCL_OK && b != NULL && want_one) {
        st = hetcl__schema_violation(
                v,
                "expected exactly one \"oneOf\" alternative to match, but #%d and #%d "
                "both do",
                matched, i);
    } else if (st == HETCL_OK && b == NULL && matched < 0) {
        size_t depth = v->path_len;
        st = hetcl__schema_violation(
                v, "expected a match for one of the %d \"%s\" alternatives; closest is #%d: %s",
                cJSON_GetArraySize(list), kw, best_i, best);
        v->fail_path_len = best_len > depth ? best_len : depth;
    }
    free(cur);
    free(best);
    return st;
}

static hetcl_status check_not(struct vctx *v, const cJSON *k, const cJSON *x)
{
    char *saved_err = v->err;
    size_t saved_cap = v->err_cap;
    char *scratch = malloc(SCRATCH_CAP);
    if (!scratch)
        return hetcl__schema_no_memory(v);
    v->err = scratch;
    v->err_cap = SCRATCH_CAP;
    hetcl_status st = hetcl__schema_walk(v, k, x);
    v->err = saved_err;
    v->err_cap = saved_cap;
    if (st == HETCL_ERR_FORMAT) {
        st = HETCL_OK;
    } else if (st == HETCL_OK) {
        char got[SHOW_CAP];
        hetcl__schema_show_value(x, got, sizeof got);
        st = hetcl__schema_violation(
                v, "expected a value that does not match the \"not\" schema, got %s", got);
    } else {
        hetcl__schema_copy_str(saved_err, saved_cap, scratch);
    }
    free(scratch);
    return st;
}

static hetcl_status validate_keywords(struct vctx *v, const cJSON *s, const cJSON *x)
{
    if (cJSON_IsTrue(s))
        return HETCL_OK;
    if (cJSON_IsFalse(s)) {
        char got[SHOW_CAP];
        hetcl__schema_show_value(x, got, sizeof got);
        return hetcl__schema_violation(v, "expected nothing here (the schema is false), got %s",
                                       got);
    }
    if (!cJSON_IsObject(s))
        return hetcl__schema_error(v, "a schema must be an object or a boolean, not %s",
                                   json_type_name(s));

    hetcl_status st = HETCL_OK;
    const cJSON *k;
    if ((k = cJSON_GetObjectItemCaseSensitive(s, "type")) && (st = check_type(v, s, k, x)))
        return st;
    if ((k = cJSON_GetObjectItemCaseSensitive(s, "enum")) && (st = check_enum(v, k, x)))
        return st;
    if ((k = cJSON_GetObjectItemCaseSensitive(s, "const")) && (st = check_const(v, k, x)))
        return st;
    if (cJSON_IsNumber(x) && (st = check_number(v, s, x)))
        return st;
    if (cJSON_IsString(x) && (st = check_string(v, s, x)))
        return st;
    if (cJSON_IsArray(x) && (st = check_array(v, s, x)))
        return st;
    if (cJSON_IsObject(x) && (st = check_object(v, s, x)))
        return st;
    if ((k = cJSON_GetObjectItemCaseSensitive(s, "$ref"))) {
        const cJSON *target = NULL;
        if (!cJSON_IsString(k))
            return hetcl__schema_error(v, "\"$ref\" must be a string");
        if ((st = resolve_ref(v, k->valuestring, &target)) ||
            (st = hetcl__schema_walk(v, target, x)))
            return st;
    }
    if ((k = cJSON_GetObjectItemCaseSensitive(s, "allOf"))) {
        if (!cJSON_IsArray(k))
            return hetcl__schema_error(v, "\"allOf\" must be an array of schemas");
        const cJSON *b;
        cJSON_ArrayForEach(b, k)
        {
            if ((st = hetcl__schema_walk(v, b, x)))
                return st;
        }
    }
    if ((k = cJSON_GetObjectItemCaseSensitive(s, "anyOf")) &&
        (st = check_alternatives(v, "anyOf", k, false, x)))
        return st;
    if ((k = cJSON_GetObjectItemCaseSensitive(s, "oneOf")) &&
        (st = check_alternatives(v, "oneOf", k, true, x)))
        return st;
    if ((k = cJSON_GetObjectItemCaseSensitive(s, "not")) && (st = check_not(v, k, x)))
        return st;
    return HETCL_OK;
}

/* Every subschema goes through here, so this one counter bounds the C stack. */
hetcl_status hetcl__schema_walk(struct vctx *v, const cJSON *s, const cJSON *x)
{
    if (v->depth >= HETCL_SCHEMA_MAX_DEPTH)
        return hetcl__schema_error(v, "subschemas nested deeper than %d levels (a $ref cycle?)",
                                   HETCL_SCHEMA_MAX_DEPTH);
    v->depth++;
    hetcl_status st = validate_keywords(v, s, x);
    v->depth--;
    return st;
}
