/* "pattern" of the JSON Schema validator (schema_impl.h): ECMA-262 regexes as POSIX EREs. */
#include "schema_impl.h"

#include <stdlib.h>
#include <string.h>

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
char *hetcl__schema_ecma_to_posix(const char *re, const char **why)
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
