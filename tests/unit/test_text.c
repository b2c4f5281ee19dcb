/*
 * Tests the internal seam's text helpers (runtime/src/util/text.c): the quotation that error
 * messages use for input (bounded, one line, escaped: hetcl__quote, hetcl_quote), and UTF-8
 * decoding, validation, repair and trimming.
 */
#include "harness.h"
#include <hetcl_internal/base.h>

#include <hetcl/status.h>

#include <stdlib.h>
#include <string.h>

static void test_quote_short(void)
{
    char q[HETCL_QUOTE_CAP];
    CHECK_EQ_STR(hetcl__quote(q, sizeof q, "abc"), "\"abc\"");
    CHECK_EQ_STR(hetcl__quote(q, sizeof q, ""), "\"\"");
    CHECK_EQ_STR(hetcl__quote(q, sizeof q, NULL), "\"\"");
    CHECK_EQ_STR(hetcl__quote(q, sizeof q, "say \"a\\b\" it's"), "\"say \\\"a\\\\b\\\" it's\"");
    CHECK_EQ_STR(hetcl__quote(q, sizeof q, "a\nb\tc\r"), "\"a\\nb\\tc\\r\"");
    /* ANSI colour, DEL, a C1 control (U+009B, CSI) and a right-to-left override. */
    CHECK_EQ_STR(hetcl__quote(q, sizeof q, "\x1b[31mred\x7f\xc2\x9b\xe2\x80\xae"),
                 "\"\\u001b[31mred\\u007f\\u009b\\u202e\"");
    /* Not UTF-8: a stray continuation, a cut sequence, a surrogate, an overlong slash. */
    CHECK_EQ_STR(hetcl__quote(q, sizeof q, "\x80-\xe2\x82-\xed\xa0\x80-\xc0\xaf"),
                 "\"\\x80-\\xe2\\x82-\\xed\\xa0\\x80-\\xc0\\xaf\"");
    /* UTF-8 text stays as it is. */
    CHECK_EQ_STR(hetcl__quote(q, sizeof q, "δ → 😀"), "\"δ → 😀\"");
    CHECK_EQ_STR(hetcl_quote(q, sizeof q, "x"), "\"x\"");
    /* NUL bytes inside a counted text. */
    CHECK_EQ_STR(hetcl__quote_n(q, sizeof q, "a\0b", 3), "\"a\\u0000b\"");
}

static void test_quote_long(void)
{
    size_t n = 1 << 20;
    char *big = malloc(n + 1);
    if (!big) {
        CHECK(big != NULL);
        return;
    }
    memset(big, 'x', n);
    big[n] = '\0';
    char q[HETCL_QUOTE_CAP];
    hetcl__quote(q, sizeof q, big);
    char want[HETCL_QUOTE_CAP];
    snprintf(want, sizeof want, "\"%.*s\"... (1048576 bytes)", HETCL_QUOTE_CHARS, big);
    CHECK_EQ_STR(q, want);
    /* Every character escaped: fewer are shown, the result still fits and is terminated. */
    memset(big, 0x1b, n);
    hetcl__quote(q, sizeof q, big);
    CHECK(strlen(q) < sizeof q);
    CHECK(strstr(q, "\"... (1048576 bytes)") != NULL);
    CHECK(strchr(q, 0x1b) == NULL);
    /* A multi-byte character is never cut. */
    for (size_t i = 0; i + 2 <= n; i += 2)
        memcpy(big + i, "\xce\xb4", 2); /* δ */
    hetcl__quote(q, sizeof q, big);
    CHECK(hetcl__utf8_valid(q, strlen(q)));
    /* A small buffer: cut earlier, still terminated, still saying the length. */
    char small[40];
    memset(big, 'y', n);
    hetcl__quote(small, sizeof small, big);
    CHECK(strlen(small) < sizeof small);
    CHECK(strstr(small, "(1048576 bytes)") != NULL);
    char tiny[4];
    hetcl__quote(tiny, sizeof tiny, big);
    CHECK(strlen(tiny) < sizeof tiny);
    free(big);
}

static void test_utf8(void)
{
    uint32_t cp = 0;
    CHECK_EQ_INT(hetcl__utf8_decode("A", 1, &cp), 1);
    CHECK_EQ_INT(cp, 'A');
    CHECK_EQ_INT(hetcl__utf8_decode("\xce\xb4", 2, &cp), 2);
    CHECK_EQ_INT(cp, 0x3b4);
    CHECK_EQ_INT(hetcl__utf8_decode("\xf0\x9f\x98\x80", 4, &cp), 4);
    CHECK_EQ_INT(cp, 0x1f600);
    CHECK_EQ_INT(hetcl__utf8_decode("\xf0\x9f\x98", 3, &cp), 0); /* cut short */
    CHECK_EQ_INT(cp, 0xFFFD);
    CHECK_EQ_INT(hetcl__utf8_decode("\xed\xa0\x80", 3, &cp), 0);     /* surrogate */
    CHECK_EQ_INT(hetcl__utf8_decode("\xe0\x80\xaf", 3, &cp), 0);     /* overlong */
    CHECK_EQ_INT(hetcl__utf8_decode("\xf4\x90\x80\x80", 4, &cp), 0); /* > U+10FFFF */
    CHECK_EQ_INT(hetcl__utf8_decode("\xff", 1, &cp), 0);
    CHECK(hetcl__utf8_valid("plain δ 😀", strlen("plain δ 😀")));
    CHECK(!hetcl__utf8_valid("a\xffz", 3));

    char *s = hetcl__utf8_sanitize("a\xff\xc3z\xce\xb4");
    CHECK_EQ_STR(s, "a\xef\xbf\xbd\xef\xbf\xbdz\xce\xb4");
    hetcl__free(s);

    char t1[] = "ab\xce";           /* δ cut after its first byte */
    char t2[] = "ab\xf0\x9f\x98";   /* 😀 cut after three */
    char t3[] = "ab\xce\xb4";       /* whole */
    char t4[] = "\x80\x80\x80\x80"; /* nothing to trim to: left alone */
    hetcl__utf8_trim(t1);
    hetcl__utf8_trim(t2);
    hetcl__utf8_trim(t3);
    hetcl__utf8_trim(t4);
    CHECK_EQ_STR(t1, "ab");
    CHECK_EQ_STR(t2, "ab");
    CHECK_EQ_STR(t3, "ab\xce\xb4");
    CHECK_EQ_INT(strlen(t4), 4);
}

int main(void)
{
    test_quote_short();
    test_quote_long();
    test_utf8();
    return hetcl_test_finish("test_text");
}
