/* The profiler's growable string and its HTML and Markdown escaping (textbuf.h). */
#include "util/textbuf.h"

#include <stdarg.h>
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

void hetcl__sb_html_text(struct sbuf *b, const char *s)
{
    for (; *s; s++) {
        unsigned char c = (unsigned char) *s;
        if (c == '<')
            hetcl__sb_puts(b, "&lt;");
        else if (c == '>')
            hetcl__sb_puts(b, "&gt;");
        else if (c == '&')
            hetcl__sb_puts(b, "&amp;");
        else if (c == '"')
            hetcl__sb_puts(b, "&quot;");
        else if (c == '\'')
            hetcl__sb_puts(b, "&#39;");
        else if ((c < 0x20 && c != '\t' && c != '\n') || c == 0x7f)
            hetcl__sb_puts(b, "&#xFFFD;");
        else
            hetcl__sb_putc(b, (char) c);
    }
}

void hetcl__sb_md_text(struct sbuf *b, const char *s)
{
    for (; *s; s++) {
        unsigned char c = (unsigned char) *s;
        if (c == '<')
            hetcl__sb_puts(b, "&lt;");
        else if (c == '>')
            hetcl__sb_puts(b, "&gt;");
        else if (c == '&')
            hetcl__sb_puts(b, "&amp;");
        else if (c == '\n' || c == '\r' || c == '\t')
            hetcl__sb_putc(b, ' ');
        else if (c < 0x20 || c == 0x7f)
            hetcl__sb_puts(b, "&#xFFFD;");
        else if (strchr("|\\`*_[]#~", (int) c))
            hetcl__sb_printf(b, "\\%c", (char) c);
        else
            hetcl__sb_putc(b, (char) c);
    }
}
