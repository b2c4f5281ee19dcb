/*
 * Model specs: a network described as JSON (the files in models/, format in models/README.md),
 * parsed and resolved into per-layer shapes, named parameter tensors, a parameter count and forward
 * FLOPs, so that trainers, the CLI and reports agree on what "mlp" or "lenet" means.
 *
 *     hetcl_model_spec *spec = NULL;
 *     if (hetcl_model_spec_load(ctx, "models/lenet.json", &spec) != HETCL_OK) {
 *         fprintf(stderr, "%s\n", hetcl_context_last_error(ctx));
 *         // -> "models/lenet.json: layers[2].units: expected an integer >= 1, got "x""
 *         ...
 *     }
 *     for (int i = 0; i < spec->n_params; i++)   // "layers.0.weight" [6, 1, 5, 5] ...
 *         allocate(spec->params[i].name, spec->params[i].n_elements);
 *     hetcl_model_spec_destroy(spec);
 *
 * Errors: a spec that is not valid gives HETCL_ERR_FORMAT with a one-line detail on the context
 * naming the file (or the name given to _parse), the JSON path of the field and what was
 * expected. JSON syntax errors give the byte offset (and line and column). Unknown and duplicate
 * fields are errors, so that a misspelt "activaton" is not silently ignored. An unreadable file
 * gives HETCL_ERR_IO; NULL arguments HETCL_ERR_INVALID_ARG.
 *
 * Shape rules (see models/README.md): shapes are per example, without the batch dimension;
 * images are [channels, height, width]. A dense layer needs a flat ([n]) input: a dense layer
 * after conv2d or a pool without a {"type": "flatten"} between them is an error, never an
 * implicit flatten, so that the flattening order (channel-major, row-major) is always visible
 * in the spec.
 *
 * Thread-safety: parsing keeps no global state; a spec is read-only after creation except
 * through hetcl_model_spec_set_input, which must not run while another thread reads the spec.
 */
#ifndef HETCL_MODEL_SPEC_H
#define HETCL_MODEL_SPEC_H

#include <hetcl/context.h>
#include <hetcl/export.h>
#include <hetcl/status.h>

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The only "schema_version" this parser reads. */
#define HETCL_MODEL_SPEC_SCHEMA_VERSION 1

/* Bounds that keep a hostile or mistaken spec from asking for absurd memory. */
#define HETCL_MODEL_SPEC_MAX_RANK        3                   /* [n] or [c, h, w] */
#define HETCL_MODEL_SPEC_MAX_LAYERS      1024                /* entries of "layers" */
#define HETCL_MODEL_SPEC_MAX_PARAMS      INT64_C(1000000000) /* parameters in all */
#define HETCL_MODEL_SPEC_MAX_ACTIVATIONS (INT64_C(1) << 28)  /* elements of one layer's output */
#define HETCL_MODEL_SPEC_MAX_DIM         (INT64_C(1) << 24)  /* any integer field */
#define HETCL_MODEL_SPEC_MAX_FILE_BYTES  ((size_t) 1 << 20)  /* spec files are a few KiB */
#define HETCL_MODEL_SPEC_MAX_NAME        64                  /* bytes of "name", NUL excluded */
#define HETCL_MODEL_SPEC_MAX_DESCRIPTION 4096                /* bytes of "description" */

enum hetcl_model_layer_type {
    HETCL_MODEL_LAYER_DENSE = 0, /* "dense": y = act(W x + b) */
    HETCL_MODEL_LAYER_CONV2D,    /* "conv2d": cross-correlation, zero padding */
    HETCL_MODEL_LAYER_MAXPOOL2D, /* "maxpool2d": padding and ceil_mode as ONNX's MaxPool */
    HETCL_MODEL_LAYER_AVGPOOL2D, /* "avgpool2d": ... and count_include_pad as AveragePool */
    HETCL_MODEL_LAYER_FLATTEN,   /* "flatten": [c, h, w] -> [c * h * w], row-major */
    /* "kernel": a kernel machine y = sum_j alpha_j k(c_j, x) over `centers` points c_j (the
     * training set's, set by its trainer: hetcl_model_spec_set_centers); alpha [centers][units].
     * Its tensors are sized by the data, so they are not among the spec's params; trained by
     * EigenPro (<hetcl/eigenpro.h>) only. */
    HETCL_MODEL_LAYER_KERNEL,
    HETCL_MODEL_LAYER_SLIDE,      /* "slide": the logits W x + b of a dense layer whose training
                                     computes only the neurons that locality-sensitive hashing
                                     selects (SLIDE; <hetcl/slide.h>); the last layer, under a
                                     softmax_cross_entropy loss. Evaluated densely elsewhere. */
    HETCL_MODEL_LAYER_ACTIVATION, /* "activation": y = act(x), elementwise, same shape */
    HETCL_MODEL_LAYER_ADD,        /* "add": y = act(a + b) of two earlier outputs (a residual
                                     connection; "inputs" names them), of one shape or shapes
                                     that broadcast as numpy's (aligned on their last
                                     dimension, each dimension equal or 1 in one of them) */
    HETCL_MODEL_LAYER_CONCAT,     /* "concat": two or more earlier outputs joined along
                                     dimension "axis" (default 0: the channels), in order; their
                                     other dimensions agree */
    HETCL_MODEL_LAYER_MUL,        /* "mul": y = act(a * b), elementwise, broadcasting as add;
                                     add and mul with an "operand" shape read one input and
                                     take b from their weight tensor of that shape */
    HETCL_MODEL_LAYER_SLICE,      /* "slice": the values [offset, offset + n) of each example
                                     of its input, as the shape "shape" of n values ("offset",
                                     default 0): one of a network's several inputs */
    HETCL_MODEL_LAYER_RESHAPE,    /* "reshape": its input's values as the shape "shape" of as
                                     many values (row-major, so no value moves: a view) */
    HETCL_MODEL_LAYER_SOFTMAX,    /* "softmax": the softmax along dimension "axis" (default: the
                                     last) of each example, same shape (inference only) */
    HETCL_MODEL_LAYER_TRANSPOSE,  /* "transpose": each example's dimensions in the order "perm"
                                     (output dimension d is input dimension perm[d]) */
    HETCL_MODEL_LAYER_MATMUL,     /* "matmul": the matrix product a b of two earlier outputs
                                     ("inputs": 2) of one rank >= 2, [..., m, k] and [..., k, n]
                                     with equal leading dimensions (a batch of products):
                                     [..., m, n] (ONNX's MatMul of two computed tensors;
                                     inference only) */
};

/* The most inputs a layer names ("inputs"). */
#define HETCL_MODEL_SPEC_MAX_INPUTS 8

/* The kernel of a "kernel" layer (<hetcl/ops.h>'s hetcl_kernel_kind has the same values). */
enum hetcl_model_kernel {
    HETCL_MODEL_KERNEL_GAUSSIAN = 0, /* "gaussian": exp(-||x - c||^2 / (2 bandwidth^2)) */
    HETCL_MODEL_KERNEL_LAPLACIAN,    /* "laplacian": exp(-||x - c|| / bandwidth) */
};

/* The hash family of a slide layer. */
enum hetcl_model_slide_hash {
    HETCL_MODEL_SLIDE_DWTA = 0, /* "dwta": densified winner-take-all, bins of 8 (3 bits a code) */
    HETCL_MODEL_SLIDE_SIMHASH,  /* "simhash": signed random projections (1 bit a code) */
};

/* A slide layer's hashing (zero for other layers; the defaults are those of the SLIDE paper's
 * code for Amazon-670K's output layer, with periods in batches of 128 examples). */
struct hetcl_model_slide {
    enum hetcl_model_slide_hash hash; /* "hash", default "dwta" */
    int k;                            /* "k": codes per table, default 6 */
    int l;                            /* "l": tables, default 50 */
    int bucket_size;                  /* "bucket_size": ids a bucket keeps (FIFO), default 128 */
    int threshold;        /* "threshold": 0 (default) the union of the L buckets; m >= 1 the neurons
                             found in at least m of them */
    int64_t min_active;   /* "min_active": padding with random neurons, default 1000 */
    int64_t rehash_every; /* "rehash_every": batches between re-insertions, default 50 */
    int64_t rebuild_every; /* "rebuild_every": batches between new hash functions, default
                              1000 */
    int64_t random;        /* "random": uniform random neurons added to every active set beyond the
                              buckets' (default 0, as the paper: padding only up to min_active) */
    int64_t top; /* "top": 0 (default) every neuron the buckets give (threshold admits); n >= 1
                    the n found in the most buckets (SLIDE's top-k by frequency) */
    bool mips;   /* "mips": simhash only; hash the weight rows with the asymmetric MIPS transform
                    (w, sqrt(M^2 - |w|^2)) and the queries as (x, 0), M the largest row norm, so
                    that collisions rank neurons by inner product rather than cosine (default
                    false) */
};

enum hetcl_model_activation {
    HETCL_MODEL_ACT_NONE = 0,   /* "none" (identity) */
    HETCL_MODEL_ACT_RELU,       /* "relu" */
    HETCL_MODEL_ACT_SIGMOID,    /* "sigmoid" */
    HETCL_MODEL_ACT_TANH,       /* "tanh" */
    HETCL_MODEL_ACT_RELU6,      /* "relu6": min(max(z, 0), 6) */
    HETCL_MODEL_ACT_LEAKY_RELU, /* "leaky_relu": z >= 0 ? z : alpha z (layer field "alpha") */
    HETCL_MODEL_ACT_CLIP,       /* "clip": min(max(z, min), max) (layer fields "min", "max";
                                   absent: no bound); activation layers only, inference only */
};

enum hetcl_model_loss {
    HETCL_MODEL_LOSS_SOFTMAX_CE = 0, /* "softmax_cross_entropy": one class per example */
    HETCL_MODEL_LOSS_SIGMOID_CE,     /* "sigmoid_cross_entropy": independent (multi-label) */
    HETCL_MODEL_LOSS_MSE,            /* "mse" */
};

/* Initialisers; fan_in and fan_out are those of hetcl_model_param. */
enum hetcl_model_init {
    HETCL_MODEL_INIT_HE_UNIFORM = 0, /* "he_uniform": U(-a, a), a = sqrt(6 / fan_in) */
    HETCL_MODEL_INIT_HE_NORMAL,      /* "he_normal": N(0, 2 / fan_in) */
    HETCL_MODEL_INIT_XAVIER_UNIFORM, /* "xavier_uniform": a = sqrt(6 / (fan_in + fan_out)) */
    HETCL_MODEL_INIT_XAVIER_NORMAL,  /* "xavier_normal": N(0, 2 / (fan_in + fan_out)) */
    HETCL_MODEL_INIT_NORMAL,         /* "normal": N(0, init_std^2) */
    HETCL_MODEL_INIT_ZEROS,          /* "zeros" */
};

/* A per-example shape: dims[0 .. rank). */
struct hetcl_model_shape {
    int rank; /* 1, 2 or 3 */
    int64_t dims[HETCL_MODEL_SPEC_MAX_RANK];
};

enum hetcl_model_param_kind {
    HETCL_MODEL_PARAM_WEIGHT = 0,
    HETCL_MODEL_PARAM_BIAS,
};

/*
 * A parameter tensor, stored row-major in the layout of its shape:
 *   dense weight  [units, in]                              (y = W x: one row per output)
 *   conv2d weight [filters, in_channels / groups, kernel_h, kernel_w]
 *   bias          [units] or [filters]
 */
struct hetcl_model_param {
    char name[32]; /* "layers.<i>.weight" or "layers.<i>.bias", i = index in "layers" */
    int layer;     /* index into hetcl_model_spec.layers */
    enum hetcl_model_param_kind kind;
    int rank; /* 1, 2 or 4 */
    int64_t dims[4];
    int64_t n_elements;
    enum hetcl_model_init init; /* resolved: never "auto" */
    int64_t fan_in;             /* dense: in; conv2d: in_channels / groups * kh * kw */
    int64_t fan_out;            /* dense: units; conv2d: filters * kh * kw */
};

/* A resolved layer. Fields that do not apply to its type are 0. */
struct hetcl_model_layer {
    enum hetcl_model_layer_type type;
    enum hetcl_model_activation activation; /* NONE for pools and flatten */
    /* An "activation" layer's activation is `activation`; its output shape is its input's. */
    int64_t units;              /* dense */
    int64_t filters;            /* conv2d */
    int64_t kernel[2];          /* conv2d kernel, pool size: [h, w] */
    int64_t stride[2];          /* conv2d, pools: [h, w] */
    int64_t padding[2];         /* conv2d: zeros added on each side, [h, w]; pools: at the
                                   start (top, left), windows clipped to the input */
    int64_t padding_end[2];     /* pools: at the end (bottom, right); "padding_end", default
                                   "padding"; each pad < the window's side */
    bool ceil_mode;             /* pools: the output size rounded up ("ceil_mode", default false:
                                   floor), less a window that would start in the end padding */
    bool count_include_pad;     /* avgpool2d: the padding counts in the divisor (default false:
                                   the mean of the elements inside the input) */
    int64_t dilation[2];        /* pools: the distance between a window's taps, [h, w]
                                   ("dilation", default 1); else 0 */
    bool bias;                  /* dense, conv2d: has a bias tensor */
    enum hetcl_model_init init; /* dense, conv2d: resolved weight init */
    struct hetcl_model_shape in_shape, out_shape;
    int first_param;      /* index into hetcl_model_spec.params of its first tensor */
    int n_param_tensors;  /* 0, 1 (weight) or 2 (weight, bias) */
    int64_t n_parameters; /* elements in its tensors */
    int64_t flops;        /* forward FLOPs per example, as defined in models/README.md */
    enum hetcl_model_kernel kernel_kind; /* kernel */
    double bandwidth;                    /* kernel: > 0 */
    int64_t centers;                     /* kernel: 0 until hetcl_model_spec_set_centers */
    struct hetcl_model_slide slide;      /* slide layers */
    int64_t groups; /* conv2d: channel groups (1: dense; in_channels: depthwise); else 0 */
    double alpha;   /* leaky_relu's slope for z < 0 ("alpha", default 0.01); else 0 */
    double clip_min, clip_max; /* clip's bounds ("min", "max"; absent: -HUGE_VAL, HUGE_VAL) */
    int n_perm, perm[HETCL_MODEL_SPEC_MAX_RANK]; /* transpose: "perm", one per input dimension */
    /* Where its input comes from: the outputs of layers inputs[0 .. n_inputs), each earlier
     * than this one, -1 the network's input ("inputs", default [the previous layer]: a chain).
     * in_shape is inputs[0]'s output shape. add, mul: 2; concat: 2 .. HETCL_MODEL_SPEC_MAX_INPUTS;
     * any other layer: 1. */
    int n_inputs;
    int inputs[HETCL_MODEL_SPEC_MAX_INPUTS];
    int axis; /* concat: the dimension joined ("axis", 0 to rank - 1, default 0); softmax: the
                 dimension it normalises ("axis"; -1 when absent: the last) */
    /* add, mul: the shape of a constant second operand ("operand"; rank 0: none, the layer
     * reads two inputs): the layer's weight tensor, broadcast as an input would be */
    struct hetcl_model_shape operand;
    int64_t offset; /* slice: the first value taken of each example ("offset") */
};

/*
 * A parsed and resolved spec. Every field is read-only for the caller; every array and string
 * belongs to the spec (freed by hetcl_model_spec_destroy).
 */
struct hetcl_model_spec {
    char *source;      /* the path given to _load or the name given to _parse */
    char *name;        /* "name" */
    char *description; /* "description", "" when absent */
    struct hetcl_model_shape input_shape;
    struct hetcl_model_shape output_shape; /* the last layer's, always [n] */
    enum hetcl_model_loss loss;
    enum hetcl_model_init bias_init; /* "init.bias": zeros or normal */
    double init_std;                 /* "init.std": the standard deviation of "normal" */
    int n_layers;
    struct hetcl_model_layer *layers;
    int n_params;
    struct hetcl_model_param *params;
    int64_t n_parameters; /* sum of params[i].n_elements */
    int64_t flops;        /* forward FLOPs per example, sum over layers */
};
typedef struct hetcl_model_spec hetcl_model_spec;

/*
 * Reads and parses the spec at path (at most HETCL_MODEL_SPEC_MAX_FILE_BYTES). On success *out is
 * a new spec owned by the caller; on failure *out is NULL and the context holds the detail, which
 * starts with path. Returns HETCL_OK, HETCL_ERR_INVALID_ARG, HETCL_ERR_IO, HETCL_ERR_FORMAT or
 * HETCL_ERR_NO_MEMORY.
 */
HETCL_API HETCL_NODISCARD hetcl_status hetcl_model_spec_load(hetcl_context *ctx, const char *path,
                                                             hetcl_model_spec **out);

/*
 * Parses a spec from text[0 .. len) (need not be NUL-terminated; a NUL byte inside is an error).
 * name is what error messages and spec->source call it (copied); NULL means "<memory>". Same
 * results as hetcl_model_spec_load, less HETCL_ERR_IO.
 */
HETCL_API HETCL_NODISCARD hetcl_status hetcl_model_spec_parse(hetcl_context *ctx, const char *name,
                                                              const char *text, size_t len,
                                                              hetcl_model_spec **out);

/*
 * Replaces the input shape (e.g. a dataset with 3072 features for a spec written for 784) and
 * re-resolves every layer's shapes, the parameter tensors, counts and FLOPs. On failure
 * (HETCL_ERR_INVALID_ARG for a rank other than 1 or 3 or a dimension outside [1, MAX_DIM],
 * HETCL_ERR_FORMAT when a layer no longer fits, e.g. a conv whose output would be empty) the
 * spec is unchanged. Pointers into spec->params and spec->layers taken before the call are
 * invalid after a successful one.
 */
HETCL_API HETCL_NODISCARD hetcl_status hetcl_model_spec_set_input(hetcl_context *ctx,
                                                                  hetcl_model_spec *spec, int rank,
                                                                  const int64_t *dims);

/* Frees spec and everything it owns; NULL is a no-op. */
HETCL_API void hetcl_model_spec_destroy(hetcl_model_spec *spec);

/* The parameter tensor with this name ("layers.0.weight"), borrowed from spec, or NULL. */
HETCL_API const struct hetcl_model_param *hetcl_model_spec_find_param(const hetcl_model_spec *spec,
                                                                      const char *name);

/* The JSON names ("dense", "relu", "softmax_cross_entropy", "he_uniform"); static strings,
 * "?" for values outside the enum. */
HETCL_API const char *hetcl_model_layer_type_name(enum hetcl_model_layer_type t);
HETCL_API const char *hetcl_model_activation_name(enum hetcl_model_activation a);
HETCL_API const char *hetcl_model_loss_name(enum hetcl_model_loss l);
HETCL_API const char *hetcl_model_kernel_name(enum hetcl_model_kernel k);

/* Whether spec is a kernel machine: one "kernel" layer (what hetcl_eigenpro_train trains). */
HETCL_API bool hetcl_model_spec_is_kernel_machine(const hetcl_model_spec *spec);

/* Sets the number of centers of the spec's kernel layers (the trainer's training set size) and
 * their FLOPs per example (2 centers d for the distances, 2 centers units for the sum).
 * HETCL_ERR_INVALID_ARG when spec has no kernel layer or centers < 1. Not while another thread
 * reads the spec. */
HETCL_API HETCL_NODISCARD hetcl_status hetcl_model_spec_set_centers(hetcl_model_spec *spec,
                                                                    int64_t centers);

/* The tensor names of a trained kernel layer's state in a checkpoint (hetcl_eigenpro_save):
 * "layers.<i>.centers" [centers][d] (the training points, row-major) and "layers.<i>.alpha"
 * [centers][units]. */
#define HETCL_MODEL_CENTERS_FMT "layers.%d.centers"
#define HETCL_MODEL_ALPHA_FMT   "layers.%d.alpha"

/* A kernel machine's number of centers from a checkpoint of its trained state: the rows of
 * its tensor "layers.<i>.centers", set by hetcl_model_spec_set_centers so that an inference
 * plan of spec can load it. A no-op (HETCL_OK) for a spec without a kernel layer.
 * HETCL_ERR_IO (the file), HETCL_ERR_FORMAT naming the file and the tensor when it is missing
 * or not a 2-D F32 tensor of the layer's input width, with detail on ctx. */
HETCL_API HETCL_NODISCARD hetcl_status hetcl_model_spec_set_centers_from(hetcl_context *ctx,
                                                                         hetcl_model_spec *spec,
                                                                         const char *checkpoint);
HETCL_API const char *hetcl_model_init_name(enum hetcl_model_init i);

#ifdef __cplusplus
}
#endif

#endif /* HETCL_MODEL_SPEC_H */
