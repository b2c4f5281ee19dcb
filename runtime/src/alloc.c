/* The library's allocation functions: one place for tests to inject failures later. */
#include <hetcl_internal/base.h>

#include <stdlib.h>
#include <string.h>
#include <time.h>

void *hetcl__malloc(size_t n)
{
    return malloc(n ? n : 1);
}

void *hetcl__calloc(size_t count, size_t size)
{
    return calloc(count ? count : 1, size ? size : 1);
}

void *hetcl__realloc(void *p, size_t n)
{
    return realloc(p, n ? n : 1);
}

void hetcl__free(void *p)
{
    free(p);
}

void hetcl_free(void *p)
{
    hetcl__free(p);
}

char *hetcl__strdup(const char *s)
{
    if (!s)
        return NULL;
    size_t n = strlen(s) + 1;
    char *copy = hetcl__malloc(n);
    if (copy)
        memcpy(copy, s, n);
    return copy;
}

void hetcl__strlcpy(char *dst, const char *src, size_t cap)
{
    if (cap == 0)
        return;
    size_t n = src ? strlen(src) : 0;
    if (n >= cap)
        n = cap - 1;
    if (n)
        memcpy(dst, src, n);
    dst[n] = '\0';
}

uint64_t hetcl__now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t) ts.tv_sec * 1000000000u + (uint64_t) ts.tv_nsec;
}
