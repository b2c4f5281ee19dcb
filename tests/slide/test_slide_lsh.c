/*
 * Tests SLIDE's hashing (models/src/slide): SimHash's bit-collision frequency against
 * 1 - angle / pi over 10k pairs and its sparse form against its dense one; DWTA against a naive
 * reference, deterministic for a seed and never leaving a bin empty for a non-zero vector (even
 * one non-zero among 100k coordinates); bucket indices in range with every bucket reachable
 * (log2 packing); the FIFO tables against naive ring buffers; the active sets (union, threshold,
 * labels first, padding, the sampled baseline) against a naive union.
 */
#include "harness.h"
#include "slide/slide_lsh.h"

#include <hetcl_internal/prng.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>

static const double pi = 3.14159265358979323846;

static void normal_vec(struct hetcl__rng *r, float *x, int n)
{
    for (int i = 0; i < n; i++)
        x[i] = (float) hetcl__rng_normal(r);
}

static double dot(const float *a, const float *b, int n)
{
    double s = 0;
    for (int i = 0; i < n; i++)
        s += (double) a[i] * (double) b[i];
    return s;
}

/* y at angle theta from x: cos(theta) x/|x| + sin(theta) u/|u|, u orthogonal to x. */
static void at_angle(struct hetcl__rng *r, const float *x, double theta, float *y, int n)
{
    float u[256];
    normal_vec(r, u, n);
    double xx = dot(x, x, n), ux = dot(u, x, n);
    for (int i = 0; i < n; i++)
        u[i] -= (float) (ux / xx * (double) x[i]);
    double nu = sqrt(dot(u, u, n)), nx = sqrt(xx);
    for (int i = 0; i < n; i++)
        y[i] = (float) (cos(theta) * (double) x[i] / nx + sin(theta) * (double) u[i] / nu);
}

static void test_simhash_collisions(uint64_t seed)
{
    enum { D = 128, K = 6, L = 50, PAIRS = 2000 };
    const double angles[] = {0.3, 0.8, 1.3, 1.8, 2.6}; /* 5 x 2000 = 10k pairs */
    struct hetcl__lsh *h = NULL;
    CHECK(hetcl__lsh_create(HETCL__LSH_SIMHASH, K, L, D, seed, &h) == HETCL_OK);
    if (!h)
        return;
    CHECK_EQ_INT(h->proj_len, (D + 2) / 3);
    struct hetcl__rng r;
    hetcl__rng_seed(&r, seed + 1);
    uint8_t cx[K * L], cy[K * L];
    float x[D], y[D];
    for (size_t a = 0; a < sizeof angles / sizeof *angles; a++) {
        long same = 0;
        for (int p = 0; p < PAIRS; p++) {
            normal_vec(&r, x, D);
            at_angle(&r, x, angles[a], y, D);
            hetcl__lsh_codes_dense(h, x, cx);
            hetcl__lsh_codes_dense(h, y, cy);
            for (int q = 0; q < K * L; q++)
                same += cx[q] == cy[q];
        }
        double freq = (double) same / ((double) PAIRS * K * L), want = 1.0 - angles[a] / pi;
        if (fabs(freq - want) > 0.02) {
            fprintf(stderr, "simhash: angle %.2f: collision frequency %.4f, 1 - angle/pi %.4f\n",
                    angles[a], freq, want);
            hetcl_test_failures++;
        }
    }
    /* The sparse form gives the dense form's codes. */
    int32_t idx[D];
    float val[D];
    int nnz = 0;
    normal_vec(&r, x, D);
    for (int j = 0; j < D; j++)
        if (j % 3 != 1) {
            idx[nnz] = j;
            val[nnz++] = x[j];
        } else {
            x[j] = 0.0f;
        }
    hetcl__lsh_codes_dense(h, x, cx);
    hetcl__lsh_codes_sparse(h, idx, val, nnz, cy);
    CHECK(memcmp(cx, cy, sizeof cx) == 0);
    hetcl__lsh_destroy(h);
}

/* The naive DWTA: for each bin, every position of every permutation that falls in it. Returns
 * whether bin b was filled and its code. */
static bool naive_dwta_bin(const struct hetcl__lsh *h, const float *x, int b, uint8_t *code)
{
    const int64_t n_pos = (int64_t) h->n_perm * h->dim;
    bool filled = false;
    float best = 0;
    for (int64_t j = 0; j < h->dim; j++)
        for (int p = 0; p < h->n_perm && x[j] != 0.0f; p++) {
            int64_t q = h->pos[p * h->dim + j];
            CHECK(q >= 0 && q < n_pos);
            if ((q / 8) % (h->k * h->l) != b)
                continue;
            uint8_t place = (uint8_t) (q % 8);
            if (!filled || x[j] > best || (x[j] == best && place < *code)) {
                filled = true;
                best = x[j];
                *code = place;
            }
        }
    return filled;
}

static void test_dwta(uint64_t seed)
{
    enum { D = 100, K = 4, L = 10 };
    struct hetcl__lsh *h = NULL, *h2 = NULL, *h3 = NULL;
    CHECK(hetcl__lsh_create(HETCL__LSH_DWTA, K, L, D, seed, &h) == HETCL_OK);
    CHECK(hetcl__lsh_create(HETCL__LSH_DWTA, K, L, D, seed, &h2) == HETCL_OK);
    CHECK(hetcl__lsh_create(HETCL__LSH_DWTA, K, L, D, seed + 1, &h3) == HETCL_OK);
    if (!h || !h2 || !h3)
        return;
    CHECK_EQ_INT(h->range_pow, 3 * K);
    CHECK_EQ_INT(h->n_perm, (8 * K * L + D - 1) / D);
    struct hetcl__rng r;
    hetcl__rng_seed(&r, seed + 2);
    float x[D];
    uint8_t c[K * L], c2[K * L], c3[K * L];
    int differs = 0;
    for (int trial = 0; trial < 200; trial++) {
        /* Sparse vectors with 1 to 30 non-zeros, some negative. */
        memset(x, 0, sizeof x);
        int nnz = 1 + (int) hetcl__rng_below(&r, 30);
        for (int e = 0; e < nnz; e++)
            x[hetcl__rng_below(&r, D)] = (float) hetcl__rng_normal(&r);
        memset(c, 0xff, sizeof c);
        hetcl__lsh_codes_dense(h, x, c);
        hetcl__lsh_codes_dense(h2, x, c2);
        hetcl__lsh_codes_dense(h3, x, c3);
        CHECK(memcmp(c, c2, sizeof c) == 0); /* same seed, same codes */
        differs += memcmp(c, c3, sizeof c) != 0;
        int any_filled = 0;
        for (int b = 0; b < K * L; b++) {
            uint8_t want = 0;
            if (naive_dwta_bin(h, x, b, &want)) {
                any_filled++;
                if (c[b] != want) {
                    fprintf(stderr, "dwta: trial %d bin %d: code %d, naive %d\n", trial, b, c[b],
                            want);
                    hetcl_test_failures++;
                }
            }
            CHECK(c[b] < 8); /* densified: no bin left at its 0xff sentinel */
        }
        bool nonzero = false;
        for (int j = 0; j < D; j++)
            nonzero = nonzero || x[j] != 0.0f;
        CHECK(!nonzero || any_filled > 0);
    }
    CHECK(differs > 150); /* another seed is another family */
    hetcl__lsh_destroy(h);
    hetcl__lsh_destroy(h2);
    hetcl__lsh_destroy(h3);

    /* One non-zero among 100k coordinates, far more than 8 K L = 2400 positions: every
     * coordinate still falls in a bin, so no code is left empty. */
    CHECK(hetcl__lsh_create(HETCL__LSH_DWTA, 6, 50, 100000, seed, &h) == HETCL_OK);
    if (!h)
        return;
    uint8_t big[300];
    for (int trial = 0; trial < 100; trial++) {
        int32_t j = (int32_t) hetcl__rng_below(&r, 100000);
        float v = 0.5f;
        memset(big, 0xff, sizeof big);
        hetcl__lsh_codes_sparse(h, &j, &v, 1, big);
        for (int b = 0; b < 300; b++)
            if (big[b] >= 8) {
                fprintf(stderr, "dwta: coordinate %d: bin %d left empty\n", (int) j, b);
                hetcl_test_failures++;
                break;
            }
    }
    hetcl__lsh_destroy(h);
}

/* Bucket indices are < 2^(K bits) and, with log2 packing, every bucket is reachable. */
static void test_buckets(uint64_t seed)
{
    const enum hetcl__lsh_kind kinds[] = {HETCL__LSH_DWTA, HETCL__LSH_SIMHASH};
    for (int kk = 0; kk < 2; kk++) {
        const int K = kinds[kk] == HETCL__LSH_DWTA ? 2 : 6, L = 8, D = 64;
        struct hetcl__lsh *h = NULL;
        CHECK(hetcl__lsh_create(kinds[kk], K, L, D, seed, &h) == HETCL_OK);
        if (!h)
            return;
        CHECK_EQ_INT(h->range_pow, 6);
        struct hetcl__rng r;
        hetcl__rng_seed(&r, seed + 3);
        int hit[64] = {0};
        float x[64];
        uint32_t b[8];
        for (int trial = 0; trial < 3000; trial++) {
            normal_vec(&r, x, D);
            hetcl__lsh_hash_dense(h, x, b);
            for (int t = 0; t < L; t++) {
                CHECK(b[t] < 64u);
                if (b[t] < 64u)
                    hit[b[t]]++;
            }
        }
        int reached = 0;
        for (int i = 0; i < 64; i++)
            reached += hit[i] > 0;
        if (reached != 64) {
            fprintf(stderr, "%s: %d of 64 buckets reached\n", kk ? "simhash" : "dwta", reached);
            hetcl_test_failures++;
        }
        hetcl__lsh_destroy(h);
    }
    struct hetcl__lsh *h = NULL;
    CHECK(hetcl__lsh_create(HETCL__LSH_DWTA, 9, 1, 10, seed, &h) == HETCL_ERR_INVALID_ARG);
    CHECK(hetcl__lsh_create(HETCL__LSH_SIMHASH, 0, 1, 10, seed, &h) == HETCL_ERR_INVALID_ARG);
    CHECK(h == NULL);
}

static int cmp_i32(const void *a, const void *b)
{
    int32_t x = *(const int32_t *) a, y = *(const int32_t *) b;
    return (x > y) - (x < y);
}

/* The tables against ring buffers of bucket_size slots filled as the reference does. */
static void test_tables(uint64_t seed)
{
    enum { N = 700, L = 3, RP = 4, NB = 1 << RP, CAP = 8 };
    struct hetcl__lsh_tables *t = NULL;
    CHECK(hetcl__lsh_tables_create(L, RP, CAP, N, &t) == HETCL_OK);
    if (!t)
        return;
    struct hetcl__rng r;
    hetcl__rng_seed(&r, seed + 4);
    static uint32_t buckets[N * L];
    static int32_t order[N];
    static uint32_t scratch[NB];
    for (int i = 0; i < N * L; i++) /* skewed, so some buckets overflow and some stay short */
        buckets[i] = (uint32_t) (hetcl__rng_below(&r, NB) * hetcl__rng_below(&r, NB) / NB);
    for (int i = 0; i < N; i++)
        order[i] = i;
    for (int i = N - 1; i > 0; i--) {
        int j = (int) hetcl__rng_below(&r, (uint64_t) i + 1), tmp = order[i];
        order[i] = order[j];
        order[j] = tmp;
    }
    for (int table = 0; table < L; table++)
        hetcl__lsh_tables_fill(t, table, buckets, L, N, order, scratch);
    for (int table = 0; table < L; table++) {
        int32_t ring[NB][CAP];
        int count[NB] = {0};
        for (int e = 0; e < N; e++) {
            uint32_t b = buckets[order[e] * L + table];
            ring[b][count[b]++ & (CAP - 1)] = order[e];
        }
        for (int b = 0; b < NB; b++) {
            uint32_t n;
            const int32_t *ids = hetcl__lsh_tables_bucket(t, table, (uint32_t) b, &n);
            int want_n = count[b] < CAP ? count[b] : CAP;
            CHECK_EQ_INT(n, want_n);
            if ((int) n != want_n)
                continue;
            int32_t got[CAP];
            memcpy(got, ids, n * sizeof *got);
            qsort(got, n, sizeof *got, cmp_i32);
            qsort(ring[b], n, sizeof **ring, cmp_i32);
            CHECK(memcmp(got, ring[b], n * sizeof *got) == 0);
        }
    }
    hetcl__lsh_tables_destroy(t);
}

/* Active sets against the naive union (and counts) of the buckets. */
static void test_active(uint64_t seed)
{
    enum { N = 5000, L = 4, RP = 3, CAP = 64 };
    struct hetcl__lsh_tables *t = NULL;
    CHECK(hetcl__lsh_tables_create(L, RP, CAP, N, &t) == HETCL_OK);
    struct hetcl__lsh_scratch s;
    CHECK(hetcl__lsh_scratch_init(&s, N) == HETCL_OK);
    if (!t || !s.stamp)
        return;
    struct hetcl__rng r;
    hetcl__rng_seed(&r, seed + 5);
    static uint32_t nb[N * L];
    static uint32_t scratch[1 << RP];
    for (int i = 0; i < N * L; i++)
        nb[i] = (uint32_t) hetcl__rng_below(&r, 1 << RP);
    for (int table = 0; table < L; table++)
        hetcl__lsh_tables_fill(t, table, nb, L, N, NULL, scratch);
    static int32_t out[N];
    static int seen[N];
    for (int trial = 0; trial < 50; trial++) {
        uint32_t q[L];
        for (int i = 0; i < L; i++)
            q[i] = (uint32_t) hetcl__rng_below(&r, 1 << RP);
        int32_t lab[3] = {(int32_t) hetcl__rng_below(&r, N), (int32_t) hetcl__rng_below(&r, N), 7};
        int thr = trial % 3; /* union, union, at least 2 buckets */
        /* random: trials 5k + 3, 5k + 4 add 100 uniform neurons beyond the buckets' */
        struct hetcl__active_rule rule = {.min_active = trial % 2 ? 400 : 0,
                                          .threshold = thr,
                                          .random = trial % 5 >= 3 ? 100 : 0};
        int64_t n_ret = -1;
        int64_t m = hetcl__lsh_active(t, q, lab, 3, &rule, &s, &r, out, &n_ret);
        CHECK(m <= hetcl__lsh_active_cap(N, L, CAP, 3, &rule));
        memset(seen, 0, sizeof seen);
        for (int table = 0; table < L; table++) {
            uint32_t n;
            const int32_t *ids = hetcl__lsh_tables_bucket(t, table, q[table], &n);
            for (uint32_t e = 0; e < n; e++)
                seen[ids[e]]++;
        }
        static char in[N];
        memset(in, 0, sizeof in);
        for (int64_t e = 0; e < m; e++) {
            CHECK(out[e] >= 0 && out[e] < N);
            CHECK(!in[out[e]]); /* no repeats */
            in[out[e]] = 1;
        }
        int n_lab = lab[0] == lab[1] ? 2 : 3;
        CHECK(out[0] == lab[0] && in[lab[1]] && in[7]); /* labels always in, first */
        int64_t want_ret = 0;
        for (int i = 0; i < N; i++) {
            bool is_lab = i == lab[0] || i == lab[1] || i == 7;
            bool want = seen[i] >= (thr ? thr : 1);
            want_ret += want && !is_lab;
            if (want)
                CHECK(in[i]);
        }
        CHECK_EQ_INT(n_ret, want_ret);
        int64_t want_m = n_lab + want_ret + rule.random;
        want_m = want_m < rule.min_active ? rule.min_active : want_m;
        CHECK_EQ_INT(m, want_m);
    }
    /* The sampled baseline: labels plus random neurons, up to the minimum (even n). */
    int32_t lab = 42;
    struct hetcl__active_rule rule = {.min_active = N};
    int64_t m = hetcl__lsh_active(NULL, NULL, &lab, 1, &rule, &s, &r, out, NULL);
    CHECK_EQ_INT(m, N);
    CHECK_EQ_INT(out[0], 42);
    hetcl__lsh_scratch_deinit(&s);
    hetcl__lsh_tables_destroy(t);
}

int main(void)
{
    uint64_t seed = hetcl_test_seed();
    test_simhash_collisions(seed);
    test_dwta(seed);
    test_buckets(seed);
    test_tables(seed);
    test_active(seed);
    return hetcl_test_finish("test_slide_lsh");
}
