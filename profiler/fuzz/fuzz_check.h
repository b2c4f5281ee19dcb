/*
 * What the profiler's fuzz targets require of every text they get back from a renderer: valid
 * UTF-8 (the report reader repairs what is not), and no control character but newline and
 * tab, so no escape sequence reaches a terminal or a page (textbuf.h's escapers). A violation
 * traps, which libFuzzer reports as a crash with its input.
 */
#ifndef HETCL_FUZZ_CHECK_H
#define HETCL_FUZZ_CHECK_H

#include <hetcl_internal/base.h>

#include <stdbool.h>
#include <stddef.h>
#include <string.h>

static inline void fuzz_check_text(const char *s)
{
    size_t n = strlen(s);
    if (!hetcl__utf8_valid(s, n))
        __builtin_trap();
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char) s[i];
        bool c1 = c == 0xC2 && i + 1 < n && (unsigned char) s[i + 1] >= 0x80 &&
                  (unsigned char) s[i + 1] <= 0x9F;
        if ((c < 0x20 && c != '\n' && c != '\t') || c == 0x7F || c1)
            __builtin_trap();
    }
}

#endif /* HETCL_FUZZ_CHECK_H */
