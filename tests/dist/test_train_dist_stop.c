/*
 * Across ranks, every rank stops after the same sync (models/src/train/train_dist.c): two
 * in-process ranks (threads on a local communicator, each with its own context and runtime)
 * train with a sync every 64 examples, and
 *   - the caller's stop callback asks on rank 1 alone (after a few polls): both ranks end
 *     interrupted, after the same number of syncs, with the same model, rank 1 naming its own
 *     reason and rank 0 naming rank 1, and rank 0's checkpoint (momentum 0.9: every rank's
 *     own momentum saved) resumes to the model of a run never stopped, bit for bit;
 *   - a time budget that only rank 1 runs out of: both end by the time budget after the same
 *     syncs.
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

#define RANKS 2

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
    struct hetcl_blobs_options bo = {.n = 4000, .n_features = 32, .n_classes = 4, .seed = 7};
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
                                    .epochs = 3,
                                    .seed = 5,
                                    .momentum = 0.9,
                                    .host_batch = {.batch = 16},
                                    .comm = j->comm,
                                    .sync_every = 64,
                                    .allreduce = {.method = HETCL_ALLREDUCE_OMNIREDUCE},
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

/* Runs the two ranks to their end; false when they could not be started. */
static bool run_ranks(struct rank_job jobs[RANKS])
{
    hetcl_context *ctx = NULL;
    hetcl_comm *comm[RANKS] = {NULL};
    if (hetcl_context_create(NULL, &ctx) != HETCL_OK ||
        hetcl_comm_create_local(ctx, RANKS, comm) != HETCL_OK) {
        hetcl_context_destroy(ctx);
        return false;
    }
    pthread_t th[RANKS];
    for (int r = 0; r < RANKS; r++) {
        hetcl_comm_set_timeout(comm[r], 20ull * 1000000000ull);
        jobs[r].comm = comm[r];
        jobs[r].rank = r;
        CHECK_EQ_INT(pthread_create(&th[r], NULL, rank_main, &jobs[r]), 0);
    }
    for (int r = 0; r < RANKS; r++)
        pthread_join(th[r], NULL);
    for (int r = 0; r < RANKS; r++)
        hetcl_comm_destroy(comm[r]);
    hetcl_context_destroy(ctx);
    return true;
}

static void release(struct rank_job jobs[RANKS])
{
    for (int r = 0; r < RANKS; r++)
        hetcl_train_result_destroy(jobs[r].result);
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
        /* inside the first epoch (2000 examples a rank, 3 epochs), after a sync */
        CHECK(a->n_syncs >= 1 && a->examples < 2 * 4000);
        CHECK(access(ckpt, F_OK) == 0);
        /* rank 0 was never asked: its callback kept being polled until the vote */
        CHECK(atomic_load(&jobs[0].polls) > 0);
    }
    release(jobs);
    /* The checkpoint written after the agreed sync resumes on both ranks to the end, with the
     * model of a run never stopped. */
    struct rank_job rest[RANKS] = {{.ckpt = ckpt, .resume = true}, {.ckpt = ckpt, .resume = true}};
    struct rank_job whole[RANKS] = {{0}, {0}};
    if (run_ranks(rest) && same_end(rest) && run_ranks(whole) && same_end(whole)) {
        CHECK_EQ_INT(rest[0].result->stopped_by, HETCL_TRAIN_STOP_EPOCHS);
        CHECK(rest[0].result->model_hash == whole[0].result->model_hash);
        CHECK_EQ_INT(syncs_before + rest[0].result->n_syncs, whole[0].result->n_syncs);
    }
    release(rest);
    release(whole);
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
        CHECK(jobs[0].result->n_syncs >= 1 && jobs[0].result->examples < 4000);
    }
    release(jobs);
}

int main(void)
{
    char dir[] = "/tmp/hetcl_dist_stop_XXXXXX";
    if (!mkdtemp(dir))
        return 1;
    test_stop_on_one_rank(dir);
    test_time_on_one_rank();
    rmdir(dir);
    return hetcl_test_finish("test_train_dist_stop");
}
