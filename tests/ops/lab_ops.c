/*
 * lab_ops: times every OpenCL operator at the shapes of our models (llm.c dev/ style; not a
 * test). For each batch size: the MLP's (784-256-128-10) GEMMs in every pass with every GEMM
 * variant forced and with the measured choice, its bias + activation, loss, SGD and
 * reductions; LeNet's (1x28x28, conv 5x5x6 pad 2, pool, conv 5x5x16, pool, dense 120-84-10)
 * convolutions and pooling. Median wall time of `reps` runs (enqueue to completion, data
 * already on the device), GFLOP/s for GEMM and conv, GB/s for the rest.
 *
 *     lab_ops [reps] [batch ...]        default: 20 runs, batches 64 and 256
 *
 * Every figure is one task pinned to one worker of a runtime, so it includes the runtime's
 * per-task overhead (submission, scheduling, completion callback): what training sees. All
 * workers are timed in turn, host ones included (one GEMM there, no variants). The machine is
 * shared: run it alone, take the figures of several runs.
 */
#include "harness.h"
#include "ops_util.h"

#include <hetcl/gemm_choice.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static struct ops_env E;
static int reps = 20;

/* Allocates n buffers of the given sizes (filled with small values) and times fn. */
static double time_op(const struct hetcl_codelet *fn, const size_t *bytes, unsigned n,
                      const void *args, size_t args_size)
{
    struct ops_buf b[8];
    for (unsigned i = 0; i < n; i++) {
        ops_buf_alloc(&b[i], bytes[i], HETCL_RW);
        memset(b[i].host, 0, bytes[i]); /* zeros: valid labels, finite values everywhere */
    }
    const double ns = ops_time_ns(&E, fn, b, n, args, args_size, reps);
    for (unsigned i = 0; i < n; i++)
        ops_buf_free(&b[i]);
    return ns;
}

/* Runs the codelet enough times for the GEMM measurement of every GEMM inside it to finish
 * (4 variants x (1 warm-up + samples), and slack), so that the timed runs see the choice. */
static void warm_up(const struct hetcl_codelet *fn, const size_t *bytes, unsigned n,
                    const void *args, size_t args_size)
{
    const int keep = reps;
    if (reps < HETCL_GEMM_N_VARIANTS * (HETCL_GEMM_SAMPLES + 1) + 4)
        reps = HETCL_GEMM_N_VARIANTS * (HETCL_GEMM_SAMPLES + 1) + 4;
    time_op(fn, bytes, n, args, args_size);
    reps = keep;
}

static void report(const char *op, const char *shape, const char *how, double ns, double flops,
                   double bytes)
{
    if (ns <= 0) {
        printf("%-16s %-28s %-12s failed: %s\n", op, shape, how, hetcl_context_last_error(E.ctx));
        return;
    }
    printf("%-16s %-28s %-12s %10.1f us", op, shape, how, ns / 1e3);
    if (flops > 0)
        printf(" %8.1f GFLOP/s", flops / ns);
    if (bytes > 0)
        printf(" %8.2f GB/s", bytes / ns);
    printf("\n");
}

static double gemm(int64_t m, int64_t n, int64_t k, bool ta, bool tb, const char *variant,
                   const char *label)
{
    if (variant)
        setenv("HETCL_GEMM_VARIANT", variant, 1);
    else
        unsetenv("HETCL_GEMM_VARIANT");
    const struct hetcl_op_gemm_args a = {
            .m = m, .n = n, .k = k, .trans_a = ta, .trans_b = tb, .alpha = 1.0f};
    const size_t bytes[3] = {(size_t) (m * k) * 4, (size_t) (k * n) * 4, (size_t) (m * n) * 4};
    if (!variant)
        warm_up(&hetcl_op_gemm, bytes, 3, &a, sizeof a);
    const double ns = time_op(&hetcl_op_gemm, bytes, 3, &a, sizeof a);
    char shape[64], how[32];
    snprintf(shape, sizeof shape, "%s %c%c %lldx%lldx%lld", label, ta ? 't' : 'n', tb ? 't' : 'n',
             (long long) m, (long long) n, (long long) k);
    if (!variant) {
        char key[256];
        struct hetcl_gemm_choice c;
        hetcl_ops_gemm_desc_key(E.info.desc, key, sizeof key);
        const bool known =
                ops_env_is_cl(&E) && hetcl_ops_gemm_choice(E.ctx, key, m, n, k, ta, tb, &c);
        snprintf(how, sizeof how, "=%s%s",
                 known               ? hetcl_gemm_variant_name(c.variant)
                 : ops_env_is_cl(&E) ? "?"
                                     : "host",
                 known && !c.decided ? "*" : "");
    } else {
        snprintf(how, sizeof how, "%s", variant);
    }
    report("gemm", shape, how, ns, 2.0 * (double) m * (double) n * (double) k, 0);
    unsetenv("HETCL_GEMM_VARIANT");
    return ns;
}

static void mlp(int64_t b)
{
    static const char *const variants[] = {"tiled",    "tiled_mfast", "clblast", "naive",
                                           "tiled_wg", "packed",      NULL};
    static const int64_t dims[] = {784, 256, 128, 10};
    printf("\n== MLP 784-256-128-10, batch %lld ==\n", (long long) b);
    double total_ns = 0, total_flops = 0;
    for (int l = 0; l < 3; l++) {
        const int64_t in = dims[l], out = dims[l + 1];
        /* forward Y = X W^T; backward dW = dY^T X, dX = dY W (not for the first layer) */
        const int64_t shapes[3][3] = {{b, out, in}, {out, in, b}, {b, in, out}};
        const bool tr[3][2] = {{false, true}, {true, false}, {false, false}};
        const char *labels[3] = {"fwd", "dW", "dX"};
        for (int p = 0; p < 3; p++) {
            if (p == 2 && l == 0)
                continue;
            for (int v = ops_env_is_cl(&E) ? 0 : 4; v < 5; v++) {
                const double ns = gemm(shapes[p][0], shapes[p][1], shapes[p][2], tr[p][0], tr[p][1],
                                       variants[v], labels[p]);
                if (!variants[v] && ns > 0) {
                    total_ns += ns;
                    total_flops += 2.0 * (double) (shapes[p][0] * shapes[p][1] * shapes[p][2]);
                }
            }
        }
    }
    printf("%-16s %-28s %-12s %10.1f us %8.1f GFLOP/s\n", "gemm", "all MLP GEMMs", "chosen",
           total_ns / 1e3, total_flops / total_ns);
    char shape[64];
    for (int l = 1; l < 3; l++) {
        const int64_t n = dims[l];
        const struct hetcl_op_bias_act_args a = {.rows = b, .cols = n, .act = HETCL_ACT_RELU};
        const size_t fb[3] = {(size_t) (b * n) * 4, (size_t) n * 4, (size_t) (b * n) * 4};
        const size_t bb[4] = {fb[0], fb[0], fb[0], (size_t) n * 4};
        snprintf(shape, sizeof shape, "%lldx%lld relu", (long long) b, (long long) n);
        report("bias_act_fwd", shape, "", time_op(&hetcl_op_bias_act_fwd, fb, 3, &a, sizeof a), 0,
               2.0 * (double) fb[0]);
        report("bias_act_bwd", shape, "", time_op(&hetcl_op_bias_act_bwd, bb, 4, &a, sizeof a), 0,
               3.0 * (double) fb[0]);
    }
    const struct hetcl_op_xent_args x = {.rows = b, .classes = 10, .scale = 1.0f / (float) b};
    const size_t xb[4] = {(size_t) b * 40, (size_t) b * 4, (size_t) b * 40, (size_t) b * 4};
    snprintf(shape, sizeof shape, "%lldx10", (long long) b);
    report("softmax_xent", shape, "", time_op(&hetcl_op_softmax_xent, xb, 4, &x, sizeof x), 0,
           (double) (xb[0] + xb[1] + xb[2] + xb[3]));
    const struct hetcl_op_reduce_args r = {.rows = b, .cols = 10};
    const size_t rb[3] = {(size_t) b * 40, (size_t) b * 4, 4};
    report("count_correct", shape, "", time_op(&hetcl_op_count_correct, rb, 3, &r, sizeof r), 0,
           (double) (rb[0] + rb[1]));
    const int64_t params = 784 * 256 + 256 + 256 * 128 + 128 + 128 * 10 + 10;
    const struct hetcl_op_sgd_args s = {.n = params, .lr = 0.1f, .momentum = 0.9f};
    const size_t sb[3] = {(size_t) params * 4, (size_t) params * 4, (size_t) params * 4};
    snprintf(shape, sizeof shape, "n=%lld (all weights)", (long long) params);
    report("sgd", shape, "momentum", time_op(&hetcl_op_sgd, sb, 3, &s, sizeof s), 0,
           5.0 * (double) sb[0]);
    const struct hetcl_op_reduce_args sr = {.rows = 1, .cols = params};
    const size_t sumb[2] = {(size_t) params * 4, 4};
    report("sum", shape, "", time_op(&hetcl_op_sum, sumb, 2, &sr, sizeof sr), 0, (double) sumb[0]);
    /* the replica merge's pack (no block changed: every value compared), and the copy of the
     * replica into its base before the batch (concat of one row) */
    const struct hetcl_op_block_pack_args pk = {.n = params, .block = 256};
    const size_t pb[2] = {(size_t) params * 4,
                          (size_t) (params + hetcl_op_block_pack_head_words(params, 256)) * 4};
    report("block_pack", shape, "unchanged", time_op(&hetcl_op_block_pack, pb, 2, &pk, sizeof pk),
           0, 2.0 * (double) sb[0]);
    const struct hetcl_op_concat_args cp = {.rows = 1, .cols = params, .out_cols = params};
    report("concat", shape, "base copy", time_op(&hetcl_op_concat, pb, 2, &cp, sizeof cp), 0,
           2.0 * (double) sb[0]);
}

static void lenet(int64_t b)
{
    printf("\n== LeNet, batch %lld ==\n", (long long) b);
    const struct hetcl_op_conv2d_args c[2] = {{.batch = b,
                                               .in_c = 1,
                                               .in_h = 28,
                                               .in_w = 28,
                                               .out_c = 6,
                                               .k_h = 5,
                                               .k_w = 5,
                                               .stride = 1,
                                               .pad = 2},
                                              {.batch = b,
                                               .in_c = 6,
                                               .in_h = 14,
                                               .in_w = 14,
                                               .out_c = 16,
                                               .k_h = 5,
                                               .k_w = 5,
                                               .stride = 1,
                                               .pad = 0}};
    const struct hetcl_op_pool2d_args p[2] = {
            {.batch = b, .channels = 6, .in_h = 28, .in_w = 28, .k = 2, .stride = 2},
            {.batch = b, .channels = 16, .in_h = 10, .in_w = 10, .k = 2, .stride = 2}};
    char shape[64];
    for (int i = 0; i < 2; i++) {
        const struct hetcl_op_conv2d_args *a = &c[i];
        const int64_t P = (a->in_h + 2 * a->pad - a->k_h) / a->stride + 1;
        const size_t nx = (size_t) (b * a->in_c * a->in_h * a->in_w) * 4;
        const size_t nw = (size_t) (a->out_c * a->in_c * a->k_h * a->k_w) * 4;
        const size_t ny = (size_t) (b * a->out_c * P * P) * 4, nb = (size_t) a->out_c * 4;
        const double flops =
                2.0 * (double) (b * a->out_c * P * P) * (double) (a->in_c * a->k_h * a->k_w);
        const size_t fb[4] = {nx, nw, nb, ny}, bb[6] = {nx, nw, ny, nx, nw, nb};
        snprintf(shape, sizeof shape, "conv%d %lldx%lldx%lld->%lld", i + 1, (long long) a->in_c,
                 (long long) a->in_h, (long long) a->in_w, (long long) a->out_c);
        warm_up(&hetcl_op_conv2d_fwd, fb, 4, a, sizeof *a);
        report("conv2d_fwd", shape, "im2col+gemm",
               time_op(&hetcl_op_conv2d_fwd, fb, 4, a, sizeof *a), flops, 0);
        warm_up(&hetcl_op_conv2d_bwd, bb, 6, a, sizeof *a);
        report("conv2d_bwd", shape, "im2col+gemm",
               time_op(&hetcl_op_conv2d_bwd, bb, 6, a, sizeof *a), 2.0 * flops, 0);
        const struct hetcl_op_pool2d_args *q = &p[i];
        const size_t px = (size_t) (b * q->channels * q->in_h * q->in_w) * 4, py = px / 4;
        const size_t mf[3] = {px, py, py}, mb[3] = {py, py, px};
        snprintf(shape, sizeof shape, "pool%d %lldx%lldx%lld k2", i + 1, (long long) q->channels,
                 (long long) q->in_h, (long long) q->in_w);
        report("maxpool_fwd", shape, "", time_op(&hetcl_op_maxpool_fwd, mf, 3, q, sizeof *q), 0,
               (double) (px + 2 * py));
        report("maxpool_bwd", shape, "", time_op(&hetcl_op_maxpool_bwd, mb, 3, q, sizeof *q), 0,
               (double) (px + 2 * py));
    }
}

/* The 1-minute load average, so that figures taken on a shared machine say how shared. */
static void print_load(const char *when)
{
    FILE *f = fopen("/proc/loadavg", "r");
    double l1 = -1;
    if (f) {
        if (fscanf(f, "%lf", &l1) != 1)
            l1 = -1;
        fclose(f);
    }
    printf("load average (1 min) %s: %.2f\n", when, l1);
}

int main(int argc, char **argv)
{
    int64_t batches[8] = {64, 256};
    int n_b = 2;
    if (argc > 1)
        reps = atoi(argv[1]) > 0 ? atoi(argv[1]) : 20;
    if (argc > 2) {
        n_b = 0;
        for (int i = 2; i < argc && n_b < 8; i++)
            batches[n_b++] = atoll(argv[i]);
    }
    ops_env_init(&E);
    printf("%d runs per figure (median)\n", reps);
    print_load("before");
    for (size_t w = 0; w < E.n_workers; w++) {
        if (!ops_env_use_worker(&E, w))
            continue;
        for (int i = 0; i < n_b; i++) {
            mlp(batches[i]);
            lenet(batches[i]);
        }
    }
    print_load("after");
    struct hetcl_gemm_choice ch[64];
    const size_t n = hetcl_ops_gemm_choices(E.ctx, ch, 64);
    printf("\n== GEMM choices (%zu) ==\n", n);
    for (size_t i = 0; i < n && i < 64; i++) {
        /* the chosen variant's fastest device time (profiling events), without the runtime */
        const double best = ch[i].best_ns[ch[i].variant];
        printf("%5lld %5lld %5lld %c%c %-12s %7.1f GFLOP/s on the device |", (long long) ch[i].m,
               (long long) ch[i].n, (long long) ch[i].k, ch[i].trans_a ? 't' : 'n',
               ch[i].trans_b ? 't' : 'n', hetcl_gemm_variant_name(ch[i].variant),
               best > 0 ? 2.0 * (double) ch[i].m * (double) ch[i].n * (double) ch[i].k / best
                        : 0.0);
        for (int v = 0; v < HETCL_GEMM_N_VARIANTS; v++)
            if (ch[i].best_ns[v] > 0)
                printf(" %s=%.0fus%s", hetcl_gemm_variant_name((hetcl_gemm_variant) v),
                       ch[i].best_ns[v] / 1e3, ch[i].dropped[v] ? "(dropped)" : "");
        printf("%s\n", ch[i].loaded ? " (from cache)" : ch[i].decided ? "" : " (measuring)");
    }
    ops_env_deinit(&E);
    return 0;
}
