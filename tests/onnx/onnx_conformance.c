/*
 * ONNX conformance: runs ONNX's own backend node tests (Debian's libonnx-testdata:
 * <dir>/test_NAME/model.onnx, test_data_set_K/input_I.pb and output_I.pb) of every operator hetcl
 * claims, through the importer, an inference plan and a session on one device kind (host
 * workers or OpenCL), compares each output with the expected one (|got - want| <= atol + rtol *
 * |want|, rtol 1e-3, atol 1e-5) and prints pass / fail / unsupported per test and per operator.
 *
 *   onnx_conformance --devices host|opencl [--data DIR] [--expect FILE] [--write FILE] [-v]
 *
 * --expect FILE: the tests that passed before (one name a line, '#' comments); the program fails
 * when one of them does not pass now (a regression), and says which tests pass that the file
 * does not list (to be added). --write FILE: writes the list of passing tests.
 * A test is filed under the op type of its graph's one node; tests of several nodes (the
 * "_expanded" function bodies) and of operators hetcl does not claim are not run.
 * Exit: 0, 1 (a regression), 77 (no test data, no ONNX import or no device of that kind).
 */
#include <hetcl/context.h>
#include <hetcl/infer.h>
#include <hetcl/onnx.h>
#include <hetcl/runtime.h>

#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define RTOL 1e-3
#define ATOL 1e-5

static const char *const claimed[] = {
        "Conv",          "Gemm",      "MatMul",      "Add",
        "Mul",           "Transpose", "Concat",      "BatchNormalization",
        "Relu",          "Sigmoid",   "Tanh",        "Clip",
        "LeakyRelu",     "MaxPool",   "AveragePool", "GlobalAveragePool",
        "GlobalMaxPool", "Flatten",   "Reshape",     "Softmax",
        "Dropout",       "Identity"};
#define N_CLAIMED (sizeof claimed / sizeof claimed[0])

enum verdict { PASS, FAIL, UNSUPPORTED };

struct counts {
    int n[3];
};

static hetcl_context *ctx;
static bool verbose;

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *) a, *(char *const *) b);
}

static int claimed_index(const char *op)
{
    for (size_t i = 0; i < N_CLAIMED; i++)
        if (!strcmp(claimed[i], op))
            return (int) i;
    return -1;
}

static bool exists(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0;
}

/* Loads <set>/<kind>_<i>.pb for i = 0, 1, ... into ts (at most cap); returns the count, -1 for
 * an unreadable one, -2 for one of a data type the importer does not read (uint8, bool...). */
static int load_tensors(const char *set, const char *kind, struct hetcl_onnx_tensor **ts, int cap)
{
    int n = 0;
    for (; n < cap; n++) {
        char path[4096];
        snprintf(path, sizeof path, "%s/%s_%d.pb", set, kind, n);
        if (!exists(path))
            break;
        hetcl_status s = hetcl_onnx_tensor_load(ctx, path, &ts[n]);
        if (s != HETCL_OK)
            return s == HETCL_ERR_UNSUPPORTED ? -2 : -1;
    }
    return n;
}

static bool close_enough(const float *got, const struct hetcl_onnx_tensor *want, char *why,
                         size_t cap)
{
    for (int64_t i = 0; i < want->n_elements; i++) {
        double g = got[i], w = want->data[i];
        if (!(fabs(g - w) <= ATOL + RTOL * fabs(w))) {
            snprintf(why, cap, "element %lld: got %.9g, expected %.9g", (long long) i, g, w);
            return false;
        }
    }
    return true;
}

/* One data set of a test on rt's worker 0; joins: the operator joins tensors (Add, Mul, Concat);
 * own: the input that may be one per example (a Gemm's C: 2, a MatMul's B: 1; 0: none). */
static enum verdict run_set(hetcl_runtime *rt, const char *model, const char *set, bool joins,
                            int own, char *why, size_t cap)
{
    struct hetcl_onnx_tensor *in[16] = {0}, *out[4] = {0};
    int n_in = load_tensors(set, "input", in, 16), n_out = load_tensors(set, "output", out, 4);
    hetcl_onnx_model *m = NULL;
    hetcl_infer_plan *plan = NULL;
    hetcl_infer_session *s = NULL;
    float *x = NULL, *y = NULL;
    enum verdict v = FAIL;
    if (n_in < 1 || n_out < 1) {
        snprintf(why, cap, "%s: %s", n_in == -2 || n_out == -2 ? "data type" : "test data",
                 hetcl_context_last_error(ctx));
        v = n_in == -2 || n_out == -2 ? UNSUPPORTED : FAIL;
        goto done;
    }
    /* The first input is data. The others (weights, shapes) are bound as constants, but for
     * the operators that join tensors (joins), a Gemm's C (its bias) and a MatMul's B (own):
     * there an input of the first one's rank and batch is data too (each example's own bias or
     * matrices), and each example holds the data inputs' values one after the other. */
    struct hetcl_onnx_tensor bound[16];
    bool data[16] = {true};
    int n_bound = 0;
    int64_t batch = in[0]->rank ? in[0]->dims[0] : 0, in_elems = in[0]->n_elements;
    for (int i = 1; i < n_in; i++) {
        data[i] = (joins || i == own) && in[i]->rank == in[0]->rank && in[i]->rank &&
                  in[i]->dims[0] == batch;
        if (data[i])
            in_elems += in[i]->n_elements;
        else
            bound[n_bound++] = *in[i];
    }
    struct hetcl_onnx_options o = {.inputs = bound, .n_inputs = (size_t) n_bound};
    hetcl_status st = hetcl_onnx_load(ctx, model, &o, &m);
    if (st == HETCL_ERR_UNSUPPORTED) {
        /* the reason, without the list of what is supported */
        snprintf(why, cap, "%s", hetcl_context_last_error(ctx));
        why[strcspn(why, ";")] = '\0';
        v = UNSUPPORTED;
        goto done;
    }
    if (st != HETCL_OK || n_out != 1 || batch < 1) {
        snprintf(why, cap, "import: %s",
                 st != HETCL_OK ? hetcl_context_last_error(ctx) : "not one output or no batch");
        goto done;
    }
    struct hetcl_infer_weights_options wo = {.params = (const float *const *) m->params};
    if (hetcl_infer_plan_create(ctx, m->spec, &wo, &plan) != HETCL_OK) {
        snprintf(why, cap, "plan: %s", hetcl_context_last_error(ctx));
        v = UNSUPPORTED; /* a layer the lowering cannot run (e.g. unequal strides) */
        goto done;
    }
    if (plan->n_classes * batch != out[0]->n_elements || plan->in_elems * batch != in_elems) {
        snprintf(why, cap,
                 "shapes: the plan has %lld -> %lld per example, the test %lld -> %lld "
                 "for a batch of %lld",
                 (long long) plan->in_elems, (long long) plan->n_classes, (long long) in_elems,
                 (long long) out[0]->n_elements, (long long) batch);
        goto done;
    }
    x = malloc((size_t) in_elems * sizeof *x);
    if (!x) {
        snprintf(why, cap, "out of memory");
        goto done;
    }
    for (int64_t e = 0, k = 0; e < batch; e++) /* example e: each data input's values in turn */
        for (int i = 0; i < n_in; i++) {
            const int64_t per = in[i]->n_elements / batch;
            if (!data[i])
                continue;
            memcpy(x + k, in[i]->data + e * per, (size_t) per * sizeof *x);
            k += per;
        }
    int worker = 0;
    int64_t rows = batch;
    struct hetcl_infer_session_options so = {
            .batch = batch, .n_workers = 1, .workers = &worker, .rows = &rows};
    y = malloc((size_t) out[0]->n_elements * sizeof *y);
    if (!y || hetcl_infer_session_create(ctx, rt, plan, &so, &s) != HETCL_OK ||
        hetcl_infer_session_run(s, x, y) != HETCL_OK) {
        snprintf(why, cap, "run: %s", hetcl_context_last_error(ctx));
        goto done;
    }
    v = close_enough(y, out[0], why, cap) ? PASS : FAIL;
done:
    free(x);
    free(y);
    hetcl_infer_session_destroy(s);
    hetcl_infer_plan_destroy(plan);
    hetcl_onnx_model_destroy(m);
    for (int i = 0; i < 16; i++)
        hetcl_onnx_tensor_destroy(in[i]);
    for (int i = 0; i < 4; i++)
        hetcl_onnx_tensor_destroy(out[i]);
    return v;
}

/* Every data set of test directory dir: PASS only when all pass. */
static enum verdict run_test(hetcl_runtime *rt, const char *dir, bool joins, int own, char *why,
                             size_t cap)
{
    char model[4096];
    snprintf(model, sizeof model, "%s/model.onnx", dir);
    enum verdict v = PASS;
    for (int k = 0; v == PASS; k++) {
        char set[4096];
        snprintf(set, sizeof set, "%s/test_data_set_%d", dir, k);
        if (!exists(set)) {
            if (k == 0) {
                snprintf(why, cap, "no test_data_set_0");
                v = FAIL;
            }
            break;
        }
        v = run_set(rt, model, set, joins, own, why, cap);
    }
    return v;
}

static char **read_list(const char *path, size_t *n)
{
    *n = 0;
    FILE *f = fopen(path, "r");
    if (!f)
        return NULL;
    char **v = NULL, line[512];
    while (fgets(line, sizeof line, f)) {
        line[strcspn(line, "\r\n#")] = '\0';
        char *t = line + strspn(line, " \t");
        t[strcspn(t, " \t")] = '\0';
        if (!*t)
            continue;
        char **nv = realloc(v, (*n + 1) * sizeof *v);
        if (!nv)
            break;
        v = nv;
        v[(*n)++] = strdup(t);
    }
    fclose(f);
    return v;
}

static bool listed(char **v, size_t n, const char *name)
{
    for (size_t i = 0; i < n; i++)
        if (v[i] && !strcmp(v[i], name))
            return true;
    return false;
}

int main(int argc, char **argv)
{
    const char *data = "/usr/share/libonnx-testdata/data/node", *devices = NULL;
    const char *expect = NULL, *write = NULL;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *val = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "-v")) {
            verbose = true;
        } else if (val && (!strcmp(a, "--data") || !strcmp(a, "--devices") ||
                           !strcmp(a, "--expect") || !strcmp(a, "--write"))) {
            *(a[2] == 'd'   ? (a[3] == 'a' ? &data : &devices)
              : a[2] == 'e' ? &expect
                            : &write) = val;
            i++;
        } else {
            fprintf(stderr, "usage: onnx_conformance --devices host|opencl [--data DIR] "
                            "[--expect FILE] [--write FILE] [-v]\n");
            return 2;
        }
    }
    if (!devices || (strcmp(devices, "host") && strcmp(devices, "opencl"))) {
        fprintf(stderr, "onnx_conformance: --devices must be host or opencl\n");
        return 2;
    }
    if (!hetcl_onnx_available() || !exists(data)) {
        printf("SKIP: %s\n", hetcl_onnx_available() ? "no ONNX test data (apt-get install "
                                                      "libonnx-testdata)"
                                                    : "hetcl built without ONNX import");
        return 77;
    }
    if (hetcl_context_create(NULL, &ctx) != HETCL_OK)
        return 1;
    hetcl_runtime *rt = NULL;
    struct hetcl_runtime_options ro = {.devices = devices, .host_workers = 1};
    if (hetcl_runtime_create(ctx, &ro, &rt) != HETCL_OK || hetcl_runtime_n_workers(rt) < 1) {
        printf("SKIP: no %s worker: %s\n", devices, hetcl_context_last_error(ctx));
        hetcl_runtime_destroy(rt);
        hetcl_context_destroy(ctx);
        return 77;
    }

    struct hetcl_worker_info wi;
    if (hetcl_runtime_worker_info(rt, 0, &wi) != HETCL_OK)
        return 1;
    printf("worker 0: %s (%s)\n", wi.name, hetcl_worker_kind_name(wi.kind));

    DIR *d = opendir(data);
    char **names = NULL;
    size_t n_names = 0;
    for (struct dirent *e; d && (e = readdir(d));) {
        if (strncmp(e->d_name, "test_", 5))
            continue;
        char **nv = realloc(names, (n_names + 1) * sizeof *names);
        if (!nv)
            return 1;
        names = nv;
        names[n_names++] = strdup(e->d_name);
    }
    if (d)
        closedir(d);
    qsort(names, n_names, sizeof *names, cmp_str);

    size_t n_expect = 0;
    char **expected = expect ? read_list(expect, &n_expect) : NULL;
    if (expect && !expected) {
        fprintf(stderr, "onnx_conformance: --expect %s: cannot read it\n", expect);
        return 2;
    }
    FILE *w = write ? fopen(write, "w") : NULL;
    if (write && !w) {
        fprintf(stderr, "onnx_conformance: --write %s: cannot create it\n", write);
        return 2;
    }
    struct counts per_op[N_CLAIMED] = {0};
    int regressions = 0, new_passes = 0;
    for (size_t i = 0; i < n_names; i++) {
        char dir[4096], model[4096], types[256];
        snprintf(dir, sizeof dir, "%s/%s", data, names[i]);
        snprintf(model, sizeof model, "%s/model.onnx", dir);
        if (!exists(model) || hetcl_onnx_node_types(ctx, model, types, sizeof types) != 1)
            continue; /* several nodes: an expanded function body, not one operator's test */
        int op = claimed_index(types);
        if (op < 0)
            continue;
        char why[1024] = "";
        const bool joins =
                !strcmp(types, "Add") || !strcmp(types, "Mul") || !strcmp(types, "Concat");
        const int own = !strcmp(types, "Gemm") ? 2 : !strcmp(types, "MatMul") ? 1 : 0;
        enum verdict v = run_test(rt, dir, joins, own, why, sizeof why);
        per_op[op].n[v]++;
        static const char *const word[] = {"pass", "FAIL", "unsupported"};
        if (verbose || v == FAIL)
            printf("%-18s %-48s %s%s%s\n", types, names[i], word[v], *why ? ": " : "", why);
        if (v == PASS && w)
            fprintf(w, "%s\n", names[i]);
        if (expected && v != PASS && listed(expected, n_expect, names[i])) {
            printf("REGRESSION: %s passed before (%s) and now is %s\n", names[i], expect, word[v]);
            regressions++;
        }
        if (expected && v == PASS && !listed(expected, n_expect, names[i])) {
            printf("new pass: %s (add it to %s)\n", names[i], expect);
            new_passes++;
        }
    }
    printf("\nONNX node tests on %s (rtol %g, atol %g): pass / fail / unsupported\n", devices, RTOL,
           ATOL);
    int tot[3] = {0};
    for (size_t k = 0; k < N_CLAIMED; k++) {
        printf("  %-18s %3d / %3d / %3d\n", claimed[k], per_op[k].n[PASS], per_op[k].n[FAIL],
               per_op[k].n[UNSUPPORTED]);
        for (int j = 0; j < 3; j++)
            tot[j] += per_op[k].n[j];
    }
    printf("  %-18s %3d / %3d / %3d\n", "total", tot[PASS], tot[FAIL], tot[UNSUPPORTED]);
    if (expected)
        printf("%d regressions against %s, %d new passes\n", regressions, expect, new_passes);
    if (w)
        fclose(w);
    for (size_t i = 0; i < n_names; i++)
        free(names[i]);
    free(names);
    for (size_t i = 0; i < n_expect; i++)
        free(expected[i]);
    free(expected);
    hetcl_runtime_destroy(rt);
    hetcl_context_destroy(ctx);
    return regressions ? 1 : 0;
}
