/*
 * Across ranks, every rank stops after the same sync (models/src/train/train_dist.c): two
 * in-process ranks (threads on a local communicator, each with its own context and runtime)
 * train with a sync every 64 examples, and
 *   - the caller's stop callback asks on rank 1 alone (after a few polls): both ranks end
 *     interrupted, after the same number of syncs, with the same model, rank 1 naming its own
 *     reason and rank 0 naming rank 1, and rank 0's checkpoint (momentum 0.9: every rank's
 *     own momentum saved) resumes to the model of a run never stopped, bit for bit;
 *   - a time budget that only rank 1 runs out of: both end by the time budget after the same
 *     syncs;
 *   - every count of examples is global (the ranks' together, as one process counts them),
 *     after the stop and after resuming on 2, 3 and 1 ranks;
 *   - with a dedicated aggregator (3 ranks, the last one only aggregating): the two training
 *     ranks train the model of 2 plain ranks bit for bit, the aggregator ends with them after
 *     as many syncs; a checkpoint written so (stopped on rank 1) resumes on 2 plain ranks, and
 *     the 2 plain ranks' checkpoint resumes with a dedicated aggregator, both to the model of
 *     the run never stopped, with exact global counts; a time budget spent on one training
 *     rank ends every rank, the aggregator included.
 * Before the vote, the rank that stopped left the other waiting at its next sync until the
 * communicator's timeout (here 20 s), which then failed its run.
 */
#include "harness.h"

#include <hetcl/allreduce.h>
#include <hetcl/context.h>
#include <hetcl/data.h>
#include <hetcl/model_spec.h>
#include <hetcl/runtime.h>
#include <hetcl/train.h>

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define RANKS     2
#define MAX_RANKS 3
#define N_TRAIN   4000
#define EPOCHS    3

static const char *spec_json =
        "{\"schema_version\": 1, \"name\": \"small\", \"input\": {\"shape\": [32]},"
        " \"layers\": [{\"type\": \"dense\", \"units\": 32, \"activation\": \"relu\"},"
        " {\"type\": \"dense\", \"units\": 4}], \"loss\": \"softmax_cross_entropy\"}";

struct rank_job {
    hetcl_comm *comm;
    int rank;
    const char *ckpt;
    bool resume;
    int stop_after;      /* rank's stop callback asks after this many polls; 0: never */
    double time_s;       /* the rank's time budget; 0: none */
    bool dedicated;      /* the last rank only aggregates (set on every rank of the run) */
    atomic_int polls;    /* the stop callback's calls */
    hetcl_status status; /* hetcl_train_run's */
    char error[512];     /* its detail when it failed */
    struct hetcl_train_result *result;
};

static const char *stop_cb(void *user)
{
    struct rank_job *j = user;
    int n = atomic_fetch_add(&j->polls, 1) + 1;
    return j->stop_after > 0 && n >= j->stop_after ? "test stop" : NULL;
}

static void *rank_main(void *arg)
{
    struct rank_job *j = arg;
    hetcl_context *ctx = NULL;
    hetcl_runtime *rt = NULL;
    hetcl_model_spec *spec = NULL;
    hetcl_dataset *train = NULL;
    j->status = hetcl_context_create(NULL, &ctx);
    struct hetcl_runtime_options ro = {.devices = "host", .host_workers = 1, .perfmodel_dir = ""};
    struct hetcl_blobs_options bo = {.n = N_TRAIN, .n_features = 32, .n_classes = 4, .seed = 7};
    /* One runtime at a time: their hwloc topology loads race inside libudev (a global of
     * its random seed, as ThreadSanitizer reports), which separate processes never share. */
    static pthread_mutex_t create_lock = PTHREAD_MUTEX_INITIALIZER;
    pthread_mutex_lock(&create_lock);
    if (j->status == HETCL_OK)
        j->status = hetcl_runtime_create(ctx, &ro, &rt);
    pthread_mutex_unlock(&create_lock);
    if (j->status == HETCL_OK)
        j->status = hetcl_model_spec_parse(ctx, "small", spec_json, strlen(spec_json), &spec);
    if (j->status == HETCL_OK)
        j->status = hetcl_dataset_generate_blobs(ctx, &bo, &train);
    struct hetcl_train_options o = {.algo = HETCL_TRAIN_SINGLE,
                                    .epochs = EPOCHS,
                                    .seed = 5,
                                    .momentum = 0.9,
                                    .host_batch = {.batch = 16},
                                    .comm = j->comm,
                                    .sync_every = 64,
                                    .allreduce = {.method = HETCL_ALLREDUCE_OMNIREDUCE,
                                                  .n_aggregators = j->dedicated ? 1 : 0,
                                                  .dedicated_aggregators = j->dedicated},
                                    .time_s = j->time_s,
                                    .checkpoint_path = j->ckpt,
                                    .resume = j->resume,
                                    .stop = stop_cb,
                                    .stop_user = j};
    if (j->status == HETCL_OK)
        j->status = hetcl_train_run(ctx, rt, spec, train, NULL, &o, &j->result);
    if (j->status != HETCL_OK)
        snprintf(j->error, sizeof j->error, "%s", hetcl_context_last_error(ctx));
    hetcl_dataset_destroy(train);
    hetcl_model_spec_destroy(spec);
    hetcl_runtime_destroy(rt);
    hetcl_context_destroy(ctx);
    return NULL;
}

/* Runs n ranks to their end; false when they could not be started. */
static bool run_n_ranks(struct rank_job *jobs, int n)
{
    hetcl_context *ctx = NULL;
    hetcl_comm *comm[MAX_RANKS] = {NULL};
    if (hetcl_context_create(NULL, &ctx) != HETCL_OK ||
        hetcl_comm_create_local(ctx, n, comm) != HETCL_OK) {
        hetcl_context_destroy(ctx);
        return false;
    }
    pthread_t th[MAX_RANKS];
    for (int r = 0; r < n; r++) {
        hetcl_comm_set_timeout(comm[r], 20ull * 1000000000ull);
        jobs[r].comm = comm[r];
        jobs[r].rank = r;
        CHECK_EQ_INT(pthread_create(&th[r], NULL, rank_main, &jobs[r]), 0);
    }
    for (int r = 0; r < n; r++)
        pthread_join(th[r], NULL);
    for (int r = 0; r < n; r++)
        hetcl_comm_destroy(comm[r]);
    hetcl_context_destroy(ctx);
    return true;
}

static bool run_ranks(struct rank_job jobs[RANKS])
{
    return run_n_ranks(jobs, RANKS);
}

static void release_n(struct rank_job *jobs, int n)
{
    for (int r = 0; r < n; r++)
        hetcl_train_result_destroy(jobs[r].result);
}

static void release(struct rank_job jobs[RANKS])
{
    release_n(jobs, RANKS);
}

/* Every rank's result counts the examples as one process would: the ranks' together, each
 * example of an epoch once, a resumed run's earlier ones included (before, a resumed rank added
 * its own shard to the checkpoint's global count). The epochs' entries alike, the resumed
 * partial epoch's included; each rank's own share is rank_examples (this run's shards). */
static void check_global_examples(const struct rank_job *jobs, int n, uint64_t want_total,
                                  uint64_t want_own)
{
    uint64_t own = 0;
    for (int r = 0; r < n; r++) {
        const struct hetcl_train_result *x = jobs[r].result;
        if (!x)
            continue;
        if (x->dedicated_aggregator) { /* trains nothing, counts nothing */
            CHECK_EQ_INT(x->rank_examples, 0);
            continue;
        }
        CHECK_EQ_INT(x->examples, want_total);
        CHECK_EQ_INT(x->n_epochs, EPOCHS);
        for (int64_t e = 0; e < x->n_epochs; e++)
            CHECK_EQ_INT(x->epochs[e].examples, N_TRAIN);
        own += x->rank_examples;
        printf("  %d ranks, rank %d: %llu examples, %llu its own\n", n, r,
               (unsigned long long) x->examples, (unsigned long long) x->rank_examples);
    }
    CHECK_EQ_INT(own, want_own); /* the ranks' own, together: this run's examples */
}

/* Both ranks ended OK, after the same syncs, with the same model. */
static bool same_end(const struct rank_job jobs[RANKS])
{
    for (int r = 0; r < RANKS; r++) {
        CHECK_EQ_INT(jobs[r].status, HETCL_OK);
        if (jobs[r].status != HETCL_OK) {
            fprintf(stderr, "rank %d: %s\n", r, jobs[r].error);
            return false;
        }
    }
    const struct hetcl_train_result *a = jobs[0].result, *b = jobs[1].result;
    printf("rank 0: %llu syncs, %llu examples, stopped by %d (%s); rank 1: %llu syncs (%s)\n",
           (unsigned long long) a->n_syncs, (unsigned long long) a->examples, (int) a->stopped_by,
           a->interrupted_by, (unsigned long long) b->n_syncs, b->interrupted_by);
    CHECK_EQ_INT(a->n_syncs, b->n_syncs);
    CHECK(a->model_hash == b->model_hash);
    CHECK_EQ_INT(a->stopped_by, b->stopped_by);
    return a->n_syncs == b->n_syncs;
}

/* dst := src (each resumed run writes its own checkpoints over the file it resumed from) */
static bool copy_file(const char *src, const char *dst)
{
    FILE *in = fopen(src, "rb"), *out = fopen(dst, "wb");
    bool ok = in && out;
    char buf[1 << 16];
    for (size_t n; ok && (n = fread(buf, 1, sizeof buf, in)) > 0;)
        ok = fwrite(buf, 1, n, out) == n;
    if (in)
        fclose(in);
    if (out)
        ok = fclose(out) == 0 && ok;
    return ok;
}

static void test_stop_on_one_rank(const char *dir)
{
    char ckpt[300];
    snprintf(ckpt, sizeof ckpt, "%s/ckpt.safetensors", dir);
    struct rank_job jobs[RANKS] = {{.ckpt = ckpt}, {.ckpt = ckpt, .stop_after = 20}};
    if (!run_ranks(jobs)) {
        CHECK(0);
        return;
    }
    uint64_t syncs_before = 0;
    if (same_end(jobs)) {
        syncs_before = jobs[0].result->n_syncs;
        const struct hetcl_train_result *a = jobs[0].result, *b = jobs[1].result;
        CHECK_EQ_INT(a->stopped_by, HETCL_TRAIN_STOP_INTERRUPTED);
        CHECK_EQ_STR(b->interrupted_by, "test stop");
        CHECK_EQ_STR(a->interrupted_by, "stopped on rank 1");
        /* inside the first epoch (2000 examples a rank, 3 epochs), right after a sync: the
         * examples both ranks took, 64 each a sync */
        CHECK(a->n_syncs >= 1 && a->n_syncs < 2000 / 64);
        CHECK_EQ_INT(a->examples, a->n_syncs * 64 * RANKS);
        CHECK_EQ_INT(b->examples, a->examples);
        CHECK_EQ_INT(a->rank_examples, a->n_syncs * 64);
        CHECK(access(ckpt, F_OK) == 0);
        /* rank 0 was never asked: its callback kept being polled until the vote */
        CHECK(atomic_load(&jobs[0].polls) > 0);
    }
    release(jobs);
    char stopped[300];
    snprintf(stopped, sizeof stopped, "%s/stopped.safetensors", dir);
    CHECK(copy_file(ckpt, stopped));
    /* The checkpoint written after the agreed sync resumes on both ranks to the end, with the
     * model of a run never stopped. */
    struct rank_job rest[RANKS] = {{.ckpt = ckpt, .resume = true}, {.ckpt = ckpt, .resume = true}};
    struct rank_job whole[RANKS] = {{0}, {0}};
    if (run_ranks(rest) && same_end(rest) && run_ranks(whole) && same_end(whole)) {
        CHECK_EQ_INT(rest[0].result->stopped_by, HETCL_TRAIN_STOP_EPOCHS);
        CHECK(rest[0].result->model_hash == whole[0].result->model_hash);
        CHECK_EQ_INT(syncs_before + rest[0].result->n_syncs, whole[0].result->n_syncs);
        check_global_examples(rest, RANKS, (uint64_t) EPOCHS * N_TRAIN,
                              (uint64_t) EPOCHS * N_TRAIN - syncs_before * 64 * RANKS);
        check_global_examples(whole, RANKS, (uint64_t) EPOCHS * N_TRAIN,
                              (uint64_t) EPOCHS * N_TRAIN);
    }
    release(rest);
    release(whole);
    /* On another rank count (3, then one process on a communicator of 1) the same checkpoint
     * resumes to the same global count. */
    for (int n = 3; n >= 1; n -= 2) {
        struct rank_job other[MAX_RANKS] = {{.ckpt = ckpt, .resume = true},
                                            {.ckpt = ckpt, .resume = true},
                                            {.ckpt = ckpt, .resume = true}};
        CHECK(copy_file(stopped, ckpt));
        if (run_n_ranks(other, n)) {
            for (int r = 0; r < n; r++) {
                CHECK_EQ_INT(other[r].status, HETCL_OK);
                if (other[r].status != HETCL_OK)
                    fprintf(stderr, "%d ranks, rank %d: %s\n", n, r, other[r].error);
            }
            check_global_examples(other, n, (uint64_t) EPOCHS * N_TRAIN,
                                  (uint64_t) EPOCHS * N_TRAIN - syncs_before * 64 * RANKS);
        } else {
            CHECK(0);
        }
        release_n(other, n);
    }
    unlink(stopped);
    unlink(ckpt);
}

static void test_time_on_one_rank(void)
{
    /* rank 1's budget is spent at once (after its first batch), rank 0's never */
    struct rank_job jobs[RANKS] = {{0}, {.time_s = 1e-6}};
    if (!run_ranks(jobs)) {
        CHECK(0);
        return;
    }
    if (same_end(jobs)) {
        CHECK_EQ_INT(jobs[0].result->stopped_by, HETCL_TRAIN_STOP_TIME);
        CHECK(jobs[0].result->n_syncs >= 1 && jobs[0].result->examples < N_TRAIN);
        CHECK_EQ_INT(jobs[0].result->examples, jobs[0].result->n_syncs * 64 * RANKS);
    }
    release(jobs);
}

/* 3 ranks, the last a dedicated aggregator: every rank ended OK, the aggregator after as many
 * syncs as the training ranks, which ended alike (same_end). */
static bool dedicated_end(struct rank_job jobs[MAX_RANKS])
{
    CHECK_EQ_INT(jobs[2].status, HETCL_OK);
    if (jobs[2].status != HETCL_OK) {
        fprintf(stderr, "aggregator: %s\n", jobs[2].error);
        return false;
    }
    if (!same_end(jobs))
        return false;
    const struct hetcl_train_result *a = jobs[2].result;
    CHECK(a->dedicated_aggregator && !jobs[0].result->dedicated_aggregator);
    CHECK_EQ_INT(a->n_syncs, jobs[0].result->n_syncs);
    CHECK(a->sync_bytes_sent > 0 && a->n_epochs == 0);
    return true;
}

static void test_dedicated(const char *dir)
{
    char ckpt[300], plain_stop[300];
    snprintf(ckpt, sizeof ckpt, "%s/ded.safetensors", dir);
    snprintf(plain_stop, sizeof plain_stop, "%s/plain_stop.safetensors", dir);
    /* the run never stopped, on 2 plain ranks, and with a dedicated aggregator */
    struct rank_job whole[RANKS] = {{0}, {0}};
    struct rank_job ded[MAX_RANKS] = {
            {.dedicated = true}, {.dedicated = true}, {.dedicated = true}};
    if (!run_ranks(whole) || !same_end(whole) || !run_n_ranks(ded, 3) || !dedicated_end(ded)) {
        CHECK(0);
        release(whole);
        release_n(ded, 3);
        return;
    }
    const uint64_t want = whole[0].result->model_hash, total = (uint64_t) EPOCHS * N_TRAIN;
    CHECK(ded[0].result->model_hash == want);
    CHECK_EQ_INT(ded[0].result->n_syncs, whole[0].result->n_syncs);
    check_global_examples(ded, 3, total, total);
    release_n(ded, 3);

    /* stopped on rank 1 with a dedicated aggregator; resumed on 2 plain ranks */
    struct rank_job stop[MAX_RANKS] = {{.ckpt = ckpt, .dedicated = true},
                                       {.ckpt = ckpt, .dedicated = true, .stop_after = 20},
                                       {.ckpt = ckpt, .dedicated = true}};
    uint64_t before = 0;
    if (run_n_ranks(stop, 3) && dedicated_end(stop)) {
        CHECK_EQ_INT(stop[0].result->stopped_by, HETCL_TRAIN_STOP_INTERRUPTED);
        before = stop[0].result->n_syncs;
        CHECK_EQ_INT(stop[0].result->examples, before * 64 * RANKS);
    }
    release_n(stop, 3);
    struct rank_job rest[RANKS] = {{.ckpt = ckpt, .resume = true}, {.ckpt = ckpt, .resume = true}};
    if (before && run_ranks(rest) && same_end(rest)) {
        CHECK_EQ_INT(rest[0].result->resumed_from_ranks, RANKS); /* the training ranks */
        CHECK(rest[0].result->model_hash == want);
        check_global_examples(rest, RANKS, total, total - before * 64 * RANKS);
    }
    release(rest);

    /* stopped on 2 plain ranks; resumed with a dedicated aggregator */
    struct rank_job pstop[RANKS] = {{.ckpt = plain_stop}, {.ckpt = plain_stop, .stop_after = 20}};
    before = 0;
    if (run_ranks(pstop) && same_end(pstop))
        before = pstop[0].result->n_syncs;
    release(pstop);
    struct rank_job dres[MAX_RANKS] = {{.ckpt = plain_stop, .resume = true, .dedicated = true},
                                       {.ckpt = plain_stop, .resume = true, .dedicated = true},
                                       {.ckpt = plain_stop, .resume = true, .dedicated = true}};
    if (before && run_n_ranks(dres, 3) && dedicated_end(dres)) {
        CHECK(dres[0].result->model_hash == want);
        check_global_examples(dres, 3, total, total - before * 64 * RANKS);
    }
    release_n(dres, 3);

    /* a time budget spent on training rank 1 ends every rank after the same sync */
    struct rank_job timed[MAX_RANKS] = {
            {.dedicated = true}, {.dedicated = true, .time_s = 1e-6}, {.dedicated = true}};
    if (run_n_ranks(timed, 3) && dedicated_end(timed))
        CHECK_EQ_INT(timed[0].result->stopped_by, HETCL_TRAIN_STOP_TIME);
    release_n(timed, 3);
    release(whole);
    unlink(ckpt);
    unlink(plain_stop);
}

int main(void)
{
    char dir[] = "/tmp/hetcl_dist_stop_XXXXXX";
    if (!mkdtemp(dir))
        return 1;
    test_stop_on_one_rank(dir);
    test_time_on_one_rank();
    test_dedicated(dir);
    rmdir(dir);
    return hetcl_test_finish("test_train_dist_stop");
}
