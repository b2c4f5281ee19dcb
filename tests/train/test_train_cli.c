/*
 * Tests `hetcl train` as a program: bad flags and inputs give one line naming the flag or file
 * and exit 2; a run writes a report that validates against reports/schema/train.schema.json
 * and records the machine's state before and after training; a run killed with SIGKILL while it
 * checkpoints resumes with --resume from its last checkpoint and finishes the requested epochs.
 * Host workers and generated data only.
 */
#include "harness.h"

#include <hetcl/safetensors.h>
#include <math.h>

#include <cjson/cJSON.h>

#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static void sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

static char tmpdir[256];
static const char *bin, *src;

static int run(const char *args, char *err, size_t err_cap)
{
    char cmd[4096];
    snprintf(cmd, sizeof cmd, "cd %s && %s train %s", src, bin, args);
    int st = hetcl_test_sh(tmpdir, cmd);
    hetcl_test_read(tmpdir, "err", err, err_cap);
    return st;
}

static bool one_line_error(const char *err)
{
    const char *nl = strchr(err, '\n');
    return !strncmp(err, "hetcl: ", 7) && nl && nl[1] == '\0';
}

static void check_bad_input(void)
{
    static const struct {
        const char *args;
        const char *mentions;
    } cases[] = {
            {"--bogus", "--bogus"},
            {"--data synthetic", "--model"},
            {"--model /nonexistent.json", "/nonexistent.json"},
            {"--model models/mlp.json --algo fast", "--algo"},
            {"--model models/mlp.json --epochs 0", "--epochs"},
            {"--model models/mlp.json --epochs", "--epochs"},
            {"--model models/mlp.json --lr -1", "--lr"},
            {"--model models/mlp.json --momentum 1.5", "--momentum"},
            {"--model models/mlp.json --target-acc 2", "--target-acc"},
            {"--model models/mlp.json --eval-every 0", "--eval-every"},
            {"--model models/mlp.json --eval-every 1.5", "--eval-every"},
            {"--model models/mlp.json --eval-every tenth", "--eval-every"},
            {"--model models/mlp.json --batch host", "--batch"},
            {"--model models/mlp.json --batch host=0", "--batch"},
            {"--model models/mlp.json --schedule linear", "--schedule"},
            {"--model models/mlp.json --resume", "--resume"},
            {"--model models/mlp.json --checkpoint /nonexistent/c.st", "/nonexistent"},
            {"--model models/mlp.json --data nosuch", "--data"},
            {"--model models/mlp.json --data synthetic:0", "from 1 to"},
            {"--model models/mlp.json --data synthetic:100 --devices host --batch gpu7=4", "gpu7"},
            {"--model models/mlp.json --data synthetic:100 --devices nosuchdevice", "--devices"},
            {"--model models/lenet.json --data synthetic:100 --devices host", "flat"},
    };
    char err[4096];
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        int st = run(cases[i].args, err, sizeof err);
        if (st != 2 || !one_line_error(err) || !strstr(err, cases[i].mentions)) {
            fprintf(stderr, "`hetcl train %s`: status %d (want 2), stderr: %s\n", cases[i].args, st,
                    err);
            hetcl_test_failures++;
        }
    }
    CHECK_EQ_INT(run("--help", err, sizeof err), 0);
}

static double num(const cJSON *o, const char *key)
{
    const cJSON *v = cJSON_GetObjectItem(o, key);
    return cJSON_IsNumber(v) ? v->valuedouble : (double) NAN;
}

static void check_report(void)
{
    char args[1024], err[4096], report[300];
    snprintf(report, sizeof report, "%s/r.json", tmpdir);
    snprintf(args, sizeof args,
             "--model models/mlp.json --data synthetic:2000 --devices host --host-workers 2 "
             "--algo adaptive --epochs 2 --target-acc 0.5 --report %s --quiet",
             report);
    CHECK_EQ_INT(run(args, err, sizeof err), 0);
    const char *checker = getenv("HETCL_SCHEMA_CHECK");
    if (checker) {
        char cmd[2048];
        snprintf(cmd, sizeof cmd, "%s %s/reports/schema/train.schema.json %s", checker, src,
                 report);
        int st = system(cmd);
        CHECK(st != -1 && WIFEXITED(st) && WEXITSTATUS(st) == 0);
    }
    cJSON *doc = hetcl_test_load_json(report);
    CHECK(doc != NULL);
    const cJSON *devs = cJSON_GetObjectItem(doc, "devices");
    CHECK(cJSON_GetArraySize(devs) == 2);
    double share = 0;
    for (int i = 0; i < cJSON_GetArraySize(devs); i++)
        share += cJSON_GetObjectItem(cJSON_GetArrayItem(devs, i), "update_share")->valuedouble;
    CHECK(share > 0.999 && share < 1.001);
    /* No --lr: the rate the epochs used is the one the configuration reports (a constant
     * schedule), the default of <hetcl/train.h>. */
    const cJSON *opt = cJSON_GetObjectItem(cJSON_GetObjectItem(doc, "config"), "optimizer");
    const cJSON *ep0 = cJSON_GetArrayItem(cJSON_GetObjectItem(doc, "epochs"), 0);
    CHECK(fabs(num(opt, "learning_rate") - 0.02) < 1e-12);
    CHECK(fabs(num(ep0, "learning_rate") - num(opt, "learning_rate")) < 1e-12);
    /* Where this process may run on two PUs, the cache-line round trip between them before
     * and after training. */
    const cJSON *host = cJSON_GetObjectItem(cJSON_GetObjectItem(doc, "provenance"), "host");
    const cJSON *core = cJSON_GetObjectItem(host, "core_round_trip_ns");
    if (hetcl_test_two_pus()) {
        CHECK(cJSON_IsObject(core));
        CHECK(num(cJSON_GetObjectItem(core, "before"), "median") > 0);
        CHECK(num(cJSON_GetObjectItem(core, "after"), "median") > 0);
    } else {
        CHECK(cJSON_IsNull(core));
    }
    /* The machine's state just before and just after training, and whether it throttled
     * (true, false, or null when neither frequencies nor temperatures are readable). */
    const cJSON *machine = cJSON_GetObjectItem(doc, "machine");
    CHECK(cJSON_IsObject(machine));
    const char *sides[] = {"before", "after"};
    for (int i = 0; i < 2; i++) {
        const cJSON *st = cJSON_GetObjectItem(machine, sides[i]);
        CHECK(cJSON_IsString(cJSON_GetObjectItem(st, "captured_at")));
        CHECK(cJSON_IsObject(cJSON_GetObjectItem(st, "cpufreq")));
        CHECK(cJSON_IsObject(cJSON_GetObjectItem(st, "thermal")));
    }
    const cJSON *throttled = cJSON_GetObjectItem(machine, "throttled");
    CHECK(cJSON_IsBool(throttled) || cJSON_IsNull(throttled));
    cJSON_Delete(doc);
}

/* --eval-every: evaluations inside epochs, in order, with training time apart from wall time;
 * a target reached inside an epoch stops the run there. */
static void check_eval_every(void)
{
    char args[1024], err[4096], report[300];
    snprintf(report, sizeof report, "%s/ev.json", tmpdir);
    snprintf(args, sizeof args,
             "--model models/mlp.json --data synthetic:2000 --devices host --host-workers 2 "
             "--algo hogbatch --epochs 2 --eval-every 0.25 --report %s --quiet",
             report);
    CHECK_EQ_INT(run(args, err, sizeof err), 0);
    cJSON *doc = hetcl_test_load_json(report);
    CHECK(doc != NULL);
    const cJSON *evs = cJSON_GetObjectItem(doc, "evaluations");
    CHECK_EQ_INT(cJSON_GetArraySize(evs), 8); /* 0.25, 0.5, 0.75, 1 in each of 2 epochs */
    CHECK(num(cJSON_GetObjectItem(doc, "config"), "eval_every") == 0.25);
    double prev_epoch = 0, prev_train = 0, prev_examples = 0;
    for (int i = 0; i < cJSON_GetArraySize(evs); i++) {
        const cJSON *e = cJSON_GetArrayItem(evs, i);
        double ep = num(e, "epoch");
        CHECK(ep > prev_epoch);
        /* Each mark is passed by less than one batch (32 of 2000 examples). */
        CHECK(ep >= 0.25 * (i + 1) && ep < 0.25 * (i + 1) + 0.02);
        CHECK(num(e, "examples") > prev_examples && num(e, "train_s") > prev_train);
        CHECK(num(e, "train_s") < num(e, "wall_s"));
        prev_epoch = ep;
        prev_train = num(e, "train_s");
        prev_examples = num(e, "examples");
    }
    CHECK(prev_epoch == 2 && prev_examples == 4000);
    const cJSON *last = cJSON_GetArrayItem(evs, cJSON_GetArraySize(evs) - 1);
    CHECK(num(last, "test_acc") == num(cJSON_GetObjectItem(doc, "final"), "test_acc"));
    cJSON_Delete(doc);

    /* The generated data is easy: 50% is reached at the first evaluation, a quarter epoch. */
    snprintf(args, sizeof args,
             "--model models/mlp.json --data synthetic:2000 --devices host --host-workers 2 "
             "--algo hogbatch --epochs 2 --eval-every 0.25 --target-acc 0.5 --report %s --quiet",
             report);
    CHECK_EQ_INT(run(args, err, sizeof err), 0);
    doc = hetcl_test_load_json(report);
    CHECK(doc != NULL);
    evs = cJSON_GetObjectItem(doc, "evaluations");
    const cJSON *first = cJSON_GetArrayItem(evs, 0), *fin = cJSON_GetObjectItem(doc, "final");
    CHECK_EQ_INT(cJSON_GetArraySize(evs), 1);
    CHECK(num(first, "epoch") < 0.3 && num(first, "test_acc") >= 0.5);
    const cJSON *stop = cJSON_GetObjectItem(fin, "stopped_by");
    CHECK(cJSON_IsString(stop) && !strcmp(stop->valuestring, "target_acc"));
    CHECK(num(doc, "time_to_target_s") <= num(first, "wall_s"));
    CHECK(num(doc, "train_time_to_target_s") <= num(doc, "time_to_target_s"));
    cJSON_Delete(doc);
}

/* Hogwild with the default devices trains on one host worker per core, even where an OpenCL
 * CPU device would have taken the cores (it does not train in hogwild). */
static void check_hogwild_cores(void)
{
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    char args[1024], err[4096], report[300];
    snprintf(report, sizeof report, "%s/hw.json", tmpdir);
    snprintf(args, sizeof args,
             "--model models/mlp.json --data synthetic:512 --algo hogwild --epochs 1 "
             "--report %s --quiet",
             report);
    CHECK_EQ_INT(run(args, err, sizeof err), 0);
    cJSON *doc = hetcl_test_load_json(report);
    CHECK(doc != NULL);
    int n = cJSON_GetArraySize(cJSON_GetObjectItem(doc, "devices"));
    printf("hogwild: %d host workers on %ld online CPUs\n", n, cores);
    CHECK(n >= 1);
    if (cores >= 2)
        CHECK(n >= 2);
    cJSON_Delete(doc);
}

/* The checkpoint carries the inputs' standardization (input.mean, input.std: one float per
 * feature of mlp.json's 784), so that inference can feed the model what it was trained on. */
static void check_input_standardization(const char *ckpt)
{
    hetcl_context *ctx = NULL;
    hetcl_st_file *f = NULL;
    CHECK_OK(ctx, hetcl_context_create(NULL, &ctx));
    CHECK_OK(ctx, hetcl_st_open(ctx, ckpt, &f));
    const struct hetcl_st_tensor *m = f ? hetcl_st_find(f, "input.mean") : NULL;
    const struct hetcl_st_tensor *sd = f ? hetcl_st_find(f, "input.std") : NULL;
    CHECK(m && sd);
    if (m && sd) {
        CHECK_EQ_INT(m->n_elements, 784);
        CHECK_EQ_INT(sd->n_elements, 784);
        float v[784];
        memcpy(v, sd->data, sizeof v);
        bool positive = true;
        for (int i = 0; i < 784; i++)
            positive = positive && isfinite(v[i]) && v[i] > 0;
        CHECK(positive);
    }
    hetcl_st_close(f);
    hetcl_context_destroy(ctx);
}

static void check_kill_resume(void)
{
    char ckpt[300], report[300];
    snprintf(ckpt, sizeof ckpt, "%s/c.safetensors", tmpdir);
    snprintf(report, sizeof report, "%s/resumed.json", tmpdir);
    const char *common = "--model models/mlp.json --data synthetic:3000 --devices host "
                         "--host-workers 1 --algo single --epochs 6 --quiet";
    pid_t pid = fork();
    if (pid == 0) {
        char args[1024];
        snprintf(args, sizeof args,
                 "cd %s && exec %s train %s --checkpoint %s "
                 "--checkpoint-every 0.05 >/dev/null 2>&1",
                 src, bin, common, ckpt);
        execl("/bin/sh", "sh", "-c", args, (char *) NULL);
        _exit(127);
    }
    /* Kill it once a checkpoint exists (or after 20 s). */
    struct stat st;
    for (int i = 0; i < 2000 && stat(ckpt, &st) != 0; i++)
        sleep_ms(10);
    sleep_ms(150);
    kill(pid, SIGKILL);
    int status = 0;
    waitpid(pid, &status, 0);
    CHECK(WIFSIGNALED(status) || (WIFEXITED(status) && WEXITSTATUS(status) == 0));
    CHECK(stat(ckpt, &st) == 0);
    char args[1024], err[4096];
    snprintf(args, sizeof args, "%s --checkpoint %s --resume --report %s", common, ckpt, report);
    CHECK_EQ_INT(run(args, err, sizeof err), 0);
    cJSON *doc = hetcl_test_load_json(report);
    CHECK(doc != NULL);
    if (doc) {
        const cJSON *cp = cJSON_GetObjectItem(cJSON_GetObjectItem(doc, "config"), "checkpoint");
        printf("resumed from %s, %d epochs in the report\n",
               cJSON_IsString(cJSON_GetObjectItem(cp, "resumed_from")) ? "a checkpoint" : "nothing",
               cJSON_GetArraySize(cJSON_GetObjectItem(doc, "epochs")));
        CHECK(WIFEXITED(status) || cJSON_IsString(cJSON_GetObjectItem(cp, "resumed_from")));
        CHECK_EQ_INT(cJSON_GetArraySize(cJSON_GetObjectItem(doc, "epochs")), 6);
        cJSON_Delete(doc);
    }
    check_input_standardization(ckpt);
    unlink(ckpt);
    unlink(report);
}

/* --no-standardize: the checkpoint says its inputs are raw (metadata inputs "raw", no
 * input.mean/input.std), and bench model then feeds the model the inputs as loaded: a LeNet
 * trained on raw Fashion-MNIST gave 48% in bench model against 61% in training when bench
 * standardized them as for a default run. */
static void check_raw_inputs(void)
{
    char ckpt[300], report[300], args[1024], err[4096];
    snprintf(ckpt, sizeof ckpt, "%s/raw.safetensors", tmpdir);
    snprintf(report, sizeof report, "%s/raw.json", tmpdir);
    snprintf(args, sizeof args,
             "--model models/lenet.json --no-standardize --data fashion-mnist --train-limit 3000 "
             "--test-limit 1000 --devices host --epochs 1 --seed 3 --quiet --checkpoint %s "
             "--report %s",
             ckpt, report);
    if (run(args, err, sizeof err) != 0) { /* no Fashion-MNIST here: see the error */
        printf("raw inputs: not tested: %s", err);
        CHECK(strstr(err, "fashion-mnist") != NULL);
        return;
    }
    hetcl_context *ctx = NULL;
    hetcl_st_file *f = NULL;
    CHECK_OK(ctx, hetcl_context_create(NULL, &ctx));
    CHECK_OK(ctx, hetcl_st_open(ctx, ckpt, &f));
    const char *inputs = f ? hetcl_st_metadata(f, "inputs") : NULL;
    CHECK(inputs && strcmp(inputs, "raw") == 0);
    CHECK(f && !hetcl_st_find(f, "input.mean") && !hetcl_st_find(f, "input.std"));
    hetcl_st_close(f);
    hetcl_context_destroy(ctx);
    cJSON *doc = hetcl_test_load_json(report);
    const cJSON *fin = doc ? cJSON_GetObjectItem(doc, "final") : NULL;
    const cJSON *acc = fin ? cJSON_GetObjectItem(fin, "test_acc") : NULL;
    const double trained = cJSON_IsNumber(acc) ? acc->valuedouble : -1;
    cJSON_Delete(doc);
    char cmd[2048], out[8192];
    snprintf(cmd, sizeof cmd,
             "cd %s && %s bench model --model lenet --weights %s --data fashion-mnist --devices "
             "host0 --quick --quiet --batches 32",
             src, bin, ckpt);
    CHECK_EQ_INT(hetcl_test_sh(tmpdir, cmd), 0);
    hetcl_test_read(tmpdir, "out", out, sizeof out);
    const char *top1 = strstr(out, "top-1 ");
    const double benched = top1 ? strtod(top1 + 6, NULL) / 100.0 : -1;
    printf("raw inputs: trained %.3f, bench model %.3f\n", trained, benched);
    CHECK(trained > 0.3);
    CHECK(benched >= trained - 0.08); /* 256 samples against 1000: a few points apart */
    unlink(ckpt);
    unlink(report);
}

int main(void)
{
    bin = getenv("HETCL_BIN");
    src = getenv("HETCL_SOURCE_DIR");
    if (!bin || !src)
        hetcl_test_skip("HETCL_BIN and HETCL_SOURCE_DIR are set by CTest");
    snprintf(tmpdir, sizeof tmpdir, "/tmp/hetcl_train_cli_XXXXXX");
    if (!mkdtemp(tmpdir))
        return 1;
    check_bad_input();
    check_report();
    check_eval_every();
    check_hogwild_cores();
    check_kill_resume();
    check_raw_inputs();
    char cmd[512];
    snprintf(cmd, sizeof cmd, "rm -rf %s", tmpdir);
    if (system(cmd) != 0)
        fprintf(stderr, "could not remove %s\n", tmpdir);
    return hetcl_test_finish("test_train_cli");
}
