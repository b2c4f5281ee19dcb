/*
 * A growable string for the profiler's text output (tables, Markdown, HTML, SVG), and the
 * escaping that every string taken from a report goes through before it lands in Markdown or
 * HTML. Internal to the profiler.
 *
 *     struct sbuf b = {0};
 *     hetcl__sb_puts(&b, "<td>");
 *     hetcl__sb_html_text(&b, device_name);   // "<script>" -> "&lt;script&gt;"
 *     hetcl__sb_puts(&b, "</td>");
 *     if (b.failed) ...                // out of memory somewhere above: b.p is incomplete
 *     hetcl__sb_free(&b);
 */
#ifndef HETCL_PROFILER_TEXTBUF_H
#define HETCL_PROFILER_TEXTBUF_H

#include <stdbool.h>
#include <stddef.h>

/* A growable NUL-terminated string; zero-initialised is empty. On allocation failure it sets
 * failed and stops growing (later appends are no-ops), so callers check once at the end. */
struct sbuf {
    char *p; /* owned; NULL until the first append */
    size_t len, cap;
    bool failed;
};

void hetcl__sb_printf(struct sbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void hetcl__sb_puts(struct sbuf *b, const char *s);
void hetcl__sb_putc(struct sbuf *b, char c);
void hetcl__sb_free(struct sbuf *b);

/*
 * The escapers. Each one takes a whole string from a report (or a path, or a message that
 * quotes one) and appends it so that it stays text in its format, whatever it holds. Common to
 * all three: bytes that are not UTF-8 become U+FFFD, as do the control characters (C0 other
 * than tab and newline, DEL, C1: a terminal obeys them, XML forbids most of them) and U+FFFE
 * and U+FFFF (not characters; XML forbids them too). So a page, a summary or a table never
 * carries an escape sequence or a byte a reader cannot decode, and the HTML stays well-formed
 * XML.
 */

/* For HTML/XML text and attribute values: & < > " ' become entities. Tab and newline stay. */
void hetcl__sb_html_text(struct sbuf *b, const char *s);

/* For a Markdown table cell or inline text: | and the characters that start emphasis, code,
 * links or headings (\ ` * _ [ ] # ~) get a backslash; < > & become entities (GitHub renders
 * raw HTML in Markdown); tab and newlines become spaces so that a row stays a row. */
void hetcl__sb_md_text(struct sbuf *b, const char *s);

/* For a terminal (hetcl compare's table): no markup to escape, but tab and newlines become
 * spaces (one row stays one line), and the bidirectional controls become U+FFFD as well (they
 * would reorder the rest of the line). */
void hetcl__sb_term_text(struct sbuf *b, const char *s);

#endif /* HETCL_PROFILER_TEXTBUF_H */
