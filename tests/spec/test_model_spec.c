/*
 * Model specs (hetcl/model_spec.h): every spec shipped in models/ parses with the expected shapes,
 * parameter tensors, counts and FLOPs; defaults resolve as models/README.md says; set_input
 * re-resolves or leaves the spec unchanged; and a table of invalid specs fails with
 * HETCL_ERR_FORMAT and a message naming the field. Each table entry also says whether
 * reports/schema/model.schema.json rejects it, so that the schema and the parser cannot drift
 * apart unnoticed (the semantic errors, such as a conv whose output would be empty, are the
 * parser's alone).
 */
#include "harness.h"

#include <hetcl/context.h>
#include <hetcl/model_spec.h>
#include <hetcl/schema.h>

#include <dirent.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char source_dir[1024];

static hetcl_model_spec *load_shipped(hetcl_context *ctx, const char *file)
{
    char path[1200];
    snprintf(path, sizeof path, "%s/models/%s", source_dir, file);
    hetcl_model_spec *spec = NULL;
    CHECK_OK(ctx, hetcl_model_spec_load(ctx, path, &spec));
    return spec;
}

static void check_shape(const struct hetcl_model_shape *s, int rank, int64_t d0, int64_t d1,
                        int64_t d2)
{
    int64_t want[3] = {d0, d1, d2};
    CHECK_EQ_INT(s->rank, rank);
    for (int i = 0; i < rank && i < s->rank; i++)
        CHECK_EQ_INT(s->dims[i], want[i]);
}

static void check_param(const hetcl_model_spec *spec, const char *name, int rank, int64_t d0,
                        int64_t d1, int64_t d2, int64_t d3)
{
    const struct hetcl_model_param *q = hetcl_model_spec_find_param(spec, name);
    if (!q) {
        fprintf(stderr, "%s: no parameter %s\n", spec->name, name);
        hetcl_test_failures++;
        return;
    }
    int64_t want[4] = {d0, d1, d2, d3}, n = 1;
    CHECK_EQ_INT(q->rank, rank);
    for (int i = 0; i < rank && i < q->rank; i++) {
        CHECK_EQ_INT(q->dims[i], want[i]);
        n *= want[i];
    }
    CHECK_EQ_INT(q->n_elements, n);
}

/* Counts and shapes must agree with each other whatever the spec. */
static void check_consistent(const hetcl_model_spec *spec)
{
    int64_t total = 0, flops = 0;
    for (int i = 0; i < spec->n_layers; i++) {
        const struct hetcl_model_layer *l = &spec->layers[i];
        if (i > 0)
            CHECK(memcmp(&l->in_shape, &spec->layers[i - 1].out_shape, sizeof l->in_shape) == 0);
        int64_t n = 0;
        for (int k = 0; k < l->n_param_tensors; k++)
            n += spec->params[l->first_param + k].n_elements;
        CHECK_EQ_INT(n, l->n_parameters);
        total += n;
        flops += l->flops;
    }
    CHECK_EQ_INT(total, spec->n_parameters);
    CHECK_EQ_INT(flops, spec->flops);
    CHECK(memcmp(&spec->input_shape, &spec->layers[0].in_shape, sizeof spec->input_shape) == 0);
    CHECK(memcmp(&spec->output_shape, &spec->layers[spec->n_layers - 1].out_shape,
                 sizeof spec->output_shape) == 0);
}

static void test_mlp(hetcl_context *ctx)
{
    hetcl_model_spec *spec = load_shipped(ctx, "mlp.json");
    if (!spec)
        return;
    CHECK_EQ_STR(spec->name, "mlp");
    CHECK_EQ_INT(spec->loss, HETCL_MODEL_LOSS_SOFTMAX_CE);
    CHECK_EQ_INT(spec->n_layers, 3);
    CHECK_EQ_INT(spec->n_params, 6);
    CHECK_EQ_INT(spec->n_parameters, 784 * 256 + 256 + 256 * 128 + 128 + 128 * 10 + 10);
    CHECK_EQ_INT(spec->n_parameters, 235146);
    /* 2 FLOPs per multiply-add plus one add per bias element. */
    CHECK_EQ_INT(spec->flops, 2 * (784 * 256 + 256 * 128 + 128 * 10) + 256 + 128 + 10);
    check_shape(&spec->input_shape, 1, 784, 0, 0);
    check_shape(&spec->layers[0].out_shape, 1, 256, 0, 0);
    check_shape(&spec->output_shape, 1, 10, 0, 0);
    check_param(spec, "layers.0.weight", 2, 256, 784, 0, 0);
    check_param(spec, "layers.0.bias", 1, 256, 0, 0, 0);
    check_param(spec, "layers.2.weight", 2, 10, 128, 0, 0);
    check_param(spec, "layers.2.bias", 1, 10, 0, 0, 0);
    CHECK_EQ_STR(spec->params[0].name, "layers.0.weight");
    CHECK_EQ_STR(spec->params[1].name, "layers.0.bias");
    CHECK_EQ_INT(spec->params[0].init, HETCL_MODEL_INIT_HE_UNIFORM);
    CHECK_EQ_INT(spec->params[0].fan_in, 784);
    CHECK_EQ_INT(spec->params[0].fan_out, 256);
    CHECK_EQ_INT(spec->params[1].init, HETCL_MODEL_INIT_ZEROS);
    CHECK_EQ_INT(spec->params[4].init, HETCL_MODEL_INIT_XAVIER_UNIFORM);
    CHECK_EQ_INT(spec->layers[0].activation, HETCL_MODEL_ACT_RELU);
    CHECK_EQ_INT(spec->layers[2].activation, HETCL_MODEL_ACT_NONE);
    CHECK(hetcl_model_spec_find_param(spec, "layers.3.weight") == NULL);
    CHECK(strstr(spec->source, "models/mlp.json") != NULL);
    check_consistent(spec);
    hetcl_model_spec_destroy(spec);
}

static void test_logreg(hetcl_context *ctx)
{
    hetcl_model_spec *spec = load_shipped(ctx, "logreg.json");
    if (!spec)
        return;
    CHECK_EQ_STR(spec->name, "logreg");
    CHECK_EQ_INT(spec->n_parameters, 784 * 10 + 10);
    CHECK_EQ_INT(spec->flops, 2 * 7840 + 10);
    check_param(spec, "layers.0.weight", 2, 10, 784, 0, 0);
    CHECK_EQ_INT(spec->params[0].init, HETCL_MODEL_INIT_ZEROS);
    check_consistent(spec);
    hetcl_model_spec_destroy(spec);
}

static void test_lenet(hetcl_context *ctx)
{
    hetcl_model_spec *spec = load_shipped(ctx, "lenet.json");
    if (!spec)
        return;
    CHECK_EQ_STR(spec->name, "lenet");
    CHECK_EQ_INT(spec->n_layers, 8);
    check_shape(&spec->input_shape, 3, 1, 28, 28);
    check_shape(&spec->layers[0].out_shape, 3, 6, 28, 28); /* pad 2 keeps 28x28 */
    check_shape(&spec->layers[1].out_shape, 3, 6, 14, 14);
    check_shape(&spec->layers[2].out_shape, 3, 16, 10, 10);
    check_shape(&spec->layers[3].out_shape, 3, 16, 5, 5);
    check_shape(&spec->layers[4].out_shape, 1, 400, 0, 0);
    check_shape(&spec->layers[5].out_shape, 1, 120, 0, 0);
    check_shape(&spec->layers[6].out_shape, 1, 84, 0, 0);
    check_shape(&spec->output_shape, 1, 10, 0, 0);
    check_param(spec, "layers.0.weight", 4, 6, 1, 5, 5);
    check_param(spec, "layers.0.bias", 1, 6, 0, 0, 0);
    check_param(spec, "layers.2.weight", 4, 16, 6, 5, 5);
    check_param(spec, "layers.2.bias", 1, 16, 0, 0, 0);
    check_param(spec, "layers.5.weight", 2, 120, 400, 0, 0);
    check_param(spec, "layers.6.weight", 2, 84, 120, 0, 0);
    check_param(spec, "layers.7.weight", 2, 10, 84, 0, 0);
    CHECK_EQ_INT(spec->n_params, 10);
    CHECK_EQ_INT(spec->layers[1].n_param_tensors, 0);
    CHECK_EQ_INT(spec->layers[4].n_param_tensors, 0);
    /* conv 156 + conv 2416 + dense 48120 + dense 10164 + dense 850 */
    CHECK_EQ_INT(spec->n_parameters, (6 * 25 + 6) + (16 * 6 * 25 + 16) + (400 * 120 + 120) +
                                             (120 * 84 + 84) + (84 * 10 + 10));
    CHECK_EQ_INT(spec->n_parameters, 61706);
    int64_t conv1 = 2 * (6 * 25) * 28 * 28 + 6 * 28 * 28, pool1 = 4 * 6 * 14 * 14;
    int64_t conv2 = 2 * (16 * 6 * 25) * 10 * 10 + 16 * 10 * 10, pool2 = 4 * 16 * 5 * 5;
    int64_t dense = 2 * (400 * 120 + 120 * 84 + 84 * 10) + 120 + 84 + 10;
    CHECK_EQ_INT(spec->layers[0].flops, conv1);
    CHECK_EQ_INT(spec->layers[1].flops, pool1);
    CHECK_EQ_INT(spec->flops, conv1 + pool1 + conv2 + pool2 + dense);
    CHECK_EQ_INT(spec->flops, 845862);
    const struct hetcl_model_param *w = hetcl_model_spec_find_param(spec, "layers.0.weight");
    CHECK(w && w->fan_in == 25 && w->fan_out == 150 && w->init == HETCL_MODEL_INIT_HE_UNIFORM);
    /* "auto" on the last (activation "none") layer resolves to Xavier. */
    CHECK_EQ_INT(hetcl_model_spec_find_param(spec, "layers.7.weight")->init,
                 HETCL_MODEL_INIT_XAVIER_UNIFORM);
    CHECK_EQ_INT(spec->layers[1].stride[0], 2);
    check_consistent(spec);

    /* Another image size re-resolves: 32x32 -> 32, 16, 12, 6 -> flatten 576. */
    int64_t big[3] = {1, 32, 32};
    CHECK_OK(ctx, hetcl_model_spec_set_input(ctx, spec, 3, big));
    check_shape(&spec->layers[3].out_shape, 3, 16, 6, 6);
    check_param(spec, "layers.5.weight", 2, 120, 576, 0, 0);
    CHECK_EQ_INT(spec->n_parameters, 61706 + 120 * (576 - 400));
    check_consistent(spec);

    /* Too small for the second conv: fails, naming the layer, and leaves the spec as it was. */
    int64_t tiny[3] = {1, 4, 4};
    CHECK_EQ_INT(hetcl_model_spec_set_input(ctx, spec, 3, tiny), HETCL_ERR_FORMAT);
    CHECK(strstr(hetcl_context_last_error(ctx),
                 "lenet.json (input [1, 4, 4]): layers[2]: conv2d output height would be < 1") !=
          NULL);
    check_shape(&spec->input_shape, 3, 1, 32, 32);
    CHECK_EQ_INT(spec->n_parameters, 61706 + 120 * (576 - 400));
    int64_t flat[1] = {784};
    CHECK_EQ_INT(hetcl_model_spec_set_input(ctx, spec, 1, flat), HETCL_ERR_FORMAT);
    CHECK(strstr(hetcl_context_last_error(ctx),
                 "layers[0]: conv2d needs a [channels, height, width] input, got [784]") != NULL);
    CHECK_EQ_INT(hetcl_model_spec_set_input(ctx, spec, 2, big), HETCL_ERR_INVALID_ARG);
    int64_t zero[3] = {1, 0, 28};
    CHECK_EQ_INT(hetcl_model_spec_set_input(ctx, spec, 3, zero), HETCL_ERR_INVALID_ARG);
    check_consistent(spec);
    hetcl_model_spec_destroy(spec);
}

static void test_hogbatch(hetcl_context *ctx)
{
    hetcl_model_spec *spec = load_shipped(ctx, "mlp-8x512-sigmoid.json");
    if (!spec)
        return;
    CHECK_EQ_STR(spec->name, "mlp-8x512-sigmoid");
    CHECK_EQ_INT(spec->loss, HETCL_MODEL_LOSS_SIGMOID_CE);
    CHECK_EQ_INT(spec->n_layers, 9);
    CHECK_EQ_INT(spec->n_params, 9); /* no biases */
    int64_t n = 784 * 512 + 7 * 512 * 512 + 512 * 10;
    CHECK_EQ_INT(spec->n_parameters, n);
    CHECK_EQ_INT(spec->flops, 2 * n);
    for (int i = 0; i < 8; i++) {
        CHECK_EQ_INT(spec->layers[i].activation, HETCL_MODEL_ACT_SIGMOID);
        CHECK_EQ_INT(spec->layers[i].units, 512);
        CHECK(!spec->layers[i].bias);
    }
    CHECK_EQ_INT(spec->params[0].init, HETCL_MODEL_INIT_XAVIER_UNIFORM);
    CHECK(strstr(spec->description, "double precision") != NULL);
    CHECK(strstr(spec->description, "no biases") != NULL);
    CHECK(strstr(spec->description, "multi-label") != NULL);
    /* "input dim 784 by default": another dataset's feature count. */
    int64_t dims[1] = {3072};
    CHECK_OK(ctx, hetcl_model_spec_set_input(ctx, spec, 1, dims));
    CHECK_EQ_INT(spec->n_parameters, n + (3072 - 784) * 512);
    check_param(spec, "layers.0.weight", 2, 512, 3072, 0, 0);
    check_consistent(spec);
    hetcl_model_spec_destroy(spec);
}

/* Every .json file in models/, shipped now or later, parses. */
static void test_all_shipped(hetcl_context *ctx)
{
    char dir[1100];
    snprintf(dir, sizeof dir, "%s/models", source_dir);
    DIR *d = opendir(dir);
    CHECK(d != NULL);
    if (!d)
        return;
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        size_t len = strlen(e->d_name);
        if (len < 6 || strcmp(e->d_name + len - 5, ".json") != 0)
            continue;
        hetcl_model_spec *spec = load_shipped(ctx, e->d_name);
        if (spec) {
            check_consistent(spec);
            /* The file is named after the spec. */
            CHECK(strncmp(e->d_name, spec->name, len - 5) == 0 && strlen(spec->name) == len - 5);
        }
        hetcl_model_spec_destroy(spec);
        n++;
    }
    closedir(d);
    CHECK(n >= 4);
}

/* Test texts use ' for ", to stay readable; no case needs a literal '. */
static char *unquote(const char *text)
{
    size_t n = strlen(text);
    char *s = malloc(n + 1);
    if (!s)
        abort();
    for (size_t i = 0; i <= n; i++)
        s[i] = text[i] == '\'' ? '"' : text[i];
    return s;
}

static hetcl_status parse(hetcl_context *ctx, const char *text, hetcl_model_spec **out)
{
    char *s = unquote(text);
    hetcl_status st = hetcl_model_spec_parse(ctx, "bad.json", s, strlen(s), out);
    free(s);
    return st;
}

#define HEAD  "{'schema_version': 1, 'name': 't', 'input': {'shape': [784]}, "
#define IMG   "{'schema_version': 1, 'name': 't', 'input': {'shape': [1, 28, 28]}, "
#define SMCE  ", 'loss': 'softmax_cross_entropy'}"
#define DENSE "{'type': 'dense', 'units': 10}"

static void test_defaults(hetcl_context *ctx)
{
    hetcl_model_spec *spec = NULL;
    CHECK_OK(ctx, parse(ctx,
                        IMG "'layers': [{'type': 'conv2d', 'filters': 4, 'kernel': 3, "
                            "'activation': 'tanh'}, {'type': 'avgpool2d', 'size': 3}, "
                            "{'type': 'flatten'}, {'type': 'dense', 'units': 5, 'activation': "
                            "'relu'}, {'type': 'dense', 'units': 2, 'init': 'normal'}], "
                            "'loss': 'mse', 'init': {'bias': 'normal', 'std': 0.5}}",
                        &spec));
    if (!spec)
        return;
    CHECK_EQ_STR(spec->description, "");
    CHECK_EQ_STR(spec->source, "bad.json");
    const struct hetcl_model_layer *c = &spec->layers[0], *p = &spec->layers[1];
    CHECK(c->kernel[0] == 3 && c->kernel[1] == 3 && c->stride[0] == 1 && c->stride[1] == 1);
    CHECK(c->padding[0] == 0 && c->padding[1] == 0 && c->bias);
    check_shape(&c->out_shape, 3, 4, 26, 26);
    /* Pool stride defaults to its size; floor output size: 26 / 3 = 8. */
    CHECK(p->stride[0] == 3 && p->stride[1] == 3);
    check_shape(&p->out_shape, 3, 4, 8, 8);
    CHECK_EQ_INT(p->flops, 9 * 4 * 8 * 8);
    check_shape(&spec->layers[2].out_shape, 1, 256, 0, 0);
    CHECK_EQ_INT(c->init, HETCL_MODEL_INIT_XAVIER_UNIFORM);          /* auto, tanh */
    CHECK_EQ_INT(spec->layers[3].init, HETCL_MODEL_INIT_HE_UNIFORM); /* auto, relu */
    CHECK_EQ_INT(spec->layers[4].init, HETCL_MODEL_INIT_NORMAL);
    CHECK_EQ_INT(hetcl_model_spec_find_param(spec, "layers.0.bias")->init, HETCL_MODEL_INIT_NORMAL);
    CHECK(spec->init_std == 0.5);
    /* mse accepts an activation on the last layer and one output; check_consistent holds. */
    check_consistent(spec);
    CHECK_EQ_INT(c->groups, 1); /* the default: an ordinary convolution */
    hetcl_model_spec_destroy(spec);
    spec = NULL;

    /* A depthwise layer (groups == channels, depth multiplier 2) and a grouped one: weights
     * [filters, channels / groups, kh, kw], fans and FLOPs of one group's depth. */
    CHECK_OK(ctx, parse(ctx,
                        "{'schema_version': 1, 'name': 't', 'input': {'shape': [4, 8, 8]}, "
                        "'layers': [{'type': 'conv2d', 'filters': 8, 'kernel': 3, 'padding': 1, "
                        "'groups': 4}, {'type': 'conv2d', 'filters': 6, 'kernel': 1, 'groups': 2, "
                        "'bias': false}, {'type': 'flatten'}, " DENSE "]" SMCE,
                        &spec));
    if (spec) {
        const struct hetcl_model_layer *d = &spec->layers[0], *g = &spec->layers[1];
        CHECK_EQ_INT(d->groups, 4);
        CHECK_EQ_INT(g->groups, 2);
        check_param(spec, "layers.0.weight", 4, 8, 1, 3, 3);
        check_param(spec, "layers.1.weight", 4, 6, 4, 1, 1);
        CHECK_EQ_INT(hetcl_model_spec_find_param(spec, "layers.0.weight")->fan_in, 9);
        CHECK_EQ_INT(hetcl_model_spec_find_param(spec, "layers.1.weight")->fan_in, 4);
        CHECK_EQ_INT(d->flops, 2 * 8 * 9 * 8 * 8 + 8 * 8 * 8); /* MACs x 2 + the bias adds */
        CHECK_EQ_INT(g->flops, 2 * 6 * 4 * 8 * 8);
        check_consistent(spec);
    }
    hetcl_model_spec_destroy(spec);
    spec = NULL;

    /* Activation layers keep their input's shape and own no parameters; relu6 and leaky_relu
     * (alpha default 0.01) on dense and conv2d layers and on their own. */
    CHECK_OK(ctx,
             parse(ctx,
                   IMG "'layers': [{'type': 'conv2d', 'filters': 2, 'kernel': 3, "
                       "'activation': 'relu6'}, {'type': 'activation', 'activation': "
                       "'leaky_relu'}, {'type': 'flatten'}, {'type': 'activation', "
                       "'activation': 'leaky_relu', 'alpha': -0.25}, {'type': 'dense', "
                       "'units': 4, 'activation': 'leaky_relu', 'alpha': 0.5}, " DENSE "]" SMCE,
                   &spec));
    if (spec) {
        const struct hetcl_model_layer *L = spec->layers;
        CHECK_EQ_INT(L[0].activation, HETCL_MODEL_ACT_RELU6);
        CHECK_EQ_INT(L[0].init, HETCL_MODEL_INIT_HE_UNIFORM); /* auto, a rectifier */
        CHECK_EQ_INT(L[1].type, HETCL_MODEL_LAYER_ACTIVATION);
        CHECK_EQ_INT(L[1].activation, HETCL_MODEL_ACT_LEAKY_RELU);
        CHECK(L[1].alpha == 0.01);
        check_shape(&L[1].out_shape, 3, 2, 26, 26);
        CHECK_EQ_INT(L[1].n_param_tensors, 0);
        CHECK_EQ_INT(L[1].flops, 0);
        CHECK(L[3].alpha == -0.25);
        check_shape(&L[3].out_shape, 1, 2 * 26 * 26, 0, 0);
        CHECK(L[4].alpha == 0.5);
        CHECK_EQ_STR(hetcl_model_layer_type_name(L[1].type), "activation");
        CHECK_EQ_STR(hetcl_model_activation_name(L[0].activation), "relu6");
        check_consistent(spec);
    }
    hetcl_model_spec_destroy(spec);
    spec = NULL;

    /* Largest bounds are inclusive: 1024 layers. */
    size_t cap = 200 + 1024 * 24;
    char *text = malloc(cap);
    CHECK(text != NULL);
    if (!text)
        return;
    size_t n = (size_t) snprintf(text, cap, HEAD "'layers': [");
    for (int i = 0; i < 1024; i++)
        n += (size_t) snprintf(text + n, cap - n, "%s{'type': 'flatten'}", i ? "," : "");
    snprintf(text + n, cap - n, "], 'loss': 'mse'}");
    CHECK_OK(ctx, parse(ctx, text, &spec));
    CHECK(spec && spec->n_layers == 1024 && spec->n_params == 0);
    hetcl_model_spec_destroy(spec);
    spec = NULL;
    /* One more is too many. */
    snprintf(text + n, cap - n, ",{'type': 'flatten'}], 'loss': 'mse'}");
    CHECK_EQ_INT(parse(ctx, text, &spec), HETCL_ERR_FORMAT);
    CHECK(spec == NULL);
    CHECK(strstr(hetcl_context_last_error(ctx),
                 "bad.json: layers: expected 1 to 1024 layers, got more than 1024") != NULL);
    free(text);
}

struct bad_case {
    const char *text;
    const char *error;  /* expected substring of the detail, after "bad.json: " */
    int schema_rejects; /* 1: the schema rejects it too; 0: only the parser; -1: not JSON */
};

static const struct bad_case bad_cases[] = {
        /* JSON itself */
        {"{'schema_version': 1,", /* cJSON reports an unexpected end at the last byte */
         "JSON syntax error at byte 20 (line 1, column 21)", -1},
        {"{'a':\n tru}", "JSON syntax error at byte 7 (line 2, column 2)", -1},
        {"{} x", "unexpected text after the JSON value at byte 3", -1},
        {"", "empty (expected a JSON object)", -1},
        {" \n ", "empty (expected a JSON object)", -1},
        {"[]", "expected a JSON object at the top level, got an array of 0", 1},
        /* top level */
        {HEAD "'layers': [" DENSE "]" SMCE "x", "unexpected text after the JSON value", -1},
        {HEAD "'layers': [" DENSE "], 'lossy': 'mse'" SMCE,
         "lossy: unknown field (expected one of: schema_version, name, description, input, "
         "layers, loss, init)",
         1},
        {"{'name': 't', 'input': {'shape': [784]}, 'layers': [" DENSE "]" SMCE,
         "schema_version: missing (expected 1)", 1},
        {"{'schema_version': 2, 'name': 't', 'input': {'shape': [784]}, 'layers': [" DENSE "]" SMCE,
         "schema_version: expected 1 (the version this parser reads), got 2", 1},
        {"{'schema_version': 1, 'input': {'shape': [784]}, 'layers': [" DENSE "]" SMCE,
         "name: missing (expected a string)", 1},
        {"{'schema_version': 1, 'name': 'a b', 'input': {'shape': [784]}, 'layers': [" DENSE
         "]" SMCE,
         "name: expected letters, digits, '-', '_' or '.', got \"a b\"", 1},
        {"{'schema_version': 1, 'name': 7, 'input': {'shape': [784]}, 'layers': [" DENSE "]" SMCE,
         "name: expected a string, got 7", 1},
        {HEAD "'description': ['x'], 'layers': [" DENSE "]" SMCE,
         "description: expected a string, got an array of 1", 1},
        {"{'schema_version': 1, 'name': 't', 'layers': [" DENSE "]" SMCE,
         "input: missing (expected an object with a \"shape\")", 1},
        {"{'schema_version': 1, 'name': 't', 'input': {'shape': [1, 1, 28, 28]}, 'layers': [" DENSE
         "]" SMCE,
         "input.shape: expected [features], [height, width] or [channels, height, width], got "
         "an array of 4",
         1},
        {"{'schema_version': 1, 'name': 't', 'input': {'shape': [28, 28]}, 'layers': [" DENSE
         "]" SMCE,
         "layers[0]: dense needs a flat [n] input, got [28, 28]", 0},
        {"{'schema_version': 1, 'name': 't', 'input': {'shape': [0]}, 'layers': [" DENSE "]" SMCE,
         "input.shape[0]: expected an integer >= 1, got 0", 1},
        {"{'schema_version': 1, 'name': 't', 'input': {'shape': [784], 'dtype': 'f64'}, "
         "'layers': [" DENSE "]" SMCE,
         "input.dtype: unknown field (expected one of: shape)", 1},
        {"{'schema_version': 1, 'name': 't', 'input': {'shape': [16777216, 16777216, 1]}, "
         "'layers': [{'type': 'flatten'}]" SMCE,
         "input.shape: expected at most 268435456 elements per example", 0},
        {HEAD "'layers': []" SMCE, "layers: expected 1 to 1024 layers, got 0", 1},
        {HEAD "'layers': {}" SMCE, "layers: expected an array of layer objects, got an object", 1},
        {HEAD "'layers': [" DENSE "]}",
         "loss: missing (expected one of: softmax_cross_entropy, "
         "sigmoid_cross_entropy, mse)",
         1},
        {HEAD "'layers': [" DENSE "], 'loss': 'hinge'}",
         "loss: unknown loss \"hinge\" (expected one of: softmax_cross_entropy, "
         "sigmoid_cross_entropy, mse)",
         1},
        /* layers: fields */
        {HEAD "'layers': [{'type': 'dense', 'units': 64, 'activation': 'relu'}, {'type': "
              "'dense', 'units': 32}, {'type': 'dense', 'units': 'x'}]" SMCE,
         "layers[2].units: expected an integer >= 1, got \"x\"", 1},
        {HEAD "'layers': [{'type': 'dense', 'units': 1.5}]" SMCE,
         "layers[0].units: expected an integer >= 1, got 1.5", 1},
        {HEAD "'layers': [{'type': 'dense', 'units': 0}]" SMCE,
         "layers[0].units: expected an integer >= 1, got 0", 1},
        {HEAD "'layers': [{'type': 'dense', 'units': 1e20}]" SMCE,
         "layers[0].units: expected an integer <= 16777216, got 1e+20", 1},
        {HEAD "'layers': [{'type': 'dense'}]" SMCE,
         "layers[0].units: missing (expected an integer >= 1)", 1},
        {HEAD "'layers': [{'units': 10}]" SMCE,
         "layers[0].type: missing (expected one of: "
         "dense, conv2d, maxpool2d, avgpool2d, flatten, kernel, slide, activation, add, concat, "
         "mul, slice, reshape, softmax, transpose, matmul)",
         1},
        {HEAD "'layers': [{'type': 'lstm', 'units': 10}]" SMCE,
         "layers[0].type: unknown layer type \"lstm\" (expected one of: dense, conv2d, "
         "maxpool2d, avgpool2d, flatten, kernel, slide, activation, add, concat, mul, slice, "
         "reshape, softmax, transpose, matmul)",
         1},
        {HEAD "'layers': [10]" SMCE, "layers[0]: expected an object with a \"type\", got 10", 1},
        /* slide layers: the last one, under softmax_cross_entropy; bounded hashing */
        {HEAD "'layers': [{'type': 'slide', 'units': 10}, {'type': 'dense', 'units': 10}]" SMCE,
         "layers[0]: a slide layer must be the last layer, under softmax_cross_entropy (got "
         "layer 1 of 2, loss softmax_cross_entropy)",
         0},
        {HEAD "'layers': [{'type': 'slide', 'units': 10, 'k': 9}]" SMCE,
         "layers[0].k: expected at most 8 for dwta (a bucket index of 24 bits), got 9", 0},
        {HEAD "'layers': [{'type': 'slide', 'units': 10, 'activation': 'relu'}]" SMCE,
         "layers[0].activation: unknown field", 1},
        {HEAD "'layers': [{'type': 'dense', 'units': 10, 'activation': 'softmax'}]" SMCE,
         "layers[0].activation: unknown activation \"softmax\" (expected one of: none, relu, "
         "sigmoid, tanh, relu6, leaky_relu, clip)",
         1},
        {HEAD "'layers': [{'type': 'dense', 'units': 10, 'activation': 1}]" SMCE,
         "layers[0].activation: expected a string, one of: none, relu, sigmoid, tanh, relu6, "
         "leaky_relu, clip; got 1",
         1},
        {HEAD "'layers': [{'type': 'dense', 'units': 10, 'init': 'glorot'}]" SMCE,
         "layers[0].init: unknown init \"glorot\" (expected one of: he_uniform, he_normal, "
         "xavier_uniform, xavier_normal, normal, zeros, auto)",
         1},
        {HEAD "'layers': [" DENSE "], 'init': {'default': 'orthogonal'}" SMCE,
         "init.default: unknown init \"orthogonal\"", 1},
        {HEAD "'layers': [" DENSE "], 'init': {'bias': 'ones'}" SMCE,
         "init.bias: unknown bias init \"ones\" (expected one of: zeros, normal)", 1},
        {HEAD "'layers': [" DENSE "], 'init': {'std': -1}" SMCE,
         "init.std: expected a number > 0 and <= 1000, got -1", 1},
        {HEAD "'layers': [" DENSE "], 'init': {'seed': 1}" SMCE,
         "init.seed: unknown field (expected one of: default, bias, std)", 1},
        {HEAD "'layers': [" DENSE "], 'init': 'he_uniform'" SMCE,
         "init: expected an object, got \"he_uniform\"", 1},
        {HEAD "'layers': [{'type': 'dense', 'units': 10, 'activaton': 'relu'}]" SMCE,
         "layers[0].activaton: unknown field (expected one of: type, units, activation, bias, "
         "init, alpha)",
         1},
        {HEAD "'layers': [{'type': 'dense', 'units': 10, 'units': 20}]" SMCE,
         "layers[0].units: duplicate field", 0},
        {HEAD "'layers': [{'type': 'dense', 'units': 10, 'bias': 'yes'}]" SMCE,
         "layers[0].bias: expected true or false, got \"yes\"", 1},
        {IMG "'layers': [{'type': 'maxpool2d', 'size': 2, 'pad': 1}, {'type': 'flatten'}, "
             "" DENSE "]" SMCE,
         "layers[0].pad: unknown field (expected one of: type, size, stride, padding, "
         "padding_end, ceil_mode, dilation, count_include_pad)",
         1},
        {IMG "'layers': [{'type': 'maxpool2d', 'size': 2, 'padding': 2}, {'type': 'flatten'}, "
             "" DENSE "]" SMCE,
         "layers[0].padding: expected each pad < the window's extent [2, 2] (its size, dilated)",
         0},
        /* dilated: a pad may reach the window's extent, not past it */
        {IMG "'layers': [{'type': 'maxpool2d', 'size': 2, 'dilation': [1, 3], 'padding': [0, 4]}, "
             "{'type': 'flatten'}, " DENSE "]" SMCE,
         "layers[0].padding: expected each pad < the window's extent [2, 4] (its size, dilated)",
         0},
        {IMG "'layers': [{'type': 'maxpool2d', 'size': 2, 'dilation': 0}, "
             "{'type': 'flatten'}, " DENSE "]" SMCE,
         "layers[0].dilation", 1},
        {IMG "'layers': [{'type': 'maxpool2d', 'size': 3, 'padding_end': [0, 3]}, "
             "{'type': 'flatten'}, " DENSE "]" SMCE,
         "layers[0].padding_end: expected each pad < the window's extent [3, 3] (its size, "
         "dilated)",
         0},
        {IMG "'layers': [{'type': 'maxpool2d', 'size': 2, 'count_include_pad': true}, "
             "{'type': 'flatten'}, " DENSE "]" SMCE,
         "layers[0].count_include_pad: applies only to avgpool2d", 0},
        /* matmul: two inputs [..., m, k] and [..., k, n] */
        {"{'schema_version': 1, 'name': 't', 'input': {'shape': [2, 3, 4]}, "
         "'layers': [{'type': 'matmul', 'inputs': [-1]}, {'type': 'flatten'}, " DENSE "]" SMCE,
         "layers[0].inputs: wrong size or not an array (expected an array of 2 earlier layers' "
         "indices, -1 for the network's input)",
         0},
        {"{'schema_version': 1, 'name': 't', 'input': {'shape': [2, 3, 4]}, "
         "'layers': [{'type': 'matmul', 'inputs': [-1, -1]}, {'type': 'flatten'}, " DENSE "]" SMCE,
         "layers[0]: matmul of [2, 3, 4] (inputs[0]) and [2, 3, 4] (inputs[1]): expected "
         "[..., m, k] and [..., k, n] of one rank >= 2 with equal leading dimensions",
         0},
        {"{'schema_version': 1, 'name': 't', 'input': {'shape': [2, 3, 4]}, "
         "'layers': [{'type': 'matmul', 'inputs': [-1, -1], 'axis': 1}, {'type': 'flatten'}, "
         "" DENSE "]" SMCE,
         "layers[0].axis: unknown field (expected one of: type)", 1},
        /* graphs: inputs name earlier layers; add joins equal shapes, concat channels */
        {IMG "'layers': [{'type': 'conv2d', 'filters': 2, 'kernel': 3, 'padding': 1}, "
             "{'type': 'add', 'inputs': [0, 1]}]" SMCE,
         "layers[1].inputs[1]: expected the index of an earlier layer (0 to 0) or -1", 0},
        {IMG "'layers': [{'type': 'conv2d', 'filters': 2, 'kernel': 3, 'padding': 1}, "
             "{'type': 'add'}]" SMCE,
         "layers[1].inputs: missing (expected an array of 2 earlier layers' indices",
         0}, /* the schema cannot say "inputs unless an operand" */
        {IMG "'layers': [{'type': 'conv2d', 'filters': 2, 'kernel': 3}, "
             "{'type': 'add', 'inputs': [0, -1]}, {'type': 'flatten'}, " DENSE "]" SMCE,
         "layers[1]: add of [2, 26, 26] (inputs[0]) and [1, 28, 28] (inputs[1]): expected shapes "
         "that broadcast",
         0},
        {IMG "'layers': [{'type': 'conv2d', 'filters': 2, 'kernel': 3}, "
             "{'type': 'mul', 'inputs': [0, -1]}, {'type': 'flatten'}, " DENSE "]" SMCE,
         "layers[1]: mul of [2, 26, 26] (inputs[0]) and [1, 28, 28] (inputs[1]): expected shapes "
         "that broadcast",
         0},
        {IMG "'layers': [{'type': 'conv2d', 'filters': 2, 'kernel': 3}, "
             "{'type': 'concat', 'inputs': [0, -1]}, {'type': 'flatten'}, " DENSE "]" SMCE,
         "layers[1]: concat of [2, 26, 26] (inputs[0]) and [1, 28, 28] (inputs[1]): expected "
         "equal dimensions but the axis",
         0},
        {IMG "'layers': [{'type': 'conv2d', 'filters': 2, 'kernel': 3}, "
             "{'type': 'add', 'operand': [3, 1, 1]}, {'type': 'flatten'}, " DENSE "]" SMCE,
         "layers[1]: add of [2, 26, 26] (inputs[0]) and [3, 1, 1] (operand[1]): expected shapes "
         "that broadcast",
         0},
        {IMG "'layers': [{'type': 'mul', 'inputs': [-1, -1], 'operand': [1]}]" SMCE,
         "layers[0].inputs: wrong size or not an array (expected an array of 1 earlier", 0},
        {IMG "'layers': [{'type': 'mul', 'operand': [1, 2, 3, 4]}]" SMCE,
         "layers[0].operand: expected an array of 1 to 3 dimensions, got an array of 4", 1},
        {IMG "'layers': [{'type': 'concat', 'inputs': [-1, -1], 'axis': 3}]" SMCE,
         "layers[0].axis: 3 (expected 0 to 2", 1},
        {"{'schema_version': 1, 'name': 't', 'input': {'shape': [10]}, 'layers': [{'type': "
         "'slice', 'offset': 4, 'shape': [2, 4]}]" SMCE,
         "layers[0]: slice of 8 values at offset 4: its input has 10 per example", 0},
        {"{'schema_version': 1, 'name': 't', 'input': {'shape': [10]}, 'layers': [{'type': "
         "'slice', 'offset': 4}]" SMCE,
         "layers[0].shape: expected an array of 1 to 3 dimensions, got nothing", 1},
        {IMG "'layers': [{'type': 'reshape', 'shape': [28, 27]}]" SMCE,
         "layers[0].shape: [28, 27] holds 756 values, its input [1, 28, 28] 784 (a reshape keeps "
         "every value)",
         0},
        {IMG "'layers': [{'type': 'reshape', 'shape': [28, 28], 'offset': 0}]" SMCE,
         "layers[0].offset: unknown field (expected one of: type, shape)", 1},
        {IMG "'layers': [{'type': 'flatten'}, {'type': 'dense', 'units': 10, 'activation': "
             "'clip'}]" SMCE,
         "layers[1].activation: clip is an activation layer's only", 0},
        {IMG "'layers': [{'type': 'activation', 'activation': 'relu', 'min': 0}]" SMCE,
         "layers[0].min: applies only to the activation clip, not relu", 0},
        {IMG "'layers': [{'type': 'activation', 'activation': 'clip', 'min': 2, 'max': 1}]" SMCE,
         "layers[0].max: expected max >= min (2), got 1", 0},
        {IMG "'layers': [{'type': 'activation', 'activation': 'clip', 'max': 'a'}]" SMCE,
         "layers[0].max: expected a finite number (at most 1e30 in size), got \"a\"", 1},
        {IMG "'layers': [{'type': 'transpose', 'perm': [0, 0, 1]}]" SMCE,
         "layers[0].perm: expected a permutation of 0 to 2 (its input is [1, 28, 28])", 0},
        {IMG "'layers': [{'type': 'transpose'}]" SMCE,
         "layers[0].perm: expected an array of 1 to 3 dimension indices, got nothing", 1},
        {IMG "'layers': [{'type': 'softmax', 'axis': 3}]" SMCE,
         "layers[0]: softmax axis 3 of an input of 3 dimensions [1, 28, 28] (expected 0 to 2)", 1},
        {IMG "'layers': [{'type': 'softmax', 'activation': 'relu'}]" SMCE,
         "layers[0].activation: unknown field (expected one of: type, axis)", 1},
        {IMG "'layers': [{'type': 'reshape'}]" SMCE,
         "layers[0].shape: expected an array of 1 to 3 dimensions, got nothing", 1},
        {IMG "'layers': [{'type': 'dense', 'units': 3, 'inputs': [-1, 0]}]" SMCE,
         "layers[0].inputs: wrong size or not an array (expected an array of 1 earlier", 0},
        {IMG "'layers': [{'type': 'concat', 'inputs': [-1, -1], 'activation': 'relu'}]" SMCE,
         "layers[0].activation: unknown field (expected one of: type, axis)", 1},
        {IMG "'layers': [{'type': 'flatten', 'units': 3}, " DENSE "]" SMCE,
         "layers[0].units: unknown field (expected one of: type)", 1},
        {IMG "'layers': [{'type': 'conv2d', 'filters': 6, 'kernel': [5]}]" SMCE,
         "layers[0].kernel: expected an integer >= 1 or an array of 2 ([height, width]), got an "
         "array of 1",
         1},
        {IMG "'layers': [{'type': 'conv2d', 'filters': 6, 'kernel': [5, 'a']}]" SMCE,
         "layers[0].kernel[1]: expected an integer >= 1, got \"a\"", 1},
        {IMG "'layers': [{'type': 'conv2d', 'filters': 6}]" SMCE,
         "layers[0].kernel: missing (expected an integer >= 1 or [height, width])", 1},
        {IMG "'layers': [{'type': 'conv2d', 'filters': 6, 'kernel': 5, 'padding': -1}]" SMCE,
         "layers[0].padding: expected an integer >= 0, got -1", 1},
        {IMG "'layers': [{'type': 'conv2d', 'filters': 6, 'kernel': 5, 'stride': 0}]" SMCE,
         "layers[0].stride: expected an integer >= 1, got 0", 1},
        {IMG "'layers': [{'type': 'maxpool2d'}]" SMCE,
         "layers[0].size: missing (expected an integer >= 1 or [height, width])", 1},
        /* shapes: the parser's alone */
        {"{'schema_version': 1, 'name': 't', 'input': {'shape': [1, 4, 28]}, 'layers': [{'type': "
         "'conv2d', 'filters': 6, 'kernel': 5}, {'type': 'flatten'}, " DENSE "]" SMCE,
         "layers[0]: conv2d output height would be < 1: input height 4 + 2 * padding 0 < kernel 5 "
         "(input [1, 4, 28])",
         0},
        {IMG "'layers': [{'type': 'conv2d', 'filters': 6, 'kernel': [1, 40], 'padding': [0, 5]}, "
             "{'type': 'flatten'}, " DENSE "]" SMCE,
         "layers[0]: conv2d output width would be < 1: input width 28 + 2 * padding 5 < kernel 40",
         0},
        {HEAD "'layers': [{'type': 'maxpool2d', 'size': 2}, " DENSE "]" SMCE,
         "layers[0]: maxpool2d needs a [channels, height, width] input, got [784]", 0},
        {HEAD "'layers': [{'type': 'avgpool2d', 'size': 2}, " DENSE "]" SMCE,
         "layers[0]: avgpool2d needs a [channels, height, width] input, got [784]", 0},
        {HEAD "'layers': [{'type': 'conv2d', 'filters': 2, 'kernel': 3}, " DENSE "]" SMCE,
         "layers[0]: conv2d needs a [channels, height, width] input, got [784]", 0},
        {"{'schema_version': 1, 'name': 't', 'input': {'shape': [3, 1, 9]}, 'layers': [{'type': "
         "'maxpool2d', 'size': 2}, {'type': 'flatten'}, " DENSE "]" SMCE,
         "layers[0]: maxpool2d output height would be < 1: input height 1 + padding 0 + 0 < the "
         "window's extent 2",
         0},
        {IMG "'layers': [{'type': 'conv2d', 'filters': 6, 'kernel': 5, 'padding': 2}, " DENSE
             "]" SMCE,
         "layers[1]: dense needs a flat [n] input, got [6, 28, 28]; add {\"type\": \"flatten\"} "
         "before it",
         0},
        {IMG "'layers': [{'type': 'conv2d', 'filters': 6, 'kernel': 5}]" SMCE,
         "loss: softmax_cross_entropy needs a flat [n] output from the last layer, got [6, 24, 24]",
         0},
        {HEAD "'layers': [{'type': 'dense', 'units': 1}]" SMCE,
         "loss: softmax_cross_entropy needs at least 2 outputs, got 1", 0},
        {HEAD "'layers': [{'type': 'dense', 'units': 10, 'activation': 'sigmoid'}], 'loss': "
              "'sigmoid_cross_entropy'}",
         "layers[0].activation: expected \"none\" on the last layer, got \"sigmoid\": "
         "sigmoid_cross_entropy applies the output function itself",
         0},
        {"{'schema_version': 1, 'name': 't', 'input': {'shape': [16777216]}, 'layers': [{'type': "
         "'dense', 'units': 100}]" SMCE,
         "layers[0]: the model would have more than 1000000000 parameters (input [16777216])", 0},
        {HEAD "'layers': [{'type': 'dense', 'units': 16777216}, {'type': 'dense', 'units': "
              "16777216}]" SMCE,
         "the model would have more than 1000000000 parameters", 0},
        /* activation layers and leaky_relu's alpha */
        {HEAD "'layers': [{'type': 'activation'}, " DENSE "]" SMCE,
         "layers[0].activation: missing (expected one of: none, relu, sigmoid, tanh, relu6, "
         "leaky_relu, clip)",
         1},
        {HEAD "'layers': [{'type': 'dense', 'units': 4, 'activation': 'relu', 'alpha': 0.2}, "
              "" DENSE "]" SMCE,
         "layers[0].alpha: applies only to the activation leaky_relu, not relu", 0},
        {HEAD "'layers': [{'type': 'activation', 'activation': 'leaky_relu', 'alpha': 'x'}, "
              "" DENSE "]" SMCE,
         "layers[0].alpha: expected a finite number (at most 1e6 in size), got \"x\"", 1},
        {HEAD "'layers': [{'type': 'activation', 'activation': 'relu', 'units': 3}, " DENSE
              "]" SMCE,
         "layers[0].units: unknown field (expected one of: type, activation, alpha, min, max)", 1},
        /* grouped convolutions: groups must divide the channels and the filters */
        {"{'schema_version': 1, 'name': 't', 'input': {'shape': [6, 8, 8]}, 'layers': "
         "[{'type': 'conv2d', 'filters': 6, 'kernel': 3, 'groups': 4}, {'type': 'flatten'}, " DENSE
         "]" SMCE,
         "layers[0]: conv2d groups 4 must divide both the input channels (6) and filters (6)", 0},
        {"{'schema_version': 1, 'name': 't', 'input': {'shape': [6, 8, 8]}, 'layers': "
         "[{'type': 'conv2d', 'filters': 8, 'kernel': 3, 'groups': 3}, {'type': 'flatten'}, " DENSE
         "]" SMCE,
         "conv2d groups 3 must divide both the input channels (6) and filters (8)", 0},
        {"{'schema_version': 1, 'name': 't', 'input': {'shape': [6, 8, 8]}, 'layers': "
         "[{'type': 'conv2d', 'filters': 6, 'kernel': 3, 'groups': 0}, {'type': 'flatten'}, " DENSE
         "]" SMCE,
         "layers[0].groups: expected an integer >= 1, got 0", 1},
        {"{'schema_version': 1, 'name': 't', 'input': {'shape': [1, 16384, 16384]}, 'layers': "
         "[{'type': 'conv2d', 'filters': 2, 'kernel': 1}, {'type': 'flatten'}, " DENSE "]" SMCE,
         "layers[0]: conv2d output would have more than 268435456 elements per example", 0},
};

static void test_bad_specs(hetcl_context *ctx)
{
    char path[1200], err[1024];
    snprintf(path, sizeof path, "%s/reports/schema/model.schema.json", source_dir);
    cJSON *schema = NULL;
    CHECK_EQ_INT(hetcl_schema_read_json(path, &schema, err, sizeof err), HETCL_OK);
    for (size_t i = 0; i < sizeof bad_cases / sizeof bad_cases[0]; i++) {
        const struct bad_case *c = &bad_cases[i];
        hetcl_model_spec *spec = (hetcl_model_spec *) &spec; /* must be reset to NULL */
        hetcl_status s = parse(ctx, c->text, &spec);
        const char *detail = hetcl_context_last_error(ctx);
        bool ok = s == HETCL_ERR_FORMAT && spec == NULL && strncmp(detail, "bad.json: ", 10) == 0 &&
                  strstr(detail, c->error) != NULL && !strchr(detail, '\n');
        if (!ok) {
            fprintf(stderr, "bad case %zu: %s\n  status %s, detail: %s\n  expected: %s\n", i,
                    c->text, hetcl_status_name(s), detail, c->error);
            hetcl_test_failures++;
        }
        if (s == HETCL_OK)
            hetcl_model_spec_destroy(spec);
        if (c->schema_rejects < 0 || !schema)
            continue;
        char *text = unquote(c->text);
        cJSON *doc = cJSON_Parse(text);
        free(text);
        CHECK(doc != NULL);
        hetcl_status v = hetcl_schema_validate(schema, doc, err, sizeof err);
        hetcl_status want = c->schema_rejects ? HETCL_ERR_FORMAT : HETCL_OK;
        if (v != want) {
            fprintf(stderr, "bad case %zu: schema gave %s (%s), expected %s\n", i,
                    hetcl_status_name(v), err, hetcl_status_name(want));
            hetcl_test_failures++;
        }
        cJSON_Delete(doc);
    }
    cJSON_Delete(schema);
}

/* Pools with ONNX's padding and ceil_mode: the output sides of ResNet's stem (112 -> 56 with
 * size 3, stride 2, padding 1), SqueezeNet's ceil_mode (111 -> 55, floor 55; 54 -> 27 vs 26),
 * asymmetric padding, and a ceil window that would start in the end padding (5 + 1 + 1, size 2,
 * stride 2: 4 by the ceiling, 3 by the rule). */
static void test_pool_padding(hetcl_context *ctx)
{
    static const struct {
        const char *layer;
        int64_t in, out_h, out_w;
    } cases[] = {
            {"'type': 'maxpool2d', 'size': 3, 'stride': 2, 'padding': 1", 112, 56, 56},
            {"'type': 'maxpool2d', 'size': 3, 'stride': 2, 'ceil_mode': true", 54, 27, 27},
            {"'type': 'maxpool2d', 'size': 3, 'stride': 2", 54, 26, 26},
            {"'type': 'avgpool2d', 'size': 3, 'stride': 1, 'padding': [1, 0], "
             "'padding_end': [1, 2], 'count_include_pad': true",
             7, 7, 7},
            {"'type': 'avgpool2d', 'size': 2, 'padding': 1, 'ceil_mode': true", 5, 3, 3},
            /* dilation 2: windows of extent 3; 1 x 3 windows of strides 1 and 2 */
            {"'type': 'maxpool2d', 'size': 2, 'stride': 2, 'dilation': 2, 'padding_end': 1", 12, 6,
             6},
            {"'type': 'maxpool2d', 'size': 2, 'stride': 1, 'dilation': [2, 3]", 8, 6, 5},
            {"'type': 'avgpool2d', 'size': [1, 3], 'stride': [1, 2], 'padding': [0, 1]", 9, 9, 5},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char text[512];
        snprintf(text, sizeof text,
                 "{'schema_version': 1, 'name': 't', 'input': {'shape': [2, %lld, %lld]}, "
                 "'layers': [{%s}, {'type': 'flatten'}, " DENSE "]" SMCE,
                 (long long) cases[i].in, (long long) cases[i].in, cases[i].layer);
        hetcl_model_spec *spec = NULL;
        CHECK_EQ_INT(parse(ctx, text, &spec), HETCL_OK);
        if (!spec) {
            fprintf(stderr, "  case %zu: %s\n", i, hetcl_context_last_error(ctx));
            continue;
        }
        CHECK_EQ_INT(spec->layers[0].out_shape.dims[1], cases[i].out_h);
        CHECK_EQ_INT(spec->layers[0].out_shape.dims[2], cases[i].out_w);
        hetcl_model_spec_destroy(spec);
    }
}

/* A reshape is its input's values in another shape of as many: a view, without parameters; a
 * transpose reorders the dimensions. */
static void test_reshape(hetcl_context *ctx)
{
    static const char text[] =
            "{\"schema_version\": 1, \"name\": \"t\", \"input\": {\"shape\": [1, 28, 28]}, "
            "\"layers\": [{\"type\": \"reshape\", \"shape\": [4, 14, 14]}, {\"type\": "
            "\"conv2d\", \"filters\": 2, \"kernel\": 3}, {\"type\": \"flatten\"}, {\"type\": "
            "\"dense\", \"units\": 10}], \"loss\": \"softmax_cross_entropy\"}";
    hetcl_model_spec *spec = NULL;
    CHECK_OK(ctx, hetcl_model_spec_parse(ctx, "reshape.json", text, sizeof text - 1, &spec));
    if (!spec)
        return;
    const struct hetcl_model_layer *r = &spec->layers[0], *c = &spec->layers[1];
    CHECK_EQ_INT(r->type, HETCL_MODEL_LAYER_RESHAPE);
    CHECK_EQ_INT(r->out_shape.rank, 3);
    CHECK_EQ_INT(r->out_shape.dims[0], 4);
    CHECK_EQ_INT(r->out_shape.dims[2], 14);
    CHECK_EQ_INT(r->n_parameters, 0);
    CHECK_EQ_INT(c->in_shape.dims[0], 4);
    CHECK_EQ_INT(c->out_shape.dims[1], 12);
    CHECK_EQ_INT(spec->n_parameters, 2 * 4 * 3 * 3 + 2 + 10 * 2 * 12 * 12 + 10);
    hetcl_model_spec_destroy(spec);
    /* a transpose: output dimension d is input dimension perm[d] */
    static const char tr[] =
            "{\"schema_version\": 1, \"name\": \"t\", \"input\": {\"shape\": [2, 3, 4]}, "
            "\"layers\": [{\"type\": \"transpose\", \"perm\": [2, 0, 1]}, {\"type\": "
            "\"flatten\"}], \"loss\": \"mse\"}";
    spec = NULL;
    CHECK_OK(ctx, hetcl_model_spec_parse(ctx, "transpose.json", tr, sizeof tr - 1, &spec));
    if (!spec)
        return;
    CHECK_EQ_INT(spec->layers[0].out_shape.dims[0], 4);
    CHECK_EQ_INT(spec->layers[0].out_shape.dims[1], 2);
    CHECK_EQ_INT(spec->layers[0].out_shape.dims[2], 3);
    hetcl_model_spec_destroy(spec);
}

static void test_edges(hetcl_context *ctx)
{
    hetcl_model_spec *spec = NULL;
    /* A NUL inside the given length. */
    static const char with_nul[] = "{\"schema_version\": 1,\0 \"name\": \"t\"}";
    CHECK_EQ_INT(hetcl_model_spec_parse(ctx, "nul.json", with_nul, sizeof with_nul - 1, &spec),
                 HETCL_ERR_FORMAT);
    CHECK(strstr(hetcl_context_last_error(ctx), "nul.json: NUL byte at byte 21") != NULL);
    /* Not NUL-terminated: only len bytes are read (ASan would see an overread). */
    char *exact = malloc(2);
    CHECK(exact != NULL);
    if (exact) {
        memcpy(exact, "{}", 2);
        CHECK_EQ_INT(hetcl_model_spec_parse(ctx, NULL, exact, 2, &spec), HETCL_ERR_FORMAT);
        CHECK(strstr(hetcl_context_last_error(ctx),
                     "<memory>: schema_version: missing (expected 1)") != NULL);
        free(exact);
    }
    /* Deep nesting is cJSON's syntax error, not a stack overflow. */
    size_t depth = 100000;
    char *deep = malloc(2 * depth);
    CHECK(deep != NULL);
    if (deep) {
        memset(deep, '[', depth);
        memset(deep + depth, ']', depth);
        CHECK_EQ_INT(hetcl_model_spec_parse(ctx, "deep.json", deep, 2 * depth, &spec),
                     HETCL_ERR_FORMAT);
        CHECK(strstr(hetcl_context_last_error(ctx), "deep.json: JSON syntax error at byte") !=
              NULL);
        free(deep);
    }
    /* Over the size limit. */
    size_t big = HETCL_MODEL_SPEC_MAX_FILE_BYTES + 1;
    char *huge = malloc(big);
    CHECK(huge != NULL);
    if (huge) {
        memset(huge, ' ', big);
        CHECK_EQ_INT(hetcl_model_spec_parse(ctx, "huge.json", huge, big, &spec), HETCL_ERR_FORMAT);
        CHECK(strstr(hetcl_context_last_error(ctx), "huge.json: 1048577 bytes, more than the limit "
                                                    "of 1048576 for a spec") != NULL);
        free(huge);
    }
    /* A long description. */
    char *desc = malloc(6000);
    CHECK(desc != NULL);
    if (desc) {
        int n = snprintf(desc, 6000, HEAD "'description': '");
        memset(desc + n, 'd', 4097);
        snprintf(desc + n + 4097, 6000 - (size_t) n - 4097, "', 'layers': [" DENSE "]" SMCE);
        CHECK_EQ_INT(parse(ctx, desc, &spec), HETCL_ERR_FORMAT);
        CHECK(strstr(hetcl_context_last_error(ctx),
                     "bad.json: description: expected at most 4096 bytes, got 4097") != NULL);
        free(desc);
    }
    /* Files and arguments. */
    CHECK_EQ_INT(hetcl_model_spec_load(ctx, "/nonexistent/x.json", &spec), HETCL_ERR_IO);
    CHECK(spec == NULL);
    CHECK(strstr(hetcl_context_last_error(ctx), "/nonexistent/x.json: cannot open") != NULL);
    CHECK_EQ_INT(hetcl_model_spec_load(ctx, NULL, &spec), HETCL_ERR_INVALID_ARG);
    CHECK_EQ_INT(hetcl_model_spec_load(ctx, "x", NULL), HETCL_ERR_INVALID_ARG);
    CHECK_EQ_INT(hetcl_model_spec_parse(ctx, "x", NULL, 3, &spec), HETCL_ERR_INVALID_ARG);
    CHECK_EQ_INT(hetcl_model_spec_parse(ctx, "x", NULL, 0, &spec), HETCL_ERR_FORMAT);
    CHECK_EQ_INT(hetcl_model_spec_set_input(ctx, NULL, 1, NULL), HETCL_ERR_INVALID_ARG);
    /* A NULL context is allowed: the status still says what happened. */
    CHECK_EQ_INT(parse(NULL, "[]", &spec), HETCL_ERR_FORMAT);
    hetcl_model_spec_destroy(NULL);
    CHECK(hetcl_model_spec_find_param(NULL, "x") == NULL);
    CHECK_EQ_STR(hetcl_model_layer_type_name(HETCL_MODEL_LAYER_AVGPOOL2D), "avgpool2d");
    CHECK_EQ_STR(hetcl_model_activation_name(HETCL_MODEL_ACT_TANH), "tanh");
    CHECK_EQ_STR(hetcl_model_loss_name(HETCL_MODEL_LOSS_SIGMOID_CE), "sigmoid_cross_entropy");
    CHECK_EQ_STR(hetcl_model_init_name(HETCL_MODEL_INIT_ZEROS), "zeros");
    CHECK_EQ_STR(hetcl_model_init_name((enum hetcl_model_init) 6), "?");
    CHECK_EQ_STR(hetcl_model_loss_name((enum hetcl_model_loss) 99), "?");
}

/* Checks the last error after a failed parse of text: one line under 512 bytes, no raw control
 * character, naming `field` and containing `also`. */
static void check_short_error(hetcl_context *ctx, const char *text, const char *field,
                              const char *also)
{
    hetcl_model_spec *spec = NULL;
    hetcl_status st = hetcl_model_spec_parse(ctx, "big.json", text, strlen(text), &spec);
    const char *e = hetcl_context_last_error(ctx);
    bool controls = false;
    for (const char *c = e; *c; c++)
        controls = controls || (unsigned char) *c < 0x20 || *c == 0x7f;
    bool ok = st == HETCL_ERR_FORMAT && strlen(e) < 512 && !controls && strstr(e, field) &&
              strstr(e, also);
    if (!ok)
        fprintf(stderr, "a spec with a huge or hostile field: %s, %zu bytes: %.400s\n",
                hetcl_status_name(st), strlen(e), e);
    CHECK(ok);
    hetcl_model_spec_destroy(spec);
}

/* A field of a megabyte, as a value or as a member name, and a member name holding an escape
 * sequence: each error is one short line that names the field and says how long the text was,
 * never the text itself. */
static void test_huge_fields(hetcl_context *ctx)
{
    size_t n = 1000000; /* within the 1 MiB a spec may have */
    char *big = malloc(n + 1), *text = malloc(n + 512);
    if (!big || !text) {
        CHECK(big && text);
        free(big);
        free(text);
        return;
    }
    memset(big, 't', n);
    big[n] = '\0';
    snprintf(text, n + 512,
             "{\"schema_version\": 1, \"name\": \"t\", \"input\": {\"shape\": [4]}, "
             "\"layers\": [{\"type\": \"%s\"}], \"loss\": \"mse\"}",
             big);
    check_short_error(ctx, text, "layers[0].type", "(1000000 bytes)");
    snprintf(text, n + 512,
             "{\"schema_version\": 1, \"name\": \"t\", \"%s\": 1, \"input\": {\"shape\": [4]}, "
             "\"layers\": [{\"type\": \"dense\", \"units\": 1}], \"loss\": \"mse\"}",
             big);
    check_short_error(ctx, text, "unknown field", "(1000000 bytes)");
    check_short_error(
            ctx, "{\"schema_version\": 1, \"name\": \"t\", \"\\u001b[2J\\u001b]0;x\\u0007\": 1}",
            "unknown field", "\\u001b[2J");
    free(big);
    free(text);
}

int main(void)
{
    const char *src = getenv("HETCL_SOURCE_DIR");
    if (!src || !*src)
        hetcl_test_skip("HETCL_SOURCE_DIR is not set (run through ctest)");
    snprintf(source_dir, sizeof source_dir, "%s", src);
    hetcl_context *ctx = NULL;
    if (hetcl_context_create(NULL, &ctx) != HETCL_OK) {
        fprintf(stderr, "cannot create a context\n");
        return 1;
    }
    test_mlp(ctx);
    test_logreg(ctx);
    test_lenet(ctx);
    test_hogbatch(ctx);
    test_all_shipped(ctx);
    test_defaults(ctx);
    test_bad_specs(ctx);
    test_pool_padding(ctx);
    test_reshape(ctx);
    test_edges(ctx);
    test_huge_fields(ctx);
    hetcl_context_destroy(ctx);
    return hetcl_test_finish("test_model_spec");
}
