/*
 * Text from outside (files, reports, flags) as messages and documents may show it: UTF-8
 * decoding and repair, and the short quotation every error message uses when it quotes input
 * (<hetcl_internal/base.h>; hetcl_quote in <hetcl/status.h> for the CLI).
 *
 * Why a quotation is cut: an error once echoed 52 MB of a malformed field on one line. Why it
 * is escaped: a field can hold newlines (one error, one line), ANSI escape sequences (which a
 * terminal would obey) and bytes that are not UTF-8.
 */
#include <hetcl_internal/base.h>

#include <hetcl/status.h>

#include <stdio.h>
#include <string.h>

size_t hetcl__utf8_decode(const char *text, size_t n, uint32_t *cp)
{
    const unsigned char *s = (const unsigned char *) text;
    *cp = 0xFFFD;
    if (n == 0)
        return 0;
    unsigned c = s[0];
    if (c < 0x80) {
        *cp = c;
        return 1;
    }
    size_t len;
    uint32_t v, min;
    if (c >= 0xC2 && c <= 0xDF) {
        len = 2;
        v = c & 0x1F;
        min = 0x80;
    } else if (c >= 0xE0 && c <= 0xEF) {
        len = 3;
        v = c & 0x0F;
        min = 0x800;
    } else if (c >= 0xF0 && c <= 0xF4) {
        len = 4;
        v = c & 0x07;
        min = 0x10000;
    } else {
        return 0; /* a continuation byte, C0/C1 (overlong 2-byte) or F5..FF */
    }
    if (n < len)
        return 0;
    for (size_t i = 1; i < len; i++) {
        if ((s[i] & 0xC0) != 0x80)
            return 0;
        v = (v << 6) | (s[i] & 0x3F);
    }
    if (v < min || v > 0x10FFFF || (v >= 0xD800 && v <= 0xDFFF))
        return 0;
    *cp = v;
    return len;
}

bool hetcl__utf8_valid(const char *s, size_t n)
{
    uint32_t cp;
    for (size_t i = 0; i < n;) {
        if ((unsigned char) s[i] < 0x80) {
            i++;
            continue;
        }
        size_t k = hetcl__utf8_decode(s + i, n - i, &cp);
        if (!k)
            return false;
        i += k;
    }
    return true;
}

char *hetcl__utf8_sanitize(const char *s)
{
    size_t n = strlen(s), bad = 0;
    uint32_t cp;
    for (size_t i = 0; i < n;) {
        size_t k = hetcl__utf8_decode(s + i, n - i, &cp);
        bad += !k;
        i += k ? k : 1;
    }
    /* Each bad byte (1) becomes U+FFFD (3 bytes). */
    char *out = hetcl__malloc(n + 2 * bad + 1);
    if (!out)
        return NULL;
    size_t o = 0;
    for (size_t i = 0; i < n;) {
        size_t k = hetcl__utf8_decode(s + i, n - i, &cp);
        if (k) {
            memcpy(out + o, s + i, k);
            o += k;
            i += k;
        } else {
            memcpy(out + o, "\xEF\xBF\xBD", 3);
            o += 3;
            i++;
        }
    }
    out[o] = '\0';
    return out;
}

void hetcl__utf8_trim(char *s)
{
    size_t n = strlen(s), start = n;
    /* The last lead byte, at most 3 bytes back; what follows it must complete it. */
    while (start > 0 && n - start < 4 && ((unsigned char) s[start - 1] & 0xC0) == 0x80)
        start--;
    if (start == 0 || (unsigned char) s[start - 1] < 0xC0)
        return;
    start--;
    uint32_t cp;
    if (hetcl__utf8_decode(s + start, n - start, &cp) != n - start)
        s[start] = '\0';
}

/* Code points a message must not show as they are: controls (C0, DEL, C1) and the
 * bidirectional formatting characters, which reorder what follows them on the line. */
static bool unsafe_code_point(uint32_t cp)
{
    return cp < 0x20 || (cp >= 0x7F && cp <= 0x9F) || cp == 0x061C || cp == 0x200E ||
           cp == 0x200F || (cp >= 0x202A && cp <= 0x202E) || (cp >= 0x2066 && cp <= 0x2069);
}

/* The escaped form of the character at s[0..n) into out (at least 8 bytes); returns its length
 * and the input bytes it consumed in *used. */
static size_t escape_one(const char *s, size_t n, char *out, size_t *used)
{
    uint32_t cp;
    size_t k = hetcl__utf8_decode(s, n, &cp);
    unsigned char c = (unsigned char) s[0];
    *used = k ? k : 1;
    if (!k) /* not UTF-8: the byte, in hex */
        return (size_t) snprintf(out, 8, "\\x%02x", c);
    switch (cp) {
    case '\n':
        return (size_t) snprintf(out, 8, "\\n");
    case '\r':
        return (size_t) snprintf(out, 8, "\\r");
    case '\t':
        return (size_t) snprintf(out, 8, "\\t");
    case '\\':
        return (size_t) snprintf(out, 8, "\\\\");
    case '"':
        return (size_t) snprintf(out, 8, "\\\"");
    default:
        break;
    }
    if (unsafe_code_point(cp))
        return (size_t) snprintf(out, 8, "\\u%04x", (unsigned) cp);
    memcpy(out, s, k);
    return k;
}

const char *hetcl__quote_n(char *buf, size_t cap, const char *text, size_t len)
{
    if (!buf || cap == 0)
        return "";
    if (!text)
        len = 0;
    /* Room kept for the closing quote and "... (<length> bytes)". */
    char suffix[48];
    snprintf(suffix, sizeof suffix, "\"... (%zu bytes)", len);
    size_t reserve = strlen(suffix) + 1;
    size_t o = 0, i = 0, chars = 0;
    if (cap > 1)
        buf[o++] = '"';
    while (i < len && chars < HETCL_QUOTE_CHARS) {
        char one[8];
        size_t used;
        size_t k = escape_one(text + i, len - i, one, &used);
        /* The last character must still leave room for the suffix, whether or not it ends up
         * being needed: a quotation is cut at a character, never inside an escape. */
        if (o + k + reserve > cap)
            break;
        memcpy(buf + o, one, k);
        o += k;
        i += used;
        chars++;
    }
    if (i < len) {
        size_t room = cap - o;
        snprintf(buf + o, room, "%s", suffix);
    } else if (o + 2 <= cap) {
        buf[o++] = '"';
        buf[o] = '\0';
    } else {
        buf[o < cap ? o : cap - 1] = '\0';
    }
    return buf;
}

const char *hetcl__quote(char *buf, size_t cap, const char *text)
{
    return hetcl__quote_n(buf, cap, text, text ? strlen(text) : 0);
}

const char *hetcl_quote(char *buf, size_t cap, const char *text)
{
    return hetcl__quote(buf, cap, text);
}

const char *hetcl__quote_name(char *buf, size_t cap, const char *name)
{
    static const char plain[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
                                "_-.:/";
    size_t n = name ? strspn(name, plain) : 0;
    if (n > 0 && !name[n] && n <= HETCL_QUOTE_CHARS && n < cap) {
        memcpy(buf, name, n + 1);
        return buf;
    }
    return hetcl__quote(buf, cap, name);
}
