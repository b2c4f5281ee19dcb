/* A stand-in for OpenBLAS in test_cli_bench: the symbols the operator benchmark's baseline
 * loads (profiler/src/opbench/blas.c), with a speed set by the core type. Like OpenBLAS, it
 * reads OPENBLAS_CORETYPE once, when it loads; openblas_get_corename names it ("Prescott" when
 * unset, as Debian's 0.3.21 says on newer Xeons). cblas_sgemm computes nothing: it takes 10 µs
 * under the core type named by HETCL_FAKE_BLAS_FAST and 3 ms under any other, so that the
 * fastest core type is unmistakable whatever the load. */
#define _POSIX_C_SOURCE 200809L
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* exported whatever the build's default visibility (the project builds with hidden) */
#define EXPORT __attribute__((visibility("default")))

static char core[64] = "Prescott";

__attribute__((constructor)) static void fake_openblas_load(void)
{
    const char *c = getenv("OPENBLAS_CORETYPE");
    if (c && c[0] && strlen(c) < sizeof core)
        strcpy(core, c);
}

EXPORT char *openblas_get_corename(void)
{
    return core;
}

EXPORT void openblas_set_num_threads(int n)
{
    (void) n;
}

EXPORT void cblas_sgemm(int order, int ta, int tb, int m, int n, int k, float alpha, const float *a,
                        int lda, const float *b, int ldb, float beta, float *c, int ldc)
{
    (void) order, (void) ta, (void) tb, (void) m, (void) n, (void) k, (void) alpha, (void) a;
    (void) lda, (void) b, (void) ldb, (void) beta, (void) c, (void) ldc;
    const char *fast = getenv("HETCL_FAKE_BLAS_FAST");
    const struct timespec t = {0, fast && strcmp(fast, core) == 0 ? 10000 : 3000000};
    nanosleep(&t, NULL);
}
