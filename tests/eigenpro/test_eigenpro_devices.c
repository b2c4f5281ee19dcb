/*
 * EigenPro on several devices (<hetcl/eigenpro.h>, models/src/eigenpro/eigenpro_train.c):
 *  - the cut of a batch among devices (hetcl__eigenpro_split): in proportion to speed within
 *    one row, caps respected with the refused rows going to the others, every row given, at
 *    least one row each while the batch has as many, refused when the caps hold too few;
 *  - two host workers train the same machine as one: each step's centers cut into a range per
 *    worker (by measured speed), run concurrently; alpha after 2 epochs equals the one-worker
 *    run's bit for bit (every sum is taken within a fixed chunk of the centers, whatever the
 *    cut), while a run at another batch is farther than 1e-4 of its largest entry (the
 *    comparison can fail); both workers computed rows,
 *    their rows add up to the epochs' examples, their shares to 1, and each has a measured
 *    speed.
 */
#include "eigenpro/eigenpro_impl.h"
#include "harness.h"
#include "ref_ops.h"

#include <hetcl/data.h>
#include <hetcl/eigenpro.h>
#include <hetcl/model_spec.h>
#include <hetcl/runtime.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static hetcl_context *ctx;

static void check_split_case(int n, const double *speed, const int64_t *cap, int64_t mb)
{
    int64_t rows[HETCL_EIGENPRO_MAX_DEVICES], room = 0, sum = 0;
    for (int i = 0; i < n; i++)
        room += cap[i];
    const bool ok = hetcl__eigenpro_split(n, speed, cap, mb, rows);
    CHECK(ok == (room >= mb));
    if (!ok)
        return;
    double total = 0;
    bool capped = false;
    for (int i = 0; i < n; i++) {
        CHECK(rows[i] >= 0 && rows[i] <= cap[i]);
        sum += rows[i];
        total += speed[i];
        capped = capped || rows[i] == cap[i];
        if (mb >= n && cap[i] >= 1)
            CHECK(rows[i] >= 1);
    }
    CHECK_EQ_INT(sum, mb);
    if (capped)
        return;
    int raised = 0; /* devices given their one row below their proportional part */
    for (int i = 0; i < n; i++)
        raised += mb >= n && rows[i] == 1 && (double) mb * speed[i] / total < 1.0;
    for (int i = 0; i < n; i++) { /* no cap binds: proportional within a row, less the rows
                                   * the raised ones took */
        const double ideal = (double) mb * speed[i] / total;
        if (!(fabs((double) rows[i] - ideal) < 1.0 + raised + 1e-9 || rows[i] == 1)) {
            fprintf(stderr, "split: device %d of %d got %lld rows of %lld, ideal %.3f\n", i, n,
                    (long long) rows[i], (long long) mb, ideal);
            hetcl_test_failures++;
        }
    }
}

static void test_split(void)
{
    const int64_t big[4] = {1000, 1000, 1000, 1000};
    int64_t rows[4];
    const double s31[2] = {3.0, 1.0};
    CHECK(hetcl__eigenpro_split(2, s31, big, 100, rows));
    CHECK(rows[0] == 75 && rows[1] == 25);
    const int64_t cap60[2] = {60, 1000};
    CHECK(hetcl__eigenpro_split(2, s31, cap60, 100, rows));
    CHECK(rows[0] == 60 && rows[1] == 40); /* the refused 15 rows go to the other */
    const double s1000[2] = {1000.0, 1.0};
    CHECK(hetcl__eigenpro_split(2, s1000, big, 100, rows));
    CHECK(rows[0] == 99 && rows[1] == 1); /* still measured */
    const int64_t small[2] = {30, 40};
    CHECK(!hetcl__eigenpro_split(2, s31, small, 100, rows));
    const double s4[4] = {1.0, 2.0, 3.0, 4.0};
    CHECK(hetcl__eigenpro_split(4, s4, big, 3, rows)); /* fewer rows than devices */
    CHECK(rows[0] + rows[1] + rows[2] + rows[3] == 3);
    uint64_t st = 99;
    for (int t = 0; t < 2000; t++) { /* random speeds, caps and batches */
        double speed[HETCL_EIGENPRO_MAX_DEVICES];
        int64_t cap[HETCL_EIGENPRO_MAX_DEVICES];
        st = st * 6364136223846793005ULL + 1442695040888963407ULL;
        const int n = 1 + (int) ((st >> 33) % HETCL_EIGENPRO_MAX_DEVICES);
        for (int i = 0; i < n; i++) {
            st = st * 6364136223846793005ULL + 1442695040888963407ULL;
            speed[i] = 0.01 + (double) ((st >> 20) % 100000) / 1000.0;
            cap[i] = (int64_t) ((st >> 40) % 300);
        }
        check_split_case(n, speed, cap, (int64_t) ((st >> 8) % 700) + 1);
    }
}

/* Two interleaved spirals, n points. */
static hetcl_dataset *spirals(int n)
{
    hetcl_dataset *ds = calloc(1, sizeof *ds);
    float *x = malloc((size_t) n * 2 * sizeof *x);
    int32_t *y = malloc((size_t) n * sizeof *y);
    if (!ds || !x || !y) {
        free(ds);
        free(x);
        free(y);
        return NULL;
    }
    uint64_t st = 12345;
    for (int i = 0; i < n; i++) {
        double u[2];
        for (int k = 0; k < 2; k++) {
            st = st * 6364136223846793005ULL + 1442695040888963407ULL;
            u[k] = (double) (st >> 11) / 9007199254740992.0;
        }
        const int c = i % 2;
        const double t = 0.1 + 0.9 * u[0], a = 3.0 * 3.14159265358979 * t + c * 3.14159265358979;
        const double r = t + 0.05 * (u[1] - 0.5);
        x[2 * i] = (float) (r * cos(a));
        x[2 * i + 1] = (float) (r * sin(a));
        y[i] = c;
    }
    ds->name = (char *) "spirals";
    ds->n = n;
    ds->n_features = 2;
    ds->n_classes = 2;
    ds->x = x;
    ds->y = y;
    return ds;
}

static void free_spirals(hetcl_dataset *ds)
{
    if (!ds)
        return;
    free(ds->x);
    free(ds->y);
    free(ds);
}

static struct hetcl_eigenpro_result *train(hetcl_runtime *rt, hetcl_model_spec *spec,
                                           const hetcl_dataset *ds, int worker, int64_t batch)
{
    const struct hetcl_eigenpro_options o = {.epochs = 2,
                                             .seed = 7,
                                             .batch = batch,
                                             .top_q = 8,
                                             .m_g_cap = -1, /* no probe: the same setup */
                                             .mem_bytes = 1073741824.0,
                                             .worker = worker};
    struct hetcl_eigenpro_result *r = NULL;
    if (hetcl_eigenpro_train(ctx, rt, spec, ds, NULL, &o, &r) != HETCL_OK) {
        fprintf(stderr, "eigenpro train (worker %d): %s\n", worker, hetcl_context_last_error(ctx));
        hetcl_test_failures++;
    }
    return r;
}

static double max_diff(const float *a, const float *b, int64_t n, double *amax)
{
    double d = 0;
    *amax = 0;
    for (int64_t i = 0; i < n; i++) {
        d = fmax(d, fabs((double) a[i] - (double) b[i]));
        *amax = fmax(*amax, fabs((double) a[i]));
    }
    return d;
}

static void test_two_workers(void)
{
    static const char text[] =
            "{\"schema_version\": 1, \"name\": \"k\", \"input\": {\"shape\": [2]}, \"layers\": "
            "[{\"type\": \"kernel\", \"kernel\": \"gaussian\", \"bandwidth\": 0.2, \"units\": 2}], "
            "\"loss\": \"mse\"}";
    hetcl_model_spec *spec = NULL;
    hetcl_runtime *rt = NULL;
    hetcl_dataset *ds = spirals(600);
    const struct hetcl_runtime_options ro = {
            .devices = "host", .host_workers = 2, .perfmodel_dir = ""};
    CHECK_OK(ctx, hetcl_model_spec_parse(ctx, "k", text, sizeof text - 1, &spec));
    CHECK_OK(ctx, hetcl_runtime_create(ctx, &ro, &rt));
    CHECK(ds != NULL);
    if (!spec || !rt || !ds) {
        hetcl_runtime_destroy(rt);
        hetcl_model_spec_destroy(spec);
        free_spirals(ds);
        return;
    }
    struct hetcl_eigenpro_result *one = train(rt, spec, ds, 0, 64);
    struct hetcl_eigenpro_result *two = train(rt, spec, ds, -1, 64);
    struct hetcl_eigenpro_result *other = train(rt, spec, ds, 0, 48);
    if (one && two && other) {
        CHECK_EQ_INT(one->n_devices, 1);
        CHECK_EQ_INT(two->n_devices, 2);
        CHECK(one->setup.m == 64 && two->setup.m == 64 && one->setup.q == two->setup.q);
        int64_t rows = 0;
        double share = 0;
        for (int i = 0; i < two->n_devices; i++) {
            const struct hetcl_eigenpro_device *d = &two->devices[i];
            printf("two workers: %s %lld rows (share %.3f, %.1f per step), %.3g s per row\n",
                   d->name, (long long) d->rows, d->share, d->rows_per_step, d->s_per_row);
            CHECK(d->rows > 0 && d->s_per_row > 0 && d->steps > 0);
            rows += d->rows;
            share += d->share;
        }
        CHECK_EQ_INT(rows, 2 * 600);
        CHECK(fabs(share - 1.0) < 1e-9);
        CHECK_EQ_INT(one->devices[0].rows, 2 * 600);
        double amax = 0;
        const double d12 = max_diff(one->alpha, two->alpha, 600 * 2, &amax);
        double amax2 = 0;
        const double d1o = max_diff(one->alpha, other->alpha, 600 * 2, &amax2);
        printf("alpha: two workers differ from one by %.3g, batch 48 by %.3g (largest %.3g)\n", d12,
               d1o, amax);
        CHECK(d12 == 0 && memcmp(one->alpha, two->alpha, 600 * 2 * sizeof(float)) == 0);
        CHECK(d1o > 1e-4 * amax);
    }
    hetcl_eigenpro_result_destroy(one);
    hetcl_eigenpro_result_destroy(two);
    hetcl_eigenpro_result_destroy(other);
    hetcl_runtime_destroy(rt);
    hetcl_model_spec_destroy(spec);
    free_spirals(ds);
}

/* The host workers' kernel block over the centers packed once (eigenpro_kblock.c) against the
 * naive double kernel matrix, at awkward sizes, both kernels. */
static void test_packed_kblock(void)
{
    enum { N = 1037, D = 37, M = 19 };
    hetcl_runtime *rt = NULL;
    const struct hetcl_runtime_options ro = {
            .devices = "host", .host_workers = 1, .perfmodel_dir = ""};
    CHECK_OK(ctx, hetcl_runtime_create(ctx, &ro, &rt));
    float *c = malloc(N * D * sizeof *c), *x = malloc(M * D * sizeof *x);
    double *cd = malloc(N * D * sizeof *cd), *xd = malloc(M * D * sizeof *xd),
           *want = malloc((size_t) M * N * sizeof *want);
    uint64_t s = 7;
    for (int i = 0; i < N * D; i++) {
        s = s * 6364136223846793005ULL + 1442695040888963407ULL;
        cd[i] = c[i] = (float) ((double) (s >> 40) / 16777216.0);
    }
    for (int i = 0; i < M * D; i++)
        xd[i] = x[i] = c[(i * 7) % (N * D)] + 0.01f * (float) (i % 5);
    for (int lap = 0; rt && lap < 2; lap++) {
        const float bw = lap ? 2.5f : 0.9f;
        struct hetcl__ep_kblock *kb = NULL;
        hetcl_handle *hx = NULL, *hk = NULL;
        CHECK_OK(ctx, hetcl__ep_kblock_make(ctx, c, N, D,
                                            lap ? HETCL_KERNEL_LAPLACIAN : HETCL_KERNEL_GAUSSIAN,
                                            bw, &kb));
        CHECK_OK(ctx, hetcl_handle_register(rt, x, M * D * sizeof(float), &hx));
        CHECK_OK(ctx, hetcl_handle_register(rt, NULL, (size_t) M * N * sizeof(float), &hk));
        CHECK_OK(ctx, hetcl__ep_kblock_submit(rt, kb, 0, hx, M, hk));
        CHECK_OK(ctx, hetcl_handle_sync_host(rt, hk, HETCL_R));
        ref_kernel_matrix_f64(lap, bw, M, N, D, xd, cd, want);
        const float *got = hetcl_handle_host_ptr(hk);
        double worst = 0;
        for (int i = 0; got && i < M * N; i++)
            worst = fmax(worst, fabs((double) got[i] - want[i]));
        printf("packed kernel block (%s): largest difference %.3g\n",
               lap ? "laplacian" : "gaussian", worst);
        CHECK(got && worst < 2e-5);
        (void) hetcl_handle_unregister(rt, hx);
        (void) hetcl_handle_unregister(rt, hk);
        hetcl__ep_kblock_free(kb);
    }
    free(c);
    free(x);
    free(cd);
    free(xd);
    free(want);
    hetcl_runtime_destroy(rt);
}

/* The centers split (eigenpro_impl.h) against the naive double reference: the forward task
 * over ranges of the centers, its chunks summed, gives K(X, C) alpha, and the backward task
 * the subsample's K(X_S, X)^T g, to float tolerance; and the same bits whether one worker took
 * every chunk or two took them cut at another chunk (nothing depends on the cut). N spans
 * three chunks, the last one partial; the subsample is every seventh center. */
enum { CS_N = 2 * HETCL__EP_CHUNK + 269, CS_D = 37, CS_M = 21, CS_L = 3 };

struct cs_out {
    float f[CS_M * CS_L];
    float h[CS_N * CS_L];
};

/* One run of the tasks with the centers cut at `cut` (0: worker 0 takes them all). */
static void cols_run(hetcl_runtime *rt, const struct hetcl__ep_kblock *kb, int64_t cut,
                     hetcl_handle *hx, hetcl_handle *ha, hetcl_handle *hg, const int64_t *ids,
                     int64_t s, struct cs_out *out)
{
    const int64_t nch = hetcl__ep_chunks(CS_N);
    const int64_t lo[2] = {0, cut}, hi[2] = {cut ? cut : CS_N, CS_N};
    hetcl_handle *hk[2] = {NULL, NULL}, *hf[2] = {NULL, NULL}, *hh[2] = {NULL, NULL},
                 *hs[2] = {NULL, NULL};
    double acc[CS_M * CS_L] = {0};
    memset(out->h, 0, sizeof out->h);
    int64_t i_at[3] = {0, 0, s};
    while (i_at[1] < s && ids[i_at[1]] < cut)
        i_at[1]++;
    const int n_w = cut ? 2 : 1;
    if (!cut)
        i_at[1] = s;
    for (int w = 0; w < n_w; w++) {
        const struct hetcl__ep_cols c = {
                .rows = CS_M, .ld_rows = CS_M, .c0 = lo[w], .c1 = hi[w], .l = CS_L};
        CHECK_OK(ctx, hetcl_handle_register(rt, NULL, (size_t) CS_M * CS_N * 4, &hk[w]));
        CHECK_OK(ctx, hetcl_handle_register(rt, NULL, (size_t) (nch * CS_M * CS_L) * 4, &hf[w]));
        CHECK_OK(ctx, hetcl_handle_register(rt, NULL, (size_t) (s * CS_L) * 4, &hh[w]));
        CHECK_OK(ctx, hetcl_handle_register(rt, NULL, (size_t) (CS_M * s) * 4, &hs[w]));
        CHECK_OK(ctx, hetcl__ep_forward_cols_submit(rt, kb, w, &c, hx, ha, hk[w], hf[w]));
        CHECK_OK(ctx, hetcl__ep_backward_cols_submit(rt, w, &c, ids, i_at[w], i_at[w + 1], CS_N,
                                                     hk[w], hg, hh[w], hs[w]));
    }
    for (int w = 0; w < n_w; w++) {
        CHECK_OK(ctx, hetcl_handle_sync_host(rt, hf[w], HETCL_R));
        CHECK_OK(ctx, hetcl_handle_sync_host(rt, hh[w], HETCL_R));
        const float *f = hetcl_handle_host_ptr(hf[w]), *h = hetcl_handle_host_ptr(hh[w]);
        hetcl__ep_sum_chunks(f, lo[w] / HETCL__EP_CHUNK, hetcl__ep_chunks(hi[w]), CS_M, CS_M, CS_L,
                             acc);
        memcpy(out->h + i_at[w] * CS_L, h + i_at[w] * CS_L,
               (size_t) ((i_at[w + 1] - i_at[w]) * CS_L) * sizeof(float));
        (void) hetcl_handle_unregister(rt, hk[w]);
        (void) hetcl_handle_unregister(rt, hf[w]);
        (void) hetcl_handle_unregister(rt, hh[w]);
        (void) hetcl_handle_unregister(rt, hs[w]);
    }
    for (int i = 0; i < CS_M * CS_L; i++)
        out->f[i] = (float) acc[i];
}

static void test_cols_split(void)
{
    hetcl_runtime *rt = NULL;
    const struct hetcl_runtime_options ro = {
            .devices = "host", .host_workers = 2, .perfmodel_dir = ""};
    CHECK_OK(ctx, hetcl_runtime_create(ctx, &ro, &rt));
    float *c = malloc(CS_N * CS_D * sizeof *c), *x = malloc(CS_M * CS_D * sizeof *x),
          *alpha = malloc(CS_N * CS_L * sizeof *alpha), *g = malloc(CS_M * CS_L * sizeof *g);
    double *cd = malloc(CS_N * CS_D * sizeof *cd), *xd = malloc(CS_M * CS_D * sizeof *xd),
           *k = malloc((size_t) CS_M * CS_N * sizeof *k);
    int64_t ids[CS_N / 7 + 1], s = 0;
    struct cs_out *runs = calloc(3, sizeof *runs);
    uint64_t st = 11;
    for (int i = 0; i < CS_N * CS_D; i++) {
        st = st * 6364136223846793005ULL + 1442695040888963407ULL;
        cd[i] = c[i] = (float) ((double) (st >> 40) / 16777216.0);
    }
    for (int i = 0; i < CS_M * CS_D; i++)
        xd[i] = x[i] = c[(i * 5) % (CS_N * CS_D)] + 0.02f * (float) (i % 3);
    for (int i = 0; i < CS_N * CS_L; i++)
        alpha[i] = (float) ((i * 37) % 101) / 50.0f - 1.0f;
    for (int i = 0; i < CS_M * CS_L; i++)
        g[i] = (float) ((i * 13) % 17) / 8.0f - 1.0f;
    for (int64_t i = 3; i < CS_N; i += 7)
        ids[s++] = i;
    struct hetcl__ep_kblock *kb = NULL;
    hetcl_handle *hx = NULL, *ha = NULL, *hg = NULL;
    if (rt) {
        CHECK_OK(ctx, hetcl__ep_kblock_make(ctx, c, CS_N, CS_D, HETCL_KERNEL_GAUSSIAN, 1.5f, &kb));
        CHECK_OK(ctx, hetcl_handle_register(rt, x, CS_M * CS_D * sizeof(float), &hx));
        CHECK_OK(ctx, hetcl_handle_register(rt, alpha, CS_N * CS_L * sizeof(float), &ha));
        CHECK_OK(ctx, hetcl_handle_register(rt, g, CS_M * CS_L * sizeof(float), &hg));
    }
    if (kb && hx && ha && hg) {
        const int64_t cuts[3] = {0, HETCL__EP_CHUNK, 2 * HETCL__EP_CHUNK};
        for (int r = 0; r < 3; r++)
            cols_run(rt, kb, cuts[r], hx, ha, hg, ids, s, &runs[r]);
        ref_kernel_matrix_f64(false, 1.5, CS_M, CS_N, CS_D, xd, cd, k);
        double fe = 0, fmaxv = 0, he = 0, hmaxv = 0;
        for (int r = 0; r < CS_M; r++)
            for (int q = 0; q < CS_L; q++) {
                double want = 0;
                for (int j = 0; j < CS_N; j++)
                    want += k[r * CS_N + j] * (double) alpha[j * CS_L + q];
                fe = fmax(fe, fabs(want - (double) runs[0].f[r * CS_L + q]));
                fmaxv = fmax(fmaxv, fabs(want));
            }
        for (int64_t i = 0; i < s; i++)
            for (int q = 0; q < CS_L; q++) {
                double want = 0;
                for (int r = 0; r < CS_M; r++)
                    want += k[r * CS_N + ids[i]] * (double) g[r * CS_L + q];
                he = fmax(he, fabs(want - (double) runs[0].h[i * CS_L + q]));
                hmaxv = fmax(hmaxv, fabs(want));
            }
        printf("centers split: K alpha within %.3g of the reference (largest %.3g), K_S^T g "
               "within %.3g (largest %.3g)\n",
               fe, fmaxv, he, hmaxv);
        CHECK(fmaxv > 0 && fe <= 1e-4 * fmaxv);
        CHECK(hmaxv > 0 && he <= 1e-4 * hmaxv);
        CHECK(memcmp(&runs[0], &runs[1], sizeof runs[0]) == 0);
        CHECK(memcmp(&runs[0], &runs[2], sizeof runs[0]) == 0);
    }
    if (hx)
        (void) hetcl_handle_unregister(rt, hx);
    if (ha)
        (void) hetcl_handle_unregister(rt, ha);
    if (hg)
        (void) hetcl_handle_unregister(rt, hg);
    hetcl__ep_kblock_free(kb);
    hetcl_runtime_destroy(rt);
    free(c);
    free(x);
    free(alpha);
    free(g);
    free(cd);
    free(xd);
    free(k);
    free(runs);
}

int main(void)
{
    CHECK_OK(NULL, hetcl_context_create(NULL, &ctx));
    test_split();
    test_two_workers();
    test_packed_kblock();
    test_cols_split();
    hetcl_context_destroy(ctx);
    return hetcl_test_finish("test_eigenpro_devices");
}
