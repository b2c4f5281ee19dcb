/*
 * The allreduce methods against a reference sum. Without arguments: the MPI-free parts (block
 * bitmap, traffic model) and every method but "mpi" on 1 to 4 in-process ranks (threads).
 * With --mpi (under mpirun -np 2..4): every method, this process being one rank.
 *
 * Checked for each method, type, overlap mode and block density (threshold 0):
 * - int32: the result equals the dense sum bit for bit;
 * - float32: omnireduce and sparse-allgather equal bit for bit a reference summed from zero in
 *   rank order (their order); ring and mpi are within 1e-6 relative of it (their order
 *   differs; the values are positive, so reordering moves the sum by a few ulps at most);
 * - omnireduce: each worker's uploaded and downloaded bytes equal the model's prediction from
 *   the bitmaps, with 1, 3 and 4 slots per aggregator (the sums bit for bit the same); ring:
 *   each rank sent 2(N-1) chunks.
 * Every rank regenerates every rank's tensor from the seed, so each checks its own result.
 */
#include "harness.h"

#include <hetcl/allreduce.h>
#include <hetcl/hetcl.h>
#include <hetcl_internal/prng.h>

#include <math.h>
#include <pthread.h>

enum mode { RANDOM, OVERLAP, DISJOINT };
static const char *const mode_names[] = {"random", "overlap", "disjoint"};

#define COUNT 20000 /* 79 blocks of 256, the last short */
#define BLOCK 256

/* Rank r's tensor: int(nb * density) non-zero blocks, whose values are all non-zero. */
static void gen(uint32_t *v, int rank, int n_ranks, enum mode m, double density,
                hetcl_reduce_type t)
{
    size_t nb = (COUNT + BLOCK - 1) / BLOCK, k = (size_t) ((double) nb * density);
    struct hetcl__rng rng;
    hetcl__rng_seed(&rng, 1000 + (m == OVERLAP ? 0 : (uint64_t) rank));
    uint8_t *pick = calloc(nb, 1);
    if (m == DISJOINT) {
        for (size_t i = 0; i < k; i++)
            pick[((size_t) rank * k + i) % nb] = 1;
    } else {
        for (size_t i = 0; i < k;) {
            size_t b = (size_t) hetcl__rng_below(&rng, nb);
            i += !pick[b];
            pick[b] = 1;
        }
    }
    (void) n_ranks;
    for (size_t i = 0; i < COUNT; i++) {
        uint64_t x = hetcl__rng_next(&rng);
        if (!pick[i / BLOCK]) {
            v[i] = 0;
        } else if (t == HETCL_REDUCE_I32) {
            int32_t y = (int32_t) (x % 2000001) - 1000000;
            v[i] = (uint32_t) (y ? y : 1);
        } else {
            float f = (float) ((double) (x >> 11) / 9007199254740992.0) + 0.001f;
            memcpy(&v[i], &f, 4);
        }
    }
    free(pick);
}

struct job {
    hetcl_comm *comm;
    hetcl_allreduce_method method;
    hetcl_reduce_type type;
    enum mode mode;
    double density;
    bool dedicated;
    int slots; /* omnireduce's slots per aggregator */
    int failures;
};

static bool exact(const struct job *j)
{
    return j->type == HETCL_REDUCE_I32 || j->method == HETCL_ALLREDUCE_OMNIREDUCE ||
           j->method == HETCL_ALLREDUCE_SPARSE_ALLGATHER;
}

/* OmniReduce's rounds on aggregator a of A (P columns in all, S slots each): a column takes
 * one round for its head and one for each later block non-zero in some worker, and a slot
 * runs until its longest column ends, independently of the other slots. */
static uint64_t omni_rounds(uint8_t *const *bm, int n_workers, size_t nb, int a, int A, int S)
{
    size_t P = (size_t) 4 * (size_t) A < nb ? (size_t) 4 * (size_t) A : nb;
    size_t n_cols = (size_t) a < P ? (P - (size_t) a + (size_t) A - 1) / (size_t) A : 0;
    size_t slots = n_cols < (size_t) S ? n_cols : (size_t) S;
    uint64_t total = 0;
    for (size_t s = 0; s < slots; s++) {
        uint64_t longest = 0;
        for (size_t k = s; k < n_cols; k += slots) {
            uint64_t len = 1;
            for (size_t b = (size_t) a + k * (size_t) A + P; b < nb; b += P) {
                bool any = false;
                for (int w = 0; w < n_workers; w++)
                    any = any || bm[w][b];
                len += any;
            }
            longest = len > longest ? len : longest;
        }
        total += longest;
    }
    return total;
}

/* One rank's part: reduce, then compare with the reference and the model. */
static void run_rank(struct job *j)
{
    int n = hetcl_comm_size(j->comm), r = hetcl_comm_rank(j->comm);
    int A = j->dedicated ? 1 : 0, n_workers = j->dedicated ? n - 1 : n;
    bool works = r < n_workers;
    size_t nb = (COUNT + BLOCK - 1) / BLOCK;
    uint32_t *v = malloc(COUNT * 4), *ref = calloc(COUNT, 4), *other = malloc(COUNT * 4);
    uint8_t **bm = calloc((size_t) n, sizeof *bm);
    for (int q = 0; q < n_workers; q++) {
        gen(other, q, n, j->mode, j->density, j->type);
        bm[q] = malloc(nb);
        hetcl_block_bitmap(other, COUNT, j->type, BLOCK, 0, false, bm[q]);
        for (size_t i = 0; i < COUNT; i++) {
            if (j->type == HETCL_REDUCE_I32) {
                ref[i] += other[i];
            } else {
                float a, b;
                memcpy(&a, &ref[i], 4);
                memcpy(&b, &other[i], 4);
                a += b;
                memcpy(&ref[i], &a, 4);
            }
        }
        if (q == r)
            memcpy(v, other, COUNT * 4);
    }
    struct hetcl_allreduce_options o = {.method = j->method,
                                        .n_aggregators = A,
                                        .dedicated_aggregators = j->dedicated,
                                        .columns_per_aggregator = 4,
                                        .slots_per_aggregator = j->slots};
    struct hetcl_allreduce_stats st;
    hetcl_status s = hetcl_allreduce(j->comm, works ? v : NULL, COUNT, j->type, &o, &st);
    int fails = 0;
    if (s != HETCL_OK) {
        fprintf(stderr, "rank %d: %s: %s\n", r, hetcl_status_name(s), hetcl_status_str(s));
        fails++;
    }
    for (size_t i = 0; works && s == HETCL_OK && i < COUNT; i++) {
        bool ok = v[i] == ref[i];
        if (!ok && !exact(j)) {
            float a, b;
            memcpy(&a, &v[i], 4);
            memcpy(&b, &ref[i], 4);
            ok = fabsf(a - b) <= 1e-6f * fabsf(b);
        }
        if (!ok && fails++ < 3)
            fprintf(stderr, "rank %d value %zu: %08x, reference %08x\n", r, i, v[i], ref[i]);
    }
    if (s == HETCL_OK && j->method == HETCL_ALLREDUCE_OMNIREDUCE && works) {
        uint64_t *up = calloc((size_t) n, sizeof *up), down;
        hetcl_omnireduce_model((const uint8_t *const *) bm, n_workers, COUNT, BLOCK,
                               4 * (A ? A : n), up, &down);
        if (st.worker_up_bytes != up[r] || st.worker_down_bytes != down) {
            fprintf(stderr, "rank %d bytes up %llu down %llu, model %llu %llu\n", r,
                    (unsigned long long) st.worker_up_bytes,
                    (unsigned long long) st.worker_down_bytes, (unsigned long long) up[r],
                    (unsigned long long) down);
            fails++;
        }
        free(up);
    }
    int me_agg = j->dedicated ? (r == n - 1 ? 0 : -1) : r;
    if (s == HETCL_OK && j->method == HETCL_ALLREDUCE_OMNIREDUCE && me_agg >= 0) {
        uint64_t want = omni_rounds(bm, n_workers, nb, me_agg, A ? A : n, j->slots);
        if (st.rounds != want) {
            fprintf(stderr, "rank %d: %llu rounds as an aggregator, expected %llu\n", r,
                    (unsigned long long) st.rounds, (unsigned long long) want);
            fails++;
        }
    }
    if (s == HETCL_OK && j->method == HETCL_ALLREDUCE_RING && n > 1) {
        /* 2(N-1) chunks of COUNT/N values, each within a value of the mean */
        double want = 2.0 * (n - 1) * COUNT * 4 / n;
        if (fabs((double) st.bytes_sent - want) > 2.0 * (n - 1) * 4 ||
            fabs((double) st.bytes_received - want) > 2.0 * (n - 1) * 4) {
            fprintf(stderr, "rank %d ring sent %llu bytes, expected %.0f\n", r,
                    (unsigned long long) st.bytes_sent, want);
            fails++;
        }
    }
    for (int q = 0; q < n; q++)
        free(bm[q]);
    free(bm);
    free(v);
    free(ref);
    free(other);
    j->failures = fails;
}

static void *thread_main(void *arg)
{
    run_rank(arg);
    return NULL;
}

static const double densities[] = {1.0, 0.4, 0.1, 0.04, 0.01, 0.0};
#define N_DENS (sizeof densities / sizeof densities[0])

/* OmniReduce runs with one slot per aggregator (its 4 columns advancing together), 3 (slots
 * of 2, 1 and 1 columns, running independently) and 4 (one column each); the other methods
 * once (their slot count is ignored). */
static const int slot_counts[] = {1, 3, 4};
static int n_slots(int method)
{
    return method == HETCL_ALLREDUCE_OMNIREDUCE ? (int) (sizeof slot_counts / sizeof *slot_counts)
                                                : 1;
}

static void sweep_local(hetcl_context *ctx)
{
    for (int n = 1; n <= 4; n++) {
        for (int m = HETCL_ALLREDUCE_RING; m < HETCL_ALLREDUCE_METHOD_COUNT; m++) {
            for (int ded = 0; ded <= (m == HETCL_ALLREDUCE_OMNIREDUCE && n > 1); ded++) {
                for (int t = 0; t < 2 * n_slots(m); t++) {
                    for (int mode = 0; mode < 3; mode++) {
                        for (size_t d = 0; d < N_DENS; d++) {
                            hetcl_comm *comms[4];
                            CHECK_OK(ctx, hetcl_comm_create_local(ctx, n, comms));
                            struct job jobs[4];
                            pthread_t th[4];
                            for (int r = 0; r < n; r++) {
                                hetcl_comm_set_timeout(comms[r], 5000000000ull);
                                jobs[r] = (struct job){comms[r],
                                                       (hetcl_allreduce_method) m,
                                                       (hetcl_reduce_type) (t % 2),
                                                       (enum mode) mode,
                                                       densities[d],
                                                       ded,
                                                       slot_counts[t / 2],
                                                       0};
                                pthread_create(&th[r], NULL, thread_main, &jobs[r]);
                            }
                            int fails = 0;
                            for (int r = 0; r < n; r++) {
                                pthread_join(th[r], NULL);
                                fails += jobs[r].failures;
                                hetcl_comm_destroy(comms[r]);
                            }
                            if (fails) {
                                fprintf(stderr,
                                        "FAILED: %d ranks, %s%s, %d slots, %s, %s, density %g\n", n,
                                        hetcl_allreduce_method_name(m), ded ? " (dedicated)" : "",
                                        slot_counts[t / 2], t % 2 ? "int32" : "float32",
                                        mode_names[mode], densities[d]);
                                hetcl_test_failures++;
                            }
                        }
                    }
                }
            }
        }
    }
}

static void sweep_mpi(hetcl_context *ctx)
{
    hetcl_comm *comm;
    hetcl_status s = hetcl_comm_create_mpi(ctx, &comm);
    if (s == HETCL_ERR_UNSUPPORTED) {
        printf("SKIPPED: built without MPI\n");
        exit(HETCL_TEST_SKIP);
    }
    CHECK_OK(ctx, s);
    if (s != HETCL_OK)
        return;
    hetcl_comm_set_timeout(comm, 60000000000ull);
    int n = hetcl_comm_size(comm);
    for (int m = 0; m < HETCL_ALLREDUCE_METHOD_COUNT; m++)
        for (int ded = 0; ded <= (m == HETCL_ALLREDUCE_OMNIREDUCE && n > 1); ded++)
            for (int t = 0; t < 2 * n_slots(m); t++)
                for (int mode = 0; mode < 3; mode++)
                    for (size_t d = 0; d < N_DENS; d++) {
                        struct job j = {comm,
                                        (hetcl_allreduce_method) m,
                                        (hetcl_reduce_type) (t % 2),
                                        (enum mode) mode,
                                        densities[d],
                                        ded,
                                        slot_counts[t / 2],
                                        0};
                        run_rank(&j);
                        if (j.failures) {
                            fprintf(stderr,
                                    "FAILED: rank %d of %d, %s%s, %d slots, %s, %s, density %g\n",
                                    hetcl_comm_rank(comm), n, hetcl_allreduce_method_name(m),
                                    ded ? " (dedicated)" : "", slot_counts[t / 2],
                                    t % 2 ? "int32" : "float32", mode_names[mode], densities[d]);
                            hetcl_test_failures++;
                        }
                    }
    hetcl_comm_destroy(comm);
}

static void test_bitmap_and_model(void)
{
    float x[600] = {0};
    x[300] = 1e-3f; /* block 1 */
    x[599] = -2.0f; /* block 2, the short last block */
    uint8_t bm[3];
    CHECK_EQ_INT(hetcl_block_bitmap(x, 600, HETCL_REDUCE_F32, 256, 0, false, bm), 2);
    CHECK(bm[0] == 0 && bm[1] == 1 && bm[2] == 1);
    /* a threshold drops block 1 and zeroes its values */
    CHECK_EQ_INT(hetcl_block_bitmap(x, 600, HETCL_REDUCE_F32, 256, 0.01, true, bm), 1);
    CHECK(bm[1] == 0 && x[300] == 0.0f && x[599] == -2.0f);
    /* two workers, 5 blocks (the last of 44 values), 2 columns: heads 0, 1 */
    const uint8_t w0[5] = {0, 0, 1, 0, 1}, w1[5] = {1, 0, 1, 1, 0};
    const uint8_t *bms[2] = {w0, w1};
    uint64_t up[2], down;
    hetcl_omnireduce_model(bms, 2, 4 * 256 + 44, 256, 2, up, &down);
    uint64_t full = 256 * 4 + 4, last = 44 * 4 + 4;
    CHECK_EQ_INT(up[0], 2 * full + full + last);
    CHECK_EQ_INT(up[1], 2 * full + 2 * full);
    CHECK_EQ_INT(down, 2 * full + 2 * full + last);
    hetcl_allreduce_method m;
    CHECK(hetcl_allreduce_method_parse("sparse-allgather", &m) &&
          m == HETCL_ALLREDUCE_SPARSE_ALLGATHER);
    CHECK(!hetcl_allreduce_method_parse("dense", &m));
}

int main(int argc, char **argv)
{
    hetcl_context *ctx = NULL;
    if (hetcl_context_create(NULL, &ctx) != HETCL_OK)
        return 1;
    if (argc > 1 && strcmp(argv[1], "--mpi") == 0) {
        sweep_mpi(ctx);
    } else {
        test_bitmap_and_model();
        sweep_local(ctx);
    }
    hetcl_context_destroy(ctx);
    return hetcl_test_finish("test_allreduce");
}
