/* The profiler's growable string and its HTML and Markdown escaping (textbuf.h). */
#include "util/textbuf.h"

#include <hetcl_internal/base.h>

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void hetcl__sb_printf(struct sbuf *b, const char *fmt, ...)
{
    if (b->failed)
        return;
    for (;;) {
        va_list ap;
        va_start(ap, fmt);
        size_t room = b->cap - b->len;
        int k = vsnprintf(b->p ? b->p + b->len : NULL, b->p ? room : 0, fmt, ap);
        va_end(ap);
        if (k < 0) {
            b->failed = true;
            return;
        }
        if (b->p && (size_t) k < room) {
            b->len += (size_t) k;
            return;
        }
        size_t cap = b->cap ? b->cap : 4096;
        while (cap - b->len <= (size_t) k)
            cap *= 2;
        char *p = realloc(b->p, cap);
        if (!p) {
            b->failed = true;
            return;
        }
        b->p = p;
        b->cap = cap;
    }
}

void hetcl__sb_puts(struct sbuf *b, const char *s)
{
    hetcl__sb_printf(b, "%s", s);
}

void hetcl__sb_putc(struct sbuf *b, char c)
{
    hetcl__sb_printf(b, "%c", c);
}

void hetcl__sb_free(struct sbuf *b)
{
    free(b->p);
    memset(b, 0, sizeof *b);
}

/* Appends s[0..n) as it is. */
static void put_n(struct sbuf *b, const char *s, size_t n)
{
    if (n)
        hetcl__sb_printf(b, "%.*s", (int) n, s);
}

/* What no output of ours passes on from a report: bytes that are not UTF-8, the control
 * characters (C0 but tab and newline, DEL, C1: a terminal obeys them, XML forbids most) and
 * U+FFFE, U+FFFF (not characters; XML forbids them). Tab and newline are the callers'. */
static bool unshowable(uint32_t cp, size_t len)
{
    return len == 0 || (cp < 0x20 && cp != '\t' && cp != '\n') || (cp >= 0x7F && cp <= 0x9F) ||
           cp == 0xFFFE || cp == 0xFFFF;
}

/* The text escapers share one walk: runs of plain characters are copied whole; each other
 * character goes to `special`, which returns what to write for it (NULL: the character as it
 * is). The input's bytes that are not UTF-8 come out as U+FFFD. */
typedef const char *(*special_fn)(uint32_t cp, size_t len, char *tmp);

static void escape_walk(struct sbuf *b, const char *s, special_fn special)
{
    size_t n = strlen(s), run = 0, i = 0;
    char tmp[8];
    while (i < n) {
        uint32_t cp = (unsigned char) s[i];
        size_t len = cp < 0x80 ? 1 : hetcl__utf8_decode(s + i, n - i, &cp);
        const char *out = special(cp, len, tmp);
        if (!out) {
            i += len;
            continue;
        }
        put_n(b, s + run, i - run);
        hetcl__sb_puts(b, out);
        i += len ? len : 1;
        run = i;
    }
    put_n(b, s + run, n - run);
}

static const char *html_special(uint32_t cp, size_t len, char *tmp)
{
    (void) tmp;
    if (unshowable(cp, len))
        return "&#xFFFD;";
    switch (cp) {
    case '<':
        return "&lt;";
    case '>':
        return "&gt;";
    case '&':
        return "&amp;";
    case '"':
        return "&quot;";
    case '\'':
        return "&#39;";
    default:
        return NULL;
    }
}

void hetcl__sb_html_text(struct sbuf *b, const char *s)
{
    escape_walk(b, s, html_special);
}

static const char *md_special(uint32_t cp, size_t len, char *tmp)
{
    if (cp == '\n' || cp == '\r' || cp == '\t')
        return " ";
    if (unshowable(cp, len))
        return "&#xFFFD;";
    switch (cp) {
    case '<':
        return "&lt;";
    case '>':
        return "&gt;";
    case '&':
        return "&amp;";
    default:
        break;
    }
    if (cp < 0x80 && strchr("|\\`*_[]#~", (int) cp)) {
        tmp[0] = '\\';
        tmp[1] = (char) cp;
        tmp[2] = '\0';
        return tmp;
    }
    return NULL;
}

void hetcl__sb_md_text(struct sbuf *b, const char *s)
{
    escape_walk(b, s, md_special);
}

static const char *term_special(uint32_t cp, size_t len, char *tmp)
{
    (void) tmp;
    if (cp == '\n' || cp == '\r' || cp == '\t')
        return " ";
    /* Also the bidirectional controls, which reorder what follows on the line. */
    if (unshowable(cp, len) || cp == 0x061C || cp == 0x200E || cp == 0x200F ||
        (cp >= 0x202A && cp <= 0x202E) || (cp >= 0x2066 && cp <= 0x2069))
        return "\xEF\xBF\xBD";
    return NULL;
}

void hetcl__sb_term_text(struct sbuf *b, const char *s)
{
    escape_walk(b, s, term_special);
}
