/*
 * Times SLIDE's active-set query (hetcl__lsh_active) at the shapes of
 * models/slide-xc-simhash.json: 50k neurons of 128 hidden units, SimHash K 4, L 100, buckets of
 * up to 16384, the top 1900 plus 500 random (change with the arguments). Not a test: run by hand.
 *
 *     build/tests/slide/lab_slide_query [neurons] [k] [l] [top] [queries]
 *
 * Rows and queries are Gaussian (the queries through a ReLU, as the hidden layer's are); the
 * tables are filled once, then every query runs on one thread. Prints the median time of a
 * query over 5 rounds, the mean retrieved, and a checksum of every active set (ids and order),
 * so that two builds can be compared bit for bit, and the times the rows' hashing and the
 * tables' fill in a random order took (one thread; the checksum covers the buckets too, through
 * the tables): the rows one by one (hetcl__lsh_hash_dense) and as the trainer's refill hashes
 * them (hetcl__lsh_hash_rows), their ratio and whether their buckets are equal. Where the tables
 * keep bitmaps (slide_active_bits.c), each round also runs the queries by counting ids (the
 * bitmaps hidden): that time, the ratio and whether the sets are equal. Exit 1 when buckets or
 * sets differ. Times are the thread's CPU time (others' load shows only through the caches).
 */
#define _POSIX_C_SOURCE 200809L
#include "slide/slide_lsh.h"

#include <hetcl_internal/prng.h>

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

enum { HID = 128, REPS = 5 };

/* The thread's CPU time: on a machine others load, wall times count their share too. */
static double cpu_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double) ts.tv_sec + (double) ts.tv_nsec * 1e-9;
}

static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *) a, y = *(const double *) b;
    return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
    const int64_t n = argc > 1 ? atoll(argv[1]) : 50000;
    const int k = argc > 2 ? atoi(argv[2]) : 4, l = argc > 3 ? atoi(argv[3]) : 100;
    const int64_t top = argc > 4 ? atoll(argv[4]) : 1900;
    const int nq = argc > 5 ? atoi(argv[5]) : 200;
    struct hetcl__lsh *h = NULL;
    struct hetcl__lsh_tables *t = NULL;
    struct hetcl__lsh_scratch s = {0};
    if (n < 1 || n > INT32_MAX || k < 1 || l < 1 || l > 4096 || top < 0 || nq < 1 ||
        hetcl__lsh_create(HETCL__LSH_SIMHASH, k, l, HID, 42, &h) != HETCL_OK ||
        hetcl__lsh_tables_create(l, h->range_pow, 16384, n, &t) != HETCL_OK ||
        hetcl__lsh_scratch_init(&s, n) != HETCL_OK) {
        fprintf(stderr, "usage: lab_slide_query [neurons] [k 1..24] [l 1..4096] [top] "
                        "[queries] (or out of memory)\n");
        return 2;
    }
    float *w = malloc((size_t) n * HID * sizeof *w), *q = malloc((size_t) nq * HID * sizeof *q);
    uint32_t *nb = malloc((size_t) n * (size_t) l * sizeof *nb);
    uint32_t *qb = malloc((size_t) nq * (size_t) l * sizeof *qb);
    uint32_t *scratch = malloc(((size_t) 1 << h->range_pow) * sizeof *scratch);
    int32_t *order = malloc((size_t) n * sizeof *order);
    const struct hetcl__active_rule rule = {.min_active = 1000, .random = 500, .top = top};
    const int64_t cap = hetcl__lsh_active_cap(n, l, 16384, 1, &rule);
    int32_t *out = malloc((size_t) cap * sizeof *out);
    if (!w || !q || !nb || !qb || !scratch || !order || !out) {
        fprintf(stderr, "out of memory\n");
        return 1;
    }
    struct hetcl__rng rng;
    hetcl__rng_seed(&rng, 7);
    for (int64_t i = 0; i < n * HID; i++)
        w[i] = (float) hetcl__rng_normal(&rng) * 0.05f;
    for (int64_t i = 0; i < (int64_t) nq * HID; i++) {
        float v = (float) hetcl__rng_normal(&rng);
        q[i] = v > 0.0f ? v : 0.0f;
    }
    /* the rows hashed one by one (the baseline), then as the trainer does (16 at once where
     * the CPU has AVX-512): the same buckets, checked */
    uint32_t *nb_rows = malloc((size_t) n * (size_t) l * sizeof *nb_rows);
    if (!nb_rows) {
        fprintf(stderr, "out of memory\n");
        return 1;
    }
    const double t_hash = cpu_s();
    for (int64_t i = 0; i < n; i++) {
        hetcl__lsh_hash_dense(h, w + i * HID, nb + i * l);
        order[i] = (int32_t) i;
    }
    const double rehash_s = cpu_s() - t_hash;
    const double t_rows = cpu_s();
    hetcl__lsh_hash_rows(h, w, HID, n, nb_rows);
    const double rows_s = cpu_s() - t_rows;
    const bool rows_same = !memcmp(nb, nb_rows, (size_t) n * (size_t) l * sizeof *nb);
    free(nb_rows);
    for (int64_t i = n - 1; i > 0; i--) { /* a random insertion order, as the trainer's */
        int64_t j = (int64_t) hetcl__rng_below(&rng, (uint64_t) i + 1);
        int32_t x = order[i];
        order[i] = order[j];
        order[j] = x;
    }
    const double t_fill = cpu_s();
    for (int table = 0; table < l; table++)
        hetcl__lsh_tables_fill(t, table, nb, l, n, order, scratch);
    const double fill_s = cpu_s() - t_fill;
    for (int i = 0; i < nq; i++)
        hetcl__lsh_hash_dense(h, q + (int64_t) i * HID, qb + (int64_t) i * l);
    /* Each round runs every query through the tables' bitmaps (where they have them) and
     * then by counting ids (the bitmaps hidden), so that both see the same machine. */
    double times[2][REPS], retrieved = 0;
    uint64_t sum[2] = {1469598103934665603ull, 1469598103934665603ull}; /* FNV-1a of the sets */
    uint64_t *const bits = t->bits;
    for (int r = 0; r < REPS; r++)
        for (int way = 0; way < (bits ? 2 : 1); way++) {
            t->bits = way ? NULL : bits;
            double t0 = cpu_s();
            for (int i = 0; i < nq; i++) {
                int32_t lab = (int32_t) ((int64_t) i * 7919 % n);
                struct hetcl__rng pad;
                hetcl__rng_seed(&pad, (uint64_t) i);
                int64_t n_ret = 0;
                int64_t m = hetcl__lsh_active(t, qb + (int64_t) i * l, &lab, 1, &rule, &s, &pad,
                                              out, &n_ret);
                if (r == 0) {
                    retrieved += way ? 0.0 : (double) n_ret;
                    for (int64_t e = 0; e < m; e++)
                        sum[way] = (sum[way] ^ (uint32_t) out[e]) * 1099511628211ull;
                }
            }
            times[way][r] = (cpu_s() - t0) / nq;
        }
    t->bits = bits;
    qsort(times[1], REPS, sizeof *times[1], cmp_d);
    if (bits)
        printf("the query counting ids: %.1f us (median), through the bitmaps %.2fx faster, sets "
               "%s\n",
               times[1][REPS / 2] * 1e6, times[1][REPS / 2] / times[0][REPS / 2],
               sum[0] == sum[1] ? "equal" : "DIFFER");
    qsort(times[0], REPS, sizeof *times[0], cmp_d);
    printf("%lld neurons, SimHash K %d L %d, top %lld: %.1f us a query (median of %d rounds of "
           "%d), %.0f retrieved, checksum %016llx; the rows hashed in %.1f ms one by one, "
           "%.1f ms by hetcl__lsh_hash_rows (%s, %.2fx, buckets %s), the tables filled in "
           "%.1f ms\n",
           (long long) n, k, l, (long long) top, times[0][REPS / 2] * 1e6, REPS, nq, retrieved / nq,
           (unsigned long long) sum[0], rehash_s * 1e3, rows_s * 1e3,
           hetcl__lsh_rows_wide(h) ? "16 rows a vector" : "row by row", rehash_s / rows_s,
           rows_same ? "equal" : "DIFFER", fill_s * 1e3);
    if (!rows_same || sum[0] != sum[1])
        return 1;
    free(w), free(q), free(nb), free(qb), free(scratch), free(order), free(out);
    hetcl__lsh_scratch_deinit(&s);
    hetcl__lsh_tables_destroy(t);
    hetcl__lsh_destroy(h);
    return 0;
}
