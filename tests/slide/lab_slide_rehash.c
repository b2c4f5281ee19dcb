/*
 * Times SLIDE's rehash of every output neuron, host against OpenCL device, at the shapes of
 * models/slide-xc.json (DWTA K 3, L 25) and SimHash K 9, L 50 (slide-xc-simhash's former setting):
 * 50k neurons by 128 hidden units (change with argv[1], argv[2]). Not a test: run by hand.
 *
 *     build/tests/slide/lab_slide_rehash [neurons] [threads]
 *
 * The host is timed as the trainer hashes (hetcl__lsh_hash_dense per row, rows split over
 * threads: default the online CPUs); the device through hetcl__slide_cl_hash (transfers and
 * the task's overhead in), its first call, which builds the kernels, reported apart. Both
 * give the same buckets (checked here too). Median of 5.
 */
#define _POSIX_C_SOURCE 200809L
#include "slide/slide_cl.h"

#include <hetcl/context.h>
#include <hetcl_internal/prng.h>

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

enum { HID = 128, REPS = 5 };

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double) ts.tv_sec + (double) ts.tv_nsec * 1e-9;
}

struct part {
    const struct hetcl__lsh *h;
    const float *w;
    uint32_t *out;
    int64_t lo, hi;
};

static void *hash_part(void *arg)
{
    struct part *p = arg;
    for (int64_t a = p->lo; a < p->hi; a++)
        hetcl__lsh_hash_dense(p->h, p->w + a * HID, p->out + a * p->h->l);
    return NULL;
}

static double host_hash(const struct hetcl__lsh *h, const float *w, int64_t n, int threads,
                        uint32_t *out)
{
    pthread_t tid[64];
    struct part parts[64];
    double t0 = now_s();
    for (int i = 0; i < threads; i++) {
        parts[i] = (struct part){h, w, out, n * i / threads, n * (i + 1) / threads};
        if (i > 0 && pthread_create(&tid[i], NULL, hash_part, &parts[i]) != 0)
            hash_part(&parts[i]), tid[i] = 0;
    }
    hash_part(&parts[0]);
    for (int i = 1; i < threads; i++)
        if (tid[i])
            pthread_join(tid[i], NULL);
    return now_s() - t0;
}

static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *) a, y = *(const double *) b;
    return (x > y) - (x < y);
}

static double median(double *v)
{
    qsort(v, REPS, sizeof *v, cmp_d);
    return v[REPS / 2];
}

static void run(struct hetcl__slide_cl *cl, hetcl_context *ctx, const char *name,
                enum hetcl__lsh_kind kind, int k, int l, const float *w, int64_t n, int threads)
{
    struct hetcl__lsh *h = NULL;
    uint32_t *a = malloc((size_t) n * (size_t) l * sizeof *a);
    uint32_t *b = malloc((size_t) n * (size_t) l * sizeof *b);
    if (!a || !b || hetcl__lsh_create(kind, k, l, HID, 42, &h) != HETCL_OK) {
        fprintf(stderr, "out of memory\n");
        exit(1);
    }
    double th[REPS], td[REPS], first = 0;
    for (int r = 0; r < REPS; r++)
        th[r] = host_hash(h, w, n, threads, a);
    for (int r = -1; r < REPS; r++) {
        double t0 = now_s();
        if (hetcl__slide_cl_hash(cl, h, w, n, b) != HETCL_OK) {
            fprintf(stderr, "device: %s\n", hetcl_context_last_error(ctx));
            exit(1);
        }
        if (r < 0)
            first = now_s() - t0;
        else
            td[r] = now_s() - t0;
    }
    int same = !memcmp(a, b, (size_t) n * (size_t) l * sizeof *a);
    double mh = median(th), md = median(td);
    printf("%-8s K %d L %2d, %lld neurons: host (%d threads) %8.2f ms, device %8.2f ms "
           "(first call %.0f ms), host/device %.2fx, buckets %s\n",
           name, k, l, (long long) n, threads, mh * 1e3, md * 1e3, first * 1e3, mh / md,
           same ? "equal" : "DIFFER");
    free(a);
    free(b);
    hetcl__lsh_destroy(h);
}

int main(int argc, char **argv)
{
    const int64_t n = argc > 1 ? atoll(argv[1]) : 50000;
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    int threads = argc > 2 ? atoi(argv[2]) : (int) (cpus > 0 ? cpus : 1);
    if (n < 1 || threads < 1 || threads > 64) {
        fprintf(stderr, "usage: lab_slide_rehash [neurons >= 1] [threads 1..64]\n");
        return 2;
    }
    float *w = malloc((size_t) n * HID * sizeof *w);
    struct hetcl__rng rng;
    hetcl__rng_seed(&rng, 7);
    for (int64_t i = 0; w && i < n * HID; i++)
        w[i] = (float) hetcl__rng_normal(&rng) * 0.05f;
    hetcl_context *ctx = NULL;
    struct hetcl__slide_cl *cl = NULL;
    const struct hetcl_context_options co = {0};
    if (!w || hetcl_context_create(&co, &ctx) != HETCL_OK ||
        hetcl__slide_cl_create(ctx, &cl) != HETCL_OK) {
        fprintf(stderr, "no OpenCL device: %s\n", ctx ? hetcl_context_last_error(ctx) : "");
        return 1;
    }
    run(cl, ctx, "dwta", HETCL__LSH_DWTA, 3, 25, w, n, threads);
    run(cl, ctx, "simhash", HETCL__LSH_SIMHASH, 9, 50, w, n, threads);
    printf("device: %s\n", hetcl__slide_cl_device(cl));
    hetcl__slide_cl_destroy(cl);
    hetcl_context_destroy(ctx);
    free(w);
    return 0;
}
