/*
 * JSON Schema validation for hetcl's reports: see hetcl/schema.h for the keywords and limits.
 *
 * One recursive walk over (schema, value). The context carries the document path as text
 * (pushed and popped around each member or element, so no allocation per node) and where the
 * error goes. anyOf/oneOf/not redirect errors into heap scratch buffers, because a failing
 * branch is not a failure of the whole and its message must not reach the caller unless every
 * branch fails.
 */
#include <hetcl/schema.h>

#include <errno.h>
#include <math.h>
#include <regex.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PATH_CAP    512  /* document path text; longer paths are cut, messages stay one line */
#define SCRATCH_CAP 1024 /* one anyOf/oneOf branch's message */
#define SHOW_CAP    64   /* a value shown in a message ("got ...") */

struct vctx {
    const cJSON *root; /* where "$ref"s resolve */
    char *err;         /* current message sink: the caller's, or a branch's scratch */
    size_t err_cap;
    size_t fail_path_len; /* path length at the last violation: ranks anyOf branches */
    int depth;
    size_t path_len;
    char path[PATH_CAP];
};

static hetcl_status validate(struct vctx *v, const cJSON *s, const cJSON *x);

/* ---- messages ---------------------------------------------------------------------------- */

static void vmessage(struct vctx *v, const char *prefix, const char *fmt, va_list ap)
        HETCL_PRINTF(3, 0);
static hetcl_status violation(struct vctx *v, const char *fmt, ...) HETCL_PRINTF(2, 3);
static hetcl_status schema_error(struct vctx *v, const char *fmt, ...) HETCL_PRINTF(2, 3);

static void vmessage(struct vctx *v, const char *prefix, const char *fmt, va_list ap)
{
    if (v->err_cap == 0)
        return;
    int k = snprintf(v->err, v->err_cap, "%s%s: ", prefix, v->path);
    if (k >= 0 && (size_t) k < v->err_cap)
        vsnprintf(v->err + k, v->err_cap - (size_t) k, fmt, ap);
}

/* The document breaks the schema at the current path. */
static hetcl_status violation(struct vctx *v, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vmessage(v, "", fmt, ap);
    va_end(ap);
    v->fail_path_len = v->path_len;
    return HETCL_ERR_FORMAT;
}

/* The schema cannot be applied; the path is where in the document that was found out. */
static hetcl_status schema_error(struct vctx *v, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vmessage(v, "schema error at ", fmt, ap);
    va_end(ap);
    return HETCL_ERR_INVALID_ARG;
}

static void copy_str(char *dst, size_t cap, const char *src)
{
    if (cap)
        snprintf(dst, cap, "%s", src);
}

static hetcl_status no_memory(struct vctx *v)
{
    copy_str(v->err, v->err_cap, "out of memory");
    return HETCL_ERR_NO_MEMORY;
}

/* Shortest "%g" that reads back as d, so that 0.1 prints as 0.1 and 3 as 3. */
static void format_number(double d, char *buf, size_t cap)
{
    snprintf(buf, cap, "%.15g", d);
    if (strtod(buf, NULL) != d)
        snprintf(buf, cap, "%.17g", d);
}

/* A value as a message shows it: scalars as JSON (strings cut with "..."), containers by kind,
 * since printing a whole object to show its first bytes helps nobody. */
static void show_value(const cJSON *x, char *buf, size_t cap)
{
    if (cJSON_IsObject(x)) {
        snprintf(buf, cap, "an object");
    } else if (cJSON_IsArray(x)) {
        int n = cJSON_GetArraySize(x);
        snprintf(buf, cap, "an array of %d item%s", n, n == 1 ? "" : "s");
    } else if (cJSON_IsNumber(x)) {
        format_number(x->valuedouble, buf, cap);
    } else {
        char *text = cJSON_PrintUnformatted(x);
        if (!text) {
            snprintf(buf, cap, "a %s", cJSON_IsString(x) ? "string" : "value");
            return;
        }
        size_t n = strlen(text);
        if (n < cap)
            memcpy(buf, text, n + 1);
        else if (cap > 4)
            snprintf(buf, cap, "%.*s...", (int) (cap - 4), text);
        else if (cap)
            buf[0] = '\0';
        cJSON_free(text);
    }
}

/* Schema values (enum lists, const) are shown as JSON, cut at cap. */
static void show_json(const cJSON *x, char *buf, size_t cap)
{
    char *text = cJSON_PrintUnformatted(x);
    if (!text) {
        copy_str(buf, cap, "(value)");
        return;
    }
    if (strlen(text) < cap)
        copy_str(buf, cap, text);
    else if (cap > 4)
        snprintf(buf, cap, "%.*s...", (int) (cap - 4), text);
    cJSON_free(text);
}

/* ---- the document path ------------------------------------------------------------------- */

static void path_append(struct vctx *v, const char *fmt, ...) HETCL_PRINTF(2, 3);

static void path_append(struct vctx *v, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int k = vsnprintf(v->path + v->path_len, PATH_CAP - v->path_len, fmt, ap);
    va_end(ap);
    if (k < 0)
        return;
    v->path_len += (size_t) k;
    if (v->path_len >= PATH_CAP)
        v->path_len = PATH_CAP - 1;
}

static bool is_identifier(const char *s)
{
    if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || *s == '_'))
        return false;
    for (s++; *s; s++)
        if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || (*s >= '0' && *s <= '9') ||
              *s == '_'))
            return false;
    return true;
}

/* Appends .key, or ["key"] (escaped) when key is not an identifier; returns the length to pop
 * back to. */
static size_t path_push_key(struct vctx *v, const char *key)
{
    size_t saved = v->path_len;
    if (is_identifier(key)) {
        path_append(v, ".%s", key);
        return saved;
    }
    char esc[128];
    size_t n = 0;
    for (const unsigned char *p = (const unsigned char *) key; *p && n + 8 < sizeof esc; p++) {
        if (*p == '"' || *p == '\\') {
            esc[n++] = '\\';
            esc[n++] = (char) *p;
        } else if (*p < 0x20) {
            n += (size_t) snprintf(esc + n, sizeof esc - n, "\\u%04x", *p);
        } else {
            esc[n++] = (char) *p;
        }
    }
    esc[n] = '\0';
    path_append(v, "[\"%s\"]", esc);
    return saved;
}

static size_t path_push_index(struct vctx *v, int i)
{
    size_t saved = v->path_len;
    path_append(v, "[%d]", i);
    return saved;
}

static void path_pop(struct vctx *v, size_t saved)
{
    v->path_len = saved;
    v->path[saved] = '\0';
}

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
        return schema_error(v, "\"%s\" must be a number", kw);
    *out = k->valuedouble;
    return HETCL_OK;
}

/* Reads an optional count keyword (minItems, maxLength...): a non-negative integer. */
static hetcl_status get_count(struct vctx *v, const cJSON *s, const char *kw, bool *has,
                              double *out)
{
    hetcl_status st = get_number(v, s, kw, has, out);
    if (st == HETCL_OK && *has && (!is_integral(*out) || *out < 0))
        return schema_error(v, "\"%s\" must be a non-negative integer", kw);
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
        format_number(k->valuedouble, num, sizeof num);
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

/* ---- pattern: ECMA-262 subset to POSIX ERE ----------------------------------------------- */

/*
 * JSON Schema patterns are ECMA-262 regexes; regcomp speaks POSIX ERE. The common ground is
 * large (anchors, ., [a-z], * + ? {n,m}, ( | )) but differs in escapes: POSIX has no \d \w \s,
 * and inside brackets a backslash is a literal, so "[0-9,\-]" would also accept "\". This
 * rewrites the escapes and rejects what POSIX cannot express, rather than match differently.
 */
struct rewriter {
    char *out;
    size_t len, cap;
};

static void emit(struct rewriter *w, const char *s)
{
    size_t n = strlen(s);
    if (w->len + n < w->cap) {
        memcpy(w->out + w->len, s, n + 1);
        w->len += n;
    }
}

static void emit_char(struct rewriter *w, char c)
{
    char s[2] = {c, '\0'};
    emit(w, s);
}

/* Expansion of \d \D \w \W \s \S outside brackets, or NULL. */
static const char *class_escape(char c)
{
    switch (c) {
    case 'd':
        return "[0-9]";
    case 'D':
        return "[^0-9]";
    case 'w':
        return "[A-Za-z0-9_]";
    case 'W':
        return "[^A-Za-z0-9_]";
    case 's':
        return "[[:space:]]";
    case 'S':
        return "[^[:space:]]";
    default:
        return NULL;
    }
}

/* Rewrites one bracket expression starting after '['; returns the position after its ']'. */
static const char *rewrite_bracket(struct rewriter *w, const char *p, const char **why)
{
    char body[256] = "";
    size_t n = 0;
    bool negate = false, close = false, hyphen = false, caret = false;
    if (*p == '^') {
        negate = true;
        p++;
    }
    for (; *p && *p != ']'; p++) {
        const char *add = NULL;
        char one[2] = {*p, '\0'};
        if (*p == '\\') {
            char c = *++p;
            if (c == 'd') {
                add = "0-9";
            } else if (c == 'w') {
                add = "A-Za-z0-9_";
            } else if (c == 's') {
                add = "[:space:]";
            } else if (c == ']' || c == '-' || c == '^') {
                /* placed where POSIX reads them literally, below */
                close = close || c == ']';
                hyphen = hyphen || c == '-';
                caret = caret || c == '^';
                continue;
            } else if (c == 'n' || c == 't') {
                one[0] = c == 'n' ? '\n' : '\t';
            } else if (c == '\0' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                       (c >= '0' && c <= '9')) {
                *why = "an escape inside [...] that POSIX lacks (\\D, \\W, \\S, \\b, \\u...)";
                return NULL;
            } else {
                one[0] = c; /* \\ \. \/ ...: the character itself */
            }
        }
        if (!add)
            add = one;
        size_t k = strlen(add);
        if (n + k >= sizeof body) {
            *why = "a [...] class longer than 250 characters";
            return NULL;
        }
        memcpy(body + n, add, k + 1);
        n += k;
    }
    if (*p != ']') {
        *why = "an unclosed [";
        return NULL;
    }
    /* POSIX: ']' is literal only first, '-' only first or last, '^' anywhere but first. */
    if (n > 0 && body[n - 1] == '-') {
        body[--n] = '\0';
        hyphen = true;
    }
    if (close && n > 0 && body[0] == '-') {
        memmove(body, body + 1, n--);
        hyphen = true;
    }
    if (caret && !negate && !close && n == 0) {
        emit(w, hyphen ? "[-^]" : "\\^");
        return p + 1;
    }
    emit(w, negate ? "[^" : "[");
    if (close)
        emit(w, "]");
    emit(w, body);
    if (caret)
        emit(w, "^");
    if (hyphen)
        emit(w, "-");
    emit(w, "]");
    return p + 1;
}

/* Returns a malloc'd POSIX ERE, or NULL with *why set (or *why NULL for no memory). */
static char *ecma_to_posix(const char *re, const char **why)
{
    struct rewriter w = {NULL, 0, strlen(re) * 8 + 16};
    *why = NULL;
    w.out = malloc(w.cap);
    if (!w.out)
        return NULL;
    w.out[0] = '\0';
    char prev = '\0'; /* last unescaped character, to spot lazy quantifiers */
    for (const char *p = re; *p;) {
        char c = *p;
        if (c == '[') {
            p = rewrite_bracket(&w, p + 1, why);
            if (!p)
                break;
            prev = ']';
            continue;
        }
        if (c == '?' && (prev == '*' || prev == '+' || prev == '?' || prev == '}')) {
            *why = "a lazy quantifier (*? +? ?? {}?)";
            break;
        }
        if (c == '(' && p[1] == '?') {
            *why = "a (?...) group (lookaround, non-capturing or named)";
            break;
        }
        if (c == '\\') {
            char e = p[1];
            const char *cls = class_escape(e);
            if (cls) {
                emit(&w, cls);
            } else if (e == 'n' || e == 't') {
                emit_char(&w, e == 'n' ? '\n' : '\t');
            } else if (e == '\0' || (e >= 'a' && e <= 'z') || (e >= 'A' && e <= 'Z') ||
                       (e >= '0' && e <= '9')) {
                *why = "an escape POSIX lacks (\\b, \\B, \\u, back-references...)";
                break;
            } else if (strchr(".[\\()*+?{|^$", e)) {
                emit_char(&w, '\\');
                emit_char(&w, e);
            } else {
                emit_char(&w, e); /* \/ \- \] \}: the character itself */
            }
            prev = 'x';
            p += 2;
            continue;
        }
        emit_char(&w, c);
        prev = c;
        p++;
    }
    if (*why) {
        free(w.out);
        return NULL;
    }
    return w.out;
}

/* ---- keywords ---------------------------------------------------------------------------- */

static hetcl_status check_type(struct vctx *v, const cJSON *s, const cJSON *t, const cJSON *x)
{
    char want[200] = "";
    bool numeric_only = true;
    const cJSON *one = t, *e = NULL;
    if (cJSON_IsArray(t)) {
        if (cJSON_GetArraySize(t) == 0)
            return schema_error(v, "\"type\" must not be an empty array");
        one = t->child;
    } else if (!cJSON_IsString(t)) {
        return schema_error(v, "\"type\" must be a type name or an array of them");
    }
    for (e = one; e; e = cJSON_IsArray(t) ? e->next : NULL) {
        if (!cJSON_IsString(e))
            return schema_error(v, "\"type\" array items must be strings");
        int m = type_matches(x, e->valuestring);
        if (m < 0)
            return schema_error(v, "unknown type \"%s\"", e->valuestring);
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
    show_value(x, got, sizeof got);
    return violation(v, "expected %s, got %s", want, got);
}

static hetcl_status check_enum(struct vctx *v, const cJSON *k, const cJSON *x)
{
    if (!cJSON_IsArray(k))
        return schema_error(v, "\"enum\" must be an array");
    const cJSON *e;
    cJSON_ArrayForEach(e, k)
    {
        if (cJSON_Compare(e, x, true))
            return HETCL_OK;
    }
    char want[160], got[SHOW_CAP];
    show_json(k, want, sizeof want);
    show_value(x, got, sizeof got);
    return violation(v, "expected one of %s, got %s", want, got);
}

static hetcl_status check_const(struct vctx *v, const cJSON *k, const cJSON *x)
{
    if (cJSON_Compare(k, x, true))
        return HETCL_OK;
    char want[160], got[SHOW_CAP];
    show_json(k, want, sizeof want);
    show_value(x, got, sizeof got);
    return violation(v, "expected %s, got %s", want, got);
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
    show_value(x, got, sizeof got);
    return violation(v, "expected %s, got %s", want, got);
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
            show_value(x, got, sizeof got);
            if (has_min && len < min)
                return violation(v, "expected a string of at least %.0f characters, got %s (%.0f)",
                                 min, got, len);
            return violation(v, "expected a string of at most %.0f characters, got %s (%.0f)", max,
                             got, len);
        }
    }
    const cJSON *p = cJSON_GetObjectItemCaseSensitive(s, "pattern");
    if (!p)
        return HETCL_OK;
    if (!cJSON_IsString(p))
        return schema_error(v, "\"pattern\" must be a string");
    const char *why = NULL;
    char *posix = ecma_to_posix(p->valuestring, &why);
    if (!posix) {
        if (!why)
            return no_memory(v);
        return schema_error(v, "\"pattern\" /%s/ uses %s", p->valuestring, why);
    }
    regex_t re;
    int rc = regcomp(&re, posix, REG_EXTENDED | REG_NOSUB);
    free(posix);
    if (rc != 0) {
        char why_re[128];
        regerror(rc, &re, why_re, sizeof why_re);
        return schema_error(v, "\"pattern\" /%s/ does not compile: %s", p->valuestring, why_re);
    }
    rc = regexec(&re, x->valuestring, 0, NULL, 0);
    regfree(&re);
    if (rc == 0)
        return HETCL_OK;
    if (rc != REG_NOMATCH)
        return schema_error(v, "\"pattern\" /%s/ could not be matched (regexec error %d)",
                            p->valuestring, rc);
    show_value(x, got, sizeof got);
    return violation(v, "expected a string matching /%s/, got %s", p->valuestring, got);
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
        return violation(v, "expected an array of at least %.0f items, got %d", min, n);
    if (has_max && n > max)
        return violation(v, "expected an array of at most %.0f items, got %d", max, n);
    const cJSON *items = cJSON_GetObjectItemCaseSensitive(s, "items");
    if (!items)
        return HETCL_OK;
    if (cJSON_IsArray(items))
        return schema_error(v, "\"items\" as an array (tuple validation) is not supported");
    int i = 0;
    const cJSON *e;
    cJSON_ArrayForEach(e, x)
    {
        size_t saved = path_push_index(v, i++);
        st = validate(v, items, e);
        path_pop(v, saved);
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
            return schema_error(v, "\"required\" must be an array of strings");
        const cJSON *e;
        cJSON_ArrayForEach(e, req)
        {
            if (!cJSON_IsString(e))
                return schema_error(v, "\"required\" must be an array of strings");
            if (!cJSON_GetObjectItemCaseSensitive(x, e->valuestring))
                return violation(v, "missing required property \"%s\"", e->valuestring);
        }
    }
    if (props && !cJSON_IsObject(props))
        return schema_error(v, "\"properties\" must be an object");
    if (extra && !cJSON_IsBool(extra) && !cJSON_IsObject(extra))
        return schema_error(v, "\"additionalProperties\" must be a boolean or a schema");
    const cJSON *m;
    cJSON_ArrayForEach(m, x)
    {
        const cJSON *sub = props ? cJSON_GetObjectItemCaseSensitive(props, m->string) : NULL;
        if (!sub && !extra)
            continue;
        size_t saved = path_push_key(v, m->string);
        hetcl_status st;
        if (!sub && cJSON_IsFalse(extra))
            st = violation(v, "unexpected property (not in \"properties\" and "
                              "\"additionalProperties\" is false)");
        else
            st = validate(v, sub ? sub : extra, m);
        path_pop(v, saved);
        if (st != HETCL_OK)
            return st;
    }
    return HETCL_OK;
}

/* Resolves a same-document JSON pointer ("#", "#/$defs/name", "#/a/0/b") against the root. */
static hetcl_status resolve_ref(struct vctx *v, const char *ref, const cJSON **out)
{
    if (ref[0] != '#')
        return schema_error(v,
                            "$ref \"%s\": only same-document references (\"#/...\") are "
                            "supported",
                            ref);
    if (ref[1] != '\0' && ref[1] != '/')
        return schema_error(v,
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
                    return schema_error(v, "$ref \"%s\": \"~\" must be followed by 0 or 1", ref);
                c = *++p == '0' ? '~' : '/';
            }
            if (n + 1 >= sizeof seg)
                return schema_error(v, "$ref \"%s\": a segment is too long", ref);
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
            return schema_error(v, "$ref \"%s\" does not resolve", ref);
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
        return schema_error(v, "\"%s\" must be a non-empty array of schemas", kw);
    char *saved_err = v->err;
    size_t saved_cap = v->err_cap;
    char *cur = malloc(SCRATCH_CAP), *best = malloc(SCRATCH_CAP);
    if (!cur || !best) {
        free(cur);
        free(best);
        return no_memory(v);
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
        hetcl_status bs = validate(v, b, x);
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
            copy_str(saved_err, saved_cap, cur);
            break;
        }
        i++;
    }
    v->err = saved_err;
    v->err_cap = saved_cap;
    if (st == HETCL_OK && b != NULL && want_one) {
        st = violation(v,
                       "expected exactly one \"oneOf\" alternative to match, but #%d and #%d "
                       "both do",
                       matched, i);
    } else if (st == HETCL_OK && b == NULL && matched < 0) {
        size_t depth = v->path_len;
        st = violation(v,
                       "expected a match for one of the %d \"%s\" alternatives; closest is #%d: %s",
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
        return no_memory(v);
    v->err = scratch;
    v->err_cap = SCRATCH_CAP;
    hetcl_status st = validate(v, k, x);
    v->err = saved_err;
    v->err_cap = saved_cap;
    if (st == HETCL_ERR_FORMAT) {
        st = HETCL_OK;
    } else if (st == HETCL_OK) {
        char got[SHOW_CAP];
        show_value(x, got, sizeof got);
        st = violation(v, "expected a value that does not match the \"not\" schema, got %s", got);
    } else {
        copy_str(saved_err, saved_cap, scratch);
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
        show_value(x, got, sizeof got);
        return violation(v, "expected nothing here (the schema is false), got %s", got);
    }
    if (!cJSON_IsObject(s))
        return schema_error(v, "a schema must be an object or a boolean, not %s",
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
            return schema_error(v, "\"$ref\" must be a string");
        if ((st = resolve_ref(v, k->valuestring, &target)) || (st = validate(v, target, x)))
            return st;
    }
    if ((k = cJSON_GetObjectItemCaseSensitive(s, "allOf"))) {
        if (!cJSON_IsArray(k))
            return schema_error(v, "\"allOf\" must be an array of schemas");
        const cJSON *b;
        cJSON_ArrayForEach(b, k)
        {
            if ((st = validate(v, b, x)))
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
static hetcl_status validate(struct vctx *v, const cJSON *s, const cJSON *x)
{
    if (v->depth >= HETCL_SCHEMA_MAX_DEPTH)
        return schema_error(v, "subschemas nested deeper than %d levels (a $ref cycle?)",
                            HETCL_SCHEMA_MAX_DEPTH);
    v->depth++;
    hetcl_status st = validate_keywords(v, s, x);
    v->depth--;
    return st;
}

hetcl_status hetcl_schema_validate(const cJSON *schema, const cJSON *doc, char *err, size_t err_cap)
{
    if (err && err_cap)
        err[0] = '\0';
    else
        err_cap = 0;
    if (!schema || !doc) {
        copy_str(err, err_cap, "hetcl_schema_validate: schema and doc must not be NULL");
        return HETCL_ERR_INVALID_ARG;
    }
    /* The path buffer makes this a large struct; it lives on the heap to keep the stack of a
     * caller's thread small. */
    struct vctx *v = calloc(1, sizeof *v);
    if (!v) {
        copy_str(err, err_cap, "out of memory");
        return HETCL_ERR_NO_MEMORY;
    }
    v->root = schema;
    v->err = err;
    v->err_cap = err_cap;
    v->path[0] = '$';
    v->path_len = 1;
    hetcl_status st = validate(v, schema, doc);
    if (st == HETCL_OK && err_cap)
        err[0] = '\0';
    free(v);
    return st;
}

/* ---- files ------------------------------------------------------------------------------- */

hetcl_status hetcl_schema_read_json(const char *path, cJSON **out, char *err, size_t err_cap)
{
    if (err && err_cap)
        err[0] = '\0';
    else
        err_cap = 0;
    if (out)
        *out = NULL;
    if (!path || !out) {
        copy_str(err, err_cap, "hetcl_schema_read_json: path and out must not be NULL");
        return HETCL_ERR_INVALID_ARG;
    }
    FILE *f = fopen(path, "rb");
    if (!f) {
        if (err_cap)
            snprintf(err, err_cap, "%s: cannot open: %s", path, strerror(errno));
        return HETCL_ERR_IO;
    }
    /* Read in growing chunks rather than by ftell, so that pipes and /dev/stdin work too. One
     * byte past the cap tells "exactly at the cap" from "too large". */
    char *buf = NULL;
    size_t len = 0, cap = 0;
    hetcl_status st = HETCL_OK;
    for (;;) {
        if (len == cap) {
            size_t ncap = cap ? cap * 2 : 64 * 1024;
            if (ncap > HETCL_SCHEMA_MAX_FILE_BYTES + 1)
                ncap = HETCL_SCHEMA_MAX_FILE_BYTES + 1;
            if (ncap == cap)
                break;
            char *nbuf = realloc(buf, ncap + 1); /* + 1: the NUL cJSON's length check wants */
            if (!nbuf) {
                st = HETCL_ERR_NO_MEMORY;
                copy_str(err, err_cap, "out of memory");
                break;
            }
            buf = nbuf;
            cap = ncap;
        }
        size_t want = cap - len;
        size_t got = fread(buf + len, 1, want, f);
        len += got;
        if (got < want) {
            if (ferror(f)) {
                st = HETCL_ERR_IO;
                if (err_cap)
                    snprintf(err, err_cap, "%s: read failed: %s", path, strerror(errno));
            }
            break;
        }
    }
    fclose(f);
    if (st == HETCL_OK && len > HETCL_SCHEMA_MAX_FILE_BYTES) {
        st = HETCL_ERR_FORMAT;
        if (err_cap)
            snprintf(err, err_cap, "%s: larger than %zu bytes", path, HETCL_SCHEMA_MAX_FILE_BYTES);
    }
    if (st != HETCL_OK) {
        free(buf);
        return st;
    }
    buf[len] = '\0'; /* the loop allocated at least once, with room for this */
    /* cJSON 1.7.15 wants the terminating NUL inside the length when it must check that nothing
     * follows the value; the parse end (not cJSON_GetErrorPtr's global) locates an error. */
    const char *end = NULL;
    cJSON *json = cJSON_ParseWithLengthOpts(buf, len + 1, &end, true);
    if (json && end != buf + len) { /* a NUL byte in the file ended the parse early */
        cJSON_Delete(json);
        json = NULL;
    }
    if (!json) {
        size_t off = end && end >= buf && end <= buf + len ? (size_t) (end - buf) : len;
        size_t line = 1, col = 1;
        for (size_t i = 0; i < off; i++) {
            if (buf[i] == '\n') {
                line++;
                col = 1;
            } else {
                col++;
            }
        }
        if (err_cap)
            snprintf(err, err_cap, "%s: JSON parse error at byte %zu (line %zu, column %zu)%s",
                     path, off, line, col, len == 0 ? ": empty file" : "");
        free(buf);
        return HETCL_ERR_FORMAT;
    }
    free(buf);
    *out = json;
    return HETCL_OK;
}

hetcl_status hetcl_schema_validate_files(const char *schema_path, const char *doc_path, char *err,
                                         size_t err_cap)
{
    cJSON *schema = NULL, *doc = NULL;
    hetcl_status st = hetcl_schema_read_json(schema_path, &schema, err, err_cap);
    if (st == HETCL_OK)
        st = hetcl_schema_read_json(doc_path, &doc, err, err_cap);
    if (st == HETCL_OK)
        st = hetcl_schema_validate(schema, doc, err, err_cap);
    cJSON_Delete(doc);
    cJSON_Delete(schema);
    return st;
}
