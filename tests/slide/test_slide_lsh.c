/*
 * Tests SLIDE's hashing (models/src/slide): SimHash's bit-collision frequency against
 * 1 - angle / pi over 10k pairs and its sparse form against its dense one; DWTA against a naive
 * reference, deterministic for a seed and never leaving a bin empty for a non-zero vector (even
 * one non-zero among 100k coordinates); many rows hashed at once (16 a vector on AVX-512) against
 * one by one; bucket indices in range with every bucket reachable
 * (log2 packing); the FIFO tables against naive ring buffers; the active sets (union, threshold,
 * labels first, padding, the sampled baseline) against a naive union, and the top mode against
 * naive counts; the MIPS transform keeping the inner product's ranking, in the cosine and in
 * SimHash's collision rates.
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

/* The MIPS transform: over rows of norms spread 100x, the row of the largest inner product with
 * a query has the largest cosine once transformed (while the plain cosine often picks another
 * row), and SimHash over the transformed rows collides most often with that row. A projection
 * reads a share p of w's coordinates and the norm coordinate: the vector it sees is about
 * (sqrt(p) w, norm coordinate), which is the one compared. */
static void test_mips(uint64_t seed)
{
    enum { D = 32, N = 40, TRIALS = 200 };
    struct hetcl__rng r;
    hetcl__rng_seed(&r, seed + 11);
    static float w[N * D], tw[N * (D + 1)];
    float q[D + 1];
    int plain_differs = 0;
    struct hetcl__lsh *fam = NULL;
    CHECK(hetcl__lsh_create_mips(4, 4, D, seed + 10, &fam) == HETCL_OK);
    if (!fam)
        return;
    CHECK_EQ_INT(fam->dim, D + 1);
    CHECK_EQ_INT(fam->proj_len, (D + 2) / 3 + 1);
    for (int p = 0; p < 16; p++)
        CHECK_EQ_INT(fam->proj_idx[p * fam->proj_len + fam->proj_len - 1], D);
    const double share = (double) (fam->proj_len - 1) / D;
    for (int trial = 0; trial < TRIALS; trial++) {
        for (int i = 0; i < N; i++) {
            normal_vec(&r, w + i * D, D);
            float scale = (float) pow(10.0, 2.0 * hetcl__rng_uniform(&r) - 1.0);
            for (int j = 0; j < D; j++)
                w[i * D + j] *= scale;
        }
        normal_vec(&r, q, D);
        q[D] = 0.0f;
        const float m = hetcl__lsh_mips_max_norm(w, N, D);
        int best_ip = 0, best_tcos = 0, best_cos = 0;
        double ip_max = -INFINITY, tcos_max = -INFINITY, cos_max = -INFINITY;
        for (int i = 0; i < N; i++) {
            float *t = tw + i * (D + 1);
            hetcl__lsh_mips_row(fam, w + i * D, m, t);
            for (int j = 0; j < D; j++)
                t[j] *= (float) sqrt(share);
            CHECK(fabs(sqrt(dot(t, t, D + 1)) - (double) m * sqrt(share)) <= 1e-4 * (double) m);
            double ip = dot(w + i * D, q, D), nw = sqrt(dot(w + i * D, w + i * D, D));
            double tcos = dot(t, q, D + 1) / (sqrt(dot(t, t, D + 1)) * sqrt(dot(q, q, D)));
            if (ip > ip_max)
                ip_max = ip, best_ip = i;
            if (tcos > tcos_max)
                tcos_max = tcos, best_tcos = i;
            if (ip / nw > cos_max)
                cos_max = ip / nw, best_cos = i;
        }
        CHECK_EQ_INT(best_tcos, best_ip);
        plain_differs += best_cos != best_ip;
    }
    CHECK(plain_differs >= TRIALS / 4); /* the norms matter in these data */
    hetcl__lsh_destroy(fam);

    /* Two rows: a long one at 45 degrees from the query (inner product 7.1) and a short one at
     * 10 degrees (0.98). Plain SimHash collides more with the short one (about 0.75 against
     * 0.94 of the bits); over the transformed rows, with the long one (0.75 against 0.53).
     * 1000 one-bit tables: each rate within about 0.03, the gaps about 190 and 220 bits. */
    enum { L2 = 1000 };
    float x[D + 1], a[D + 1], b[D + 1], ta[D + 1], tb[D + 1];
    normal_vec(&r, x, D);
    at_angle(&r, x, pi / 4, a, D);
    at_angle(&r, x, pi / 18, b, D);
    const double nx = sqrt(dot(x, x, D));
    for (int j = 0; j < D; j++) {
        a[j] *= 10.0f;
        x[j] = (float) ((double) x[j] / nx);
    }
    x[D] = 0.0f;
    CHECK(dot(a, x, D) > 5.0 * dot(b, x, D));
    float two[2 * D];
    memcpy(two, a, sizeof(float) * D);
    memcpy(two + D, b, sizeof(float) * D);
    const float m = hetcl__lsh_mips_max_norm(two, 2, D);
    struct hetcl__lsh *plain = NULL, *mips = NULL;
    CHECK(hetcl__lsh_create(HETCL__LSH_SIMHASH, 1, L2, D, seed + 12, &plain) == HETCL_OK);
    CHECK(hetcl__lsh_create_mips(1, L2, D, seed + 13, &mips) == HETCL_OK);
    if (!plain || !mips) {
        hetcl__lsh_destroy(plain);
        hetcl__lsh_destroy(mips);
        return;
    }
    static uint32_t bq[L2], ba[L2], bb[L2];
    int plain_a = 0, plain_b = 0, mips_a = 0, mips_b = 0;
    hetcl__lsh_hash_dense(plain, x, bq);
    hetcl__lsh_hash_dense(plain, a, ba);
    hetcl__lsh_hash_dense(plain, b, bb);
    for (int t = 0; t < L2; t++) {
        plain_a += ba[t] == bq[t];
        plain_b += bb[t] == bq[t];
    }
    hetcl__lsh_mips_row(mips, a, m, ta);
    hetcl__lsh_mips_row(mips, b, m, tb);
    hetcl__lsh_hash_dense(mips, x, bq); /* (x, 0): x has D + 1 entries, the last 0 */
    hetcl__lsh_hash_dense(mips, ta, ba);
    hetcl__lsh_hash_dense(mips, tb, bb);
    for (int t = 0; t < L2; t++) {
        mips_a += ba[t] == bq[t];
        mips_b += bb[t] == bq[t];
    }
    CHECK(plain_b > plain_a + 100);
    CHECK(mips_a > mips_b + 100);
    hetcl__lsh_destroy(plain);
    hetcl__lsh_destroy(mips);
}

/* Top mode: the labels, then exactly the `top` neurons seen in the most buckets (at least
 * threshold), against naive counts. */
static void test_active_top(uint64_t seed)
{
    enum { N = 3000, L = 8, RP = 3, CAP = 200 };
    struct hetcl__lsh_tables *t = NULL;
    CHECK(hetcl__lsh_tables_create(L, RP, CAP, N, &t) == HETCL_OK);
    struct hetcl__lsh_scratch s;
    CHECK(hetcl__lsh_scratch_init(&s, N) == HETCL_OK);
    if (!t || !s.stamp) {
        hetcl__lsh_tables_destroy(t);
        hetcl__lsh_scratch_deinit(&s);
        return;
    }
    struct hetcl__rng r;
    hetcl__rng_seed(&r, seed + 21);
    static uint32_t nb[N * L];
    static uint32_t scratch[1 << RP];
    /* skewed buckets, so that counts spread */
    for (int i = 0; i < N * L; i++)
        nb[i] = (uint32_t) (hetcl__rng_below(&r, 1 << RP) & hetcl__rng_below(&r, 1 << RP));
    for (int table = 0; table < L; table++)
        hetcl__lsh_tables_fill(t, table, nb, L, N, NULL, scratch);
    static int32_t out[N];
    static int count[N];
    static char in[N];
    for (int trial = 0; trial < 60; trial++) {
        uint32_t q[L];
        for (int i = 0; i < L; i++)
            q[i] = (uint32_t) (hetcl__rng_below(&r, 1 << RP) & hetcl__rng_below(&r, 1 << RP));
        int32_t lab[2] = {(int32_t) hetcl__rng_below(&r, N), 5};
        const int n_lab = lab[0] == lab[1] ? 1 : 2;
        struct hetcl__active_rule rule = {.min_active = 0,
                                          .threshold = trial % 4 == 3 ? 2 : 0,
                                          .top = 1 + (int64_t) hetcl__rng_below(&r, 600)};
        memset(count, 0, sizeof count);
        for (int table = 0; table < L; table++) {
            uint32_t n;
            const int32_t *ids = hetcl__lsh_tables_bucket(t, table, q[table], &n);
            for (uint32_t e = 0; e < n; e++)
                count[ids[e]]++;
        }
        const int min_count = rule.threshold > 1 ? rule.threshold : 1;
        int64_t eligible = 0;
        for (int i = 0; i < N; i++)
            eligible += i != lab[0] && i != lab[1] && count[i] >= min_count;
        int64_t n_ret = -1;
        int64_t m = hetcl__lsh_active(t, q, lab, 2, &rule, &s, &r, out, &n_ret);
        const int64_t want = eligible < rule.top ? eligible : rule.top;
        CHECK_EQ_INT(n_ret, want);
        CHECK_EQ_INT(m, n_lab + want);
        CHECK(m <= hetcl__lsh_active_cap(N, L, CAP, 2, &rule));
        CHECK(out[0] == lab[0]);
        memset(in, 0, sizeof in);
        int min_in = L + 1;
        for (int64_t e = 0; e < m; e++) {
            CHECK(out[e] >= 0 && out[e] < N && !in[out[e]]);
            in[out[e]] = 1;
            if (e >= n_lab) {
                CHECK(count[out[e]] >= min_count);
                min_in = count[out[e]] < min_in ? count[out[e]] : min_in;
            }
        }
        /* nothing left out was seen in more buckets than a neuron taken */
        for (int i = 0; i < N; i++)
            if (!in[i] && count[i] > min_in)
                CHECK(!"a neuron seen more often was left out");
    }
    hetcl__lsh_scratch_deinit(&s);
    hetcl__lsh_tables_destroy(t);
}

/* SimHash's dense codes against one projection at a time, each summed in index order (the
 * host sums HETCL__LSH_SIMHASH_LANES projections side by side and must give the same bits):
 * K * L below, at and past a multiple of the lanes (the tail one at a time), the MIPS family,
 * rows with exact zeros and sums that cancel. */
static void test_simhash_lanes(uint64_t seed)
{
    static const struct {
        int k, l, dim;
        bool mips;
    } fam[] = {{1, 1, 2, false},  {4, 100, 128, false}, {9, 50, 128, false},
               {3, 5, 17, false}, {6, 7, 64, true},     {4, 2, 1, false}};
    struct hetcl__rng r;
    hetcl__rng_seed(&r, seed + 41);
    for (size_t f = 0; f < sizeof fam / sizeof fam[0]; f++) {
        struct hetcl__lsh *h = NULL;
        hetcl_status st = fam[f].mips
                                  ? hetcl__lsh_create_mips(fam[f].k, fam[f].l, fam[f].dim, seed, &h)
                                  : hetcl__lsh_create(HETCL__LSH_SIMHASH, fam[f].k, fam[f].l,
                                                      fam[f].dim, seed, &h);
        CHECK(st == HETCL_OK);
        if (!h)
            continue;
        float x[130];
        uint8_t codes[900];
        int bad = 0;
        for (int trial = 0; trial < 50; trial++) {
            for (int64_t j = 0; j < h->dim; j++) { /* small integers: many sums exactly 0 */
                const int kind = trial % 3;
                x[j] = kind == 0 ? (float) hetcl__rng_normal(&r)
                                 : (float) ((int) hetcl__rng_below(&r, 5) - 2) * 0.5f;
            }
            hetcl__lsh_codes_dense(h, x, codes);
            for (int q = 0; q < h->k * h->l; q++) {
                float sum = 0.0f;
                for (int32_t i = 0; i < h->proj_len; i++)
                    sum += (float) h->proj_sign[q * h->proj_len + i] *
                           x[h->proj_idx[q * h->proj_len + i]];
                bad += codes[q] != (sum >= 0.0f ? 0 : 1);
            }
        }
        if (bad)
            fprintf(stderr, "simhash lanes: K %d L %d dim %d: %d codes differ\n", fam[f].k,
                    fam[f].l, fam[f].dim, bad);
        CHECK(bad == 0);
        hetcl__lsh_destroy(h);
    }
}

/* A coordinate of test_hash_rows' rows of kind 0 (Gaussian), 1 (small integers: sums exactly
 * 0, where >= 0 decides) or 2 (+-1 and a few +-2^25, which absorb the 1s added while they stand:
 * the order of the terms decides such sums). */
static float row_value(struct hetcl__rng *r, int kind)
{
    if (kind == 0)
        return (float) hetcl__rng_normal(r);
    if (kind == 1)
        return (float) ((int) hetcl__rng_below(r, 5) - 2) * 0.5f;
    const float pm = hetcl__rng_below(r, 2) ? 1.0f : -1.0f;
    return hetcl__rng_below(r, 16) ? pm : pm * 33554432.0f;
}

/* hetcl__lsh_hash_rows against hetcl__lsh_hash_dense row by row, bucket for bucket: SimHash
 * families with whole groups of 8 projections and a remainder (K 3, L 5), blocks of 16 rows and
 * partial ones, a stride beyond the row, the rows of row_value and one with an infinity and a
 * NaN; and DWTA (row by row). On a CPU with AVX-512F
 * the SimHash families take the 16-row path, which is what this checks there. */
static void test_hash_rows(uint64_t seed)
{
    static const struct {
        enum hetcl__lsh_kind kind;
        int k, l, dim;
    } fam[] = {{HETCL__LSH_SIMHASH, 4, 200, 128}, {HETCL__LSH_SIMHASH, 9, 50, 128},
               {HETCL__LSH_SIMHASH, 3, 5, 17},    {HETCL__LSH_SIMHASH, 1, 1, 2},
               {HETCL__LSH_SIMHASH, 2, 4, 1},     {HETCL__LSH_DWTA, 3, 25, 128}};
    static const int64_t counts[] = {1, 15, 16, 17, 53};
    enum { LD_PAD = 3, MAX_N = 53 };
    struct hetcl__rng r;
    hetcl__rng_seed(&r, seed + 51);
    for (size_t f = 0; f < sizeof fam / sizeof fam[0]; f++) {
        struct hetcl__lsh *h = NULL;
        CHECK(hetcl__lsh_create(fam[f].kind, fam[f].k, fam[f].l, fam[f].dim, seed + f, &h) ==
              HETCL_OK);
        if (!h)
            continue;
#if defined(__x86_64__) || defined(__i386__)
        if (fam[f].kind == HETCL__LSH_SIMHASH && __builtin_cpu_supports("avx512f"))
            CHECK(hetcl__lsh_rows_wide(h));
#endif
        const int64_t ld = h->dim + LD_PAD, L = h->l;
        float *rows = malloc((size_t) (MAX_N * ld) * sizeof *rows);
        uint32_t *got = malloc((size_t) (MAX_N * L) * sizeof *got);
        uint32_t *want = malloc((size_t) (MAX_N * L) * sizeof *want);
        CHECK(rows && got && want);
        for (size_t c = 0; rows && got && want && c < sizeof counts / sizeof counts[0]; c++) {
            const int64_t n = counts[c];
            for (int64_t i = 0; i < n; i++)
                for (int64_t j = 0; j < ld; j++) /* NaN in the stride's padding: never read */
                    rows[i * ld + j] =
                            j >= h->dim ? NAN : row_value(&r, (int) ((i + (int64_t) c) % 3));
            if (n > 3) { /* an infinity and a NaN in one row */
                rows[3 * ld] = INFINITY;
                rows[3 * ld + h->dim / 2] = NAN;
            }
            hetcl__lsh_hash_rows(h, rows, ld, n, got);
            for (int64_t i = 0; i < n; i++)
                hetcl__lsh_hash_dense(h, rows + i * ld, want + i * L);
            int64_t bad = 0;
            for (int64_t e = 0; e < n * L; e++)
                bad += got[e] != want[e];
            if (bad)
                fprintf(stderr, "hash rows: K %d L %d dim %d, %lld rows: %lld buckets differ\n",
                        fam[f].k, fam[f].l, fam[f].dim, (long long) n, (long long) bad);
            CHECK(bad == 0);
        }
        free(rows), free(got), free(want);
        hetcl__lsh_destroy(h);
    }
}

/* The naive top mode, order included: the neurons of the buckets other than the labels, in the
 * order first seen (table by table, each bucket from its start), their counts; of those seen
 * at least min_count times the `top` with the highest counts, a tie going to the one seen
 * first; written in first-seen order after the labels. Returns the set's size. */
static int64_t naive_top(const struct hetcl__lsh_tables *t, const uint32_t *q, const int32_t *lab,
                         int n_lab, const struct hetcl__active_rule *rule, int *count,
                         int32_t *first, int32_t *out)
{
    const int64_t n = t->n_neurons;
    int64_t m = 0, n_first = 0;
    for (int i = 0; i < n_lab; i++) {
        bool dup = false;
        for (int64_t e = 0; e < m; e++)
            dup |= out[e] == lab[i];
        if (!dup)
            out[m++] = lab[i];
    }
    const int64_t m_lab = m;
    memset(count, 0, (size_t) n * sizeof *count);
    for (int table = 0; table < t->l; table++) {
        uint32_t nb;
        const int32_t *ids = hetcl__lsh_tables_bucket(t, table, q[table], &nb);
        for (uint32_t e = 0; e < nb; e++) {
            bool is_lab = false;
            for (int64_t i = 0; i < m_lab; i++)
                is_lab |= out[i] == ids[e];
            if (!is_lab && count[ids[e]]++ == 0)
                first[n_first++] = ids[e];
        }
    }
    const int min_count = rule->threshold > 1 ? rule->threshold : 1;
    /* pick greedily: the highest count left, the earliest seen among equals */
    static char taken[1 << 16];
    memset(taken, 0, sizeof taken);
    for (int64_t k = 0; k < rule->top; k++) {
        int64_t best = -1;
        for (int64_t e = 0; e < n_first; e++)
            if (!taken[e] && count[first[e]] >= min_count &&
                (best < 0 || count[first[e]] > count[first[best]]))
                best = e;
        if (best < 0)
            break;
        taken[best] = 1;
    }
    for (int64_t e = 0; e < n_first; e++)
        if (taken[e])
            out[m++] = first[e];
    return m;
}

/* Top mode against naive_top id by id, order included (the set and its order are part of the
 * result: they decide the softmax's sums), at shapes from a few buckets of many ids each (K 1,
 * 2: many equal counts, so ties decide) to slide-xc-simhash's kind (K 4, L 100), FIFOs that
 * overflow (buckets of 200, 700 and 1500) included: through the tables' bitmaps where the CPU
 * has AVX-512BW (every shape but L 300, which counts ids), else by counting ids. With the
 * bitmaps, the set's order comes from the chosen neurons' places, except where one count level
 * holds most neurons (the shapes with every neuron in one bucket), where the buckets are read
 * in order. */
static void test_active_top_exact(uint64_t seed)
{
    enum { N = 4000 };
    static const struct {
        int l, range_pow, bucket_size;
        bool one; /* every neuron in bucket 0: all tied, and one count level holds them all */
    } shapes[] = {{8, 3, 200, false},  {40, 1, 4000, false},  {100, 4, 16384, false},
                  {33, 2, 700, false}, {300, 2, 4000, false}, {16, 1, 4000, true},
                  {12, 2, 1500, true}};
    static int32_t out[N + 8], want[N + 8], first[N];
    static int count[N];
    struct hetcl__rng r;
    hetcl__rng_seed(&r, seed + 33);
    for (size_t sh = 0; sh < sizeof shapes / sizeof shapes[0]; sh++) {
        const int l = shapes[sh].l, rp = shapes[sh].range_pow;
        struct hetcl__lsh_tables *t = NULL;
        struct hetcl__lsh_scratch s;
        uint32_t *nb = malloc((size_t) N * (size_t) l * sizeof *nb);
        uint32_t *scratch = malloc(((size_t) 1 << rp) * sizeof *scratch);
        CHECK(hetcl__lsh_tables_create(l, rp, shapes[sh].bucket_size, N, &t) == HETCL_OK);
        CHECK(hetcl__lsh_scratch_init(&s, N) == HETCL_OK);
        CHECK(nb && scratch);
#if defined(__x86_64__) || defined(__i386__)
        /* on AVX-512BW every shape but L 300 takes the bitmaps' query */
        if (__builtin_cpu_supports("avx512bw"))
            CHECK(hetcl__lsh_bits_usable(l, rp) == (l <= 255));
#endif
        if (t)
            CHECK((t->bits != NULL) == hetcl__lsh_bits_usable(l, rp));
        if (!t || !s.stamp || !nb || !scratch) {
            free(nb), free(scratch);
            hetcl__lsh_tables_destroy(t);
            hetcl__lsh_scratch_deinit(&s);
            return;
        }
        /* skewed buckets, so that counts spread */
        for (int64_t i = 0; i < (int64_t) N * l; i++)
            nb[i] = shapes[sh].one ? 0
                                   : (uint32_t) (hetcl__rng_below(&r, 1u << rp) &
                                                 hetcl__rng_below(&r, 1u << rp));
        /* with one, each table in its own random order, so that which table a neuron is first
         * seen in decides where it stands */
        static int32_t order[N];
        for (int table = 0; table < l; table++) {
            for (int32_t i = 0; i < N; i++)
                order[i] = i;
            for (int32_t i = N - 1; shapes[sh].one && i > 0; i--) {
                const int32_t j = (int32_t) hetcl__rng_below(&r, (uint64_t) i + 1), x = order[i];
                order[i] = order[j];
                order[j] = x;
            }
            hetcl__lsh_tables_fill(t, table, nb, l, N, order, scratch);
        }
        for (int trial = 0; trial < 12; trial++) {
            uint32_t q[300];
            for (int i = 0; i < l; i++) /* with one: bucket 0 in about 3 tables of 4 */
                q[i] = (uint32_t) (hetcl__rng_below(&r, 1u << rp) *
                                   (!shapes[sh].one || hetcl__rng_below(&r, 4) == 0));
            int32_t lab[3] = {(int32_t) hetcl__rng_below(&r, N), 7, 7}; /* a repeat */
            struct hetcl__active_rule rule = {
                    .threshold = trial % 3 == 2 ? 1 + (int) hetcl__rng_below(&r, (uint64_t) l) : 0,
                    .top = 1 + (int64_t) hetcl__rng_below(&r, trial % 2 ? 3000 : 300)};
            int64_t n_ret = -1;
            int64_t m = hetcl__lsh_active(t, q, lab, 3, &rule, &s, &r, out, &n_ret);
            int64_t w = naive_top(t, q, lab, 3, &rule, count, first, want);
            CHECK_EQ_INT(m, w);
            int64_t same = 0;
            while (same < m && same < w && out[same] == want[same])
                same++;
            if (same < m || same < w) {
                fprintf(stderr, "top exact: shape %zu trial %d: first difference at %lld of %lld\n",
                        sh, trial, (long long) same, (long long) w);
                CHECK(!"the top set or its order differs from the naive one");
            }
        }
        free(nb), free(scratch);
        hetcl__lsh_scratch_deinit(&s);
        hetcl__lsh_tables_destroy(t);
    }
}

int main(void)
{
    uint64_t seed = hetcl_test_seed();
    test_simhash_collisions(seed);
    test_simhash_lanes(seed);
    test_hash_rows(seed);
    test_dwta(seed);
    test_buckets(seed);
    test_tables(seed);
    test_active(seed);
    test_active_top(seed);
    test_active_top_exact(seed);
    test_mips(seed);
    return hetcl_test_finish("test_slide_lsh");
}
