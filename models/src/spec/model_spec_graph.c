/* Layers that read earlier layers' outputs (spec_graph.h): "inputs", add, mul, concat, slice. */
#include "spec/spec_graph.h"
#include "spec/spec_impl.h"

#include <hetcl_internal/base.h>

#include <math.h>
#include <stdio.h>
#include <string.h>

static void shape_text(const struct hetcl_model_shape *s, char *buf, size_t cap)
{
    size_t n = (size_t) snprintf(buf, cap, "[");
    for (int d = 0; d < s->rank && n < cap; d++)
        n += (size_t) snprintf(buf + n, cap - n, "%s%lld", d ? ", " : "", (long long) s->dims[d]);
    if (n < cap)
        snprintf(buf + n, cap - n, "]");
}

hetcl_status hetcl__spec_parse_inputs(hetcl_context *ctx, const char *source, const cJSON *x,
                                      int index, struct hetcl_model_layer *l)
{
    /* add and mul of a constant operand read one input */
    const bool add = (l->type == HETCL_MODEL_LAYER_ADD || l->type == HETCL_MODEL_LAYER_MUL) &&
                     !cJSON_HasObjectItem(x, "operand"),
               cat = l->type == HETCL_MODEL_LAYER_CONCAT;
    const bool two = add || l->type == HETCL_MODEL_LAYER_MATMUL; /* matmul: a and b */
    const int lo = two || cat ? 2 : 1, hi = two ? 2 : cat ? HETCL_MODEL_SPEC_MAX_INPUTS : 1;
    const cJSON *in = cJSON_GetObjectItemCaseSensitive(x, "inputs");
    l->n_inputs = 1;
    l->inputs[0] = index - 1;
    if (!in && !two && !cat)
        return HETCL_OK;
    const int n = cJSON_IsArray(in) ? cJSON_GetArraySize(in) : -1;
    if (n < lo || n > hi) {
        char count[32];
        if (lo == hi)
            snprintf(count, sizeof count, "%d", lo);
        else
            snprintf(count, sizeof count, "%d to %d", lo, hi);
        return hetcl__fail(ctx, HETCL_ERR_FORMAT,
                           "%s: layers[%d].inputs: %s (expected an array of %s earlier layers' "
                           "indices, -1 for the network's input)",
                           source, index, in ? "wrong size or not an array" : "missing", count);
    }
    for (int i = 0; i < n; i++) {
        const cJSON *v = cJSON_GetArrayItem(in, i);
        if (!cJSON_IsNumber(v) || v->valuedouble != floor(v->valuedouble) || v->valuedouble < -1 ||
            v->valuedouble >= index)
            return hetcl__fail(ctx, HETCL_ERR_FORMAT,
                               "%s: layers[%d].inputs[%d]: expected the index of an earlier layer "
                               "(0 to %d) or -1 (the network's input)",
                               source, index, i, index - 1);
        l->inputs[i] = (int) v->valuedouble;
    }
    l->n_inputs = n;
    return HETCL_OK;
}

const struct hetcl_model_shape *hetcl__spec_input_shape(const struct hetcl_model_layer *layers,
                                                        int index,
                                                        const struct hetcl_model_shape *input)
{
    const int src = layers[index].inputs[0];
    return src < 0 ? input : &layers[src].out_shape;
}

static const char *const concat_fields[] = {"type", "axis"};

/* A shape of 1 to HETCL_MODEL_SPEC_MAX_RANK dimensions at x.key into out (absent: rank 0). */
static hetcl_status get_shape(const struct parser *p, const cJSON *x, const char *prefix,
                              const char *key, bool required, struct hetcl_model_shape *out)
{
    char where[64], got[HETCL_QUOTE_CAP];
    const cJSON *sh = cJSON_GetObjectItemCaseSensitive(x, key);
    out->rank = 0;
    if (!sh && !required)
        return HETCL_OK;
    const int n = cJSON_IsArray(sh) ? cJSON_GetArraySize(sh) : -1;
    hetcl__spec_join_path(where, sizeof where, prefix, key);
    if (n < 1 || n > HETCL_MODEL_SPEC_MAX_RANK) {
        hetcl__spec_describe(sh, got, sizeof got);
        return hetcl__spec_bad(p, where, "expected an array of 1 to %d dimensions, got %s",
                               HETCL_MODEL_SPEC_MAX_RANK, sh ? got : "nothing");
    }
    for (int d = 0; d < n; d++) {
        char at[80];
        snprintf(at, sizeof at, "%s[%d]", where, d);
        hetcl_status s = hetcl__spec_to_int(p, cJSON_GetArrayItem(sh, d), at, 1, &out->dims[d]);
        if (s != HETCL_OK)
            return s;
    }
    out->rank = n;
    return HETCL_OK;
}

hetcl_status hetcl__spec_parse_operand(const struct parser *p, const cJSON *x, const char *prefix,
                                       struct hetcl_model_layer *l)
{
    return get_shape(p, x, prefix, "operand", false, &l->operand);
}
static const char *const slice_fields[] = {"type", "offset", "shape"};
static const char *const reshape_fields[] = {"type", "shape"};
static const char *const transpose_fields[] = {"type", "perm"};
static const char *const matmul_fields[] = {"type"};

/* A transpose layer's "perm": 1 to HETCL_MODEL_SPEC_MAX_RANK dimension indices (checked against
 * its input's rank when the shapes are resolved). */
static hetcl_status parse_perm(const struct parser *p, const cJSON *x, const char *prefix,
                               struct hetcl_model_layer *l)
{
    char where[64], got[HETCL_QUOTE_CAP];
    hetcl__spec_join_path(where, sizeof where, prefix, "perm");
    const cJSON *a = cJSON_GetObjectItemCaseSensitive(x, "perm");
    const int n = cJSON_IsArray(a) ? cJSON_GetArraySize(a) : -1;
    if (n < 1 || n > HETCL_MODEL_SPEC_MAX_RANK) {
        hetcl__spec_describe(a, got, sizeof got);
        return hetcl__spec_bad(p, where, "expected an array of 1 to %d dimension indices, got %s",
                               HETCL_MODEL_SPEC_MAX_RANK, a ? got : "nothing");
    }
    l->n_perm = n;
    for (int i = 0; i < n; i++) {
        int64_t v = 0;
        char at[80];
        snprintf(at, sizeof at, "%s[%d]", where, i);
        hetcl_status s = hetcl__spec_to_int(p, cJSON_GetArrayItem(a, i), at, 0, &v);
        if (s != HETCL_OK)
            return s;
        l->perm[i] = (int) (v < HETCL_MODEL_SPEC_MAX_RANK ? v : HETCL_MODEL_SPEC_MAX_RANK);
    }
    return HETCL_OK;
}

hetcl_status hetcl__spec_parse_join(const struct parser *p, const cJSON *x, const char *prefix,
                                    struct hetcl_model_layer *l)
{
    int64_t v = 0;
    hetcl_status s = HETCL_OK;
    if (l->type == HETCL_MODEL_LAYER_CONCAT) {
        if ((s = hetcl__spec_check_fields(p, x, prefix, concat_fields, N_OF(concat_fields))) ==
                    HETCL_OK &&
            (s = hetcl__spec_get_int(p, x, prefix, "axis", false, 0, 0, &v)) == HETCL_OK)
            l->axis = (int) (v < HETCL_MODEL_SPEC_MAX_RANK ? v : HETCL_MODEL_SPEC_MAX_RANK);
        return s;
    }
    if (l->type == HETCL_MODEL_LAYER_MATMUL)
        return hetcl__spec_check_fields(p, x, prefix, matmul_fields, N_OF(matmul_fields));
    if (l->type == HETCL_MODEL_LAYER_TRANSPOSE)
        return (s = hetcl__spec_check_fields(p, x, prefix, transpose_fields,
                                             N_OF(transpose_fields))) != HETCL_OK
                       ? s
                       : parse_perm(p, x, prefix, l);
    if (l->type == HETCL_MODEL_LAYER_RESHAPE)
        return (s = hetcl__spec_check_fields(p, x, prefix, reshape_fields, N_OF(reshape_fields))) !=
                               HETCL_OK
                       ? s
                       : get_shape(p, x, prefix, "shape", true, &l->out_shape);
    if ((s = hetcl__spec_check_fields(p, x, prefix, slice_fields, N_OF(slice_fields))) !=
                HETCL_OK ||
        (s = hetcl__spec_get_int(p, x, prefix, "offset", false, 0, 0, &l->offset)) != HETCL_OK)
        return s;
    return get_shape(p, x, prefix, "shape", true, &l->out_shape);
}

/* Numpy's broadcast of a and b (aligned on their last dimension) into out; false when a
 * dimension differs and neither is 1. */
static bool broadcast(const struct hetcl_model_shape *a, const struct hetcl_model_shape *b,
                      struct hetcl_model_shape *out)
{
    const struct hetcl_model_shape *big = a->rank >= b->rank ? a : b;
    *out = *big;
    for (int k = 1; k <= a->rank && k <= b->rank; k++) {
        const int64_t x = a->dims[a->rank - k], y = b->dims[b->rank - k];
        if (x != y && x != 1 && y != 1)
            return false;
        out->dims[out->rank - k] = x > y ? x : y;
    }
    return true;
}

static hetcl_status slice_shape(hetcl_context *ctx, const char *source, int index,
                                const struct hetcl_model_layer *l,
                                const struct hetcl_model_shape *in, struct hetcl_model_shape *out)
{
    int64_t n = 1, total = 1;
    for (int d = 0; d < l->out_shape.rank; d++)
        n *= l->out_shape.dims[d];
    for (int d = 0; d < in->rank; d++)
        total *= in->dims[d];
    if (l->type == HETCL_MODEL_LAYER_RESHAPE && n != total) {
        char a[96], b[96];
        shape_text(in, a, sizeof a);
        shape_text(&l->out_shape, b, sizeof b);
        return hetcl__fail(ctx, HETCL_ERR_FORMAT,
                           "%s: layers[%d].shape: %s holds %lld values, its input %s %lld (a "
                           "reshape keeps every value)",
                           source, index, b, (long long) n, a, (long long) total);
    }
    if (n > total || l->offset > total - n)
        return hetcl__fail(ctx, HETCL_ERR_FORMAT,
                           "%s: layers[%d]: slice of %lld values at offset %lld: its input has "
                           "%lld per example",
                           source, index, (long long) n, (long long) l->offset, (long long) total);
    *out = l->out_shape;
    return HETCL_OK;
}

/* A transpose's output: input dimension perm[d] as dimension d, perm a permutation of them. */
static hetcl_status transpose_shape(hetcl_context *ctx, const char *source, int index,
                                    const struct hetcl_model_layer *l,
                                    const struct hetcl_model_shape *in,
                                    struct hetcl_model_shape *out)
{
    bool seen[HETCL_MODEL_SPEC_MAX_RANK] = {false};
    bool ok = l->n_perm == in->rank;
    for (int d = 0; ok && d < l->n_perm; d++) {
        ok = l->perm[d] < in->rank && !seen[l->perm[d]];
        if (ok)
            seen[l->perm[d]] = true;
    }
    if (!ok) {
        char a[96];
        shape_text(in, a, sizeof a);
        return hetcl__fail(ctx, HETCL_ERR_FORMAT,
                           "%s: layers[%d].perm: expected a permutation of 0 to %d (its input is "
                           "%s)",
                           source, index, in->rank - 1, a);
    }
    out->rank = in->rank;
    for (int d = 0; d < in->rank; d++)
        out->dims[d] = in->dims[l->perm[d]];
    return HETCL_OK;
}

/* A matmul's output: [..., m, k] x [..., k, n] -> [..., m, n], the leading dimensions equal. */
static hetcl_status matmul_shape(hetcl_context *ctx, const char *source, int index,
                                 const struct hetcl_model_shape *a,
                                 const struct hetcl_model_shape *b, struct hetcl_model_shape *out)
{
    const int r = a->rank;
    bool ok = r >= 2 && b->rank == r && a->dims[r - 1] == b->dims[r - 2];
    for (int d = 0; ok && d < r - 2; d++)
        ok = a->dims[d] == b->dims[d];
    if (!ok) {
        char sa[96], sb[96];
        shape_text(a, sa, sizeof sa);
        shape_text(b, sb, sizeof sb);
        return hetcl__fail(ctx, HETCL_ERR_FORMAT,
                           "%s: layers[%d]: matmul of %s (inputs[0]) and %s (inputs[1]): expected "
                           "[..., m, k] and [..., k, n] of one rank >= 2 with equal leading "
                           "dimensions",
                           source, index, sa, sb);
    }
    *out = *a;
    out->dims[r - 1] = b->dims[r - 1];
    return HETCL_OK;
}

hetcl_status hetcl__spec_join_shape(hetcl_context *ctx, const char *source,
                                    const struct hetcl_model_layer *layers, int index,
                                    const struct hetcl_model_shape *input,
                                    struct hetcl_model_shape *out)
{
    const struct hetcl_model_layer *l = &layers[index];
    const bool add = l->type == HETCL_MODEL_LAYER_ADD || l->type == HETCL_MODEL_LAYER_MUL;
    const int axis = l->axis;
    if (l->type == HETCL_MODEL_LAYER_TRANSPOSE)
        return transpose_shape(ctx, source, index, l, hetcl__spec_input_shape(layers, index, input),
                               out);
    if (l->type == HETCL_MODEL_LAYER_MATMUL)
        return matmul_shape(ctx, source, index, hetcl__spec_input_shape(layers, index, input),
                            l->inputs[1] < 0 ? input : &layers[l->inputs[1]].out_shape, out);
    if (l->type == HETCL_MODEL_LAYER_SLICE || l->type == HETCL_MODEL_LAYER_RESHAPE)
        return slice_shape(ctx, source, index, l, hetcl__spec_input_shape(layers, index, input),
                           out);
    *out = *hetcl__spec_input_shape(layers, index, input);
    if (!add && axis >= out->rank)
        return hetcl__fail(ctx, HETCL_ERR_FORMAT,
                           "%s: layers[%d].axis: %d (expected 0 to %d, a dimension of its "
                           "inputs)",
                           source, index, axis, out->rank - 1);
    for (int i = 1; i < l->n_inputs + (add && l->operand.rank ? 1 : 0); i++) {
        const int src = i < l->n_inputs ? l->inputs[i] : 0;
        const struct hetcl_model_shape *s = i == l->n_inputs ? &l->operand
                                            : src < 0        ? input
                                                             : &layers[src].out_shape;
        /* add and mul broadcast; concat joins dimension `axis`: the others must agree */
        bool ok = add ? broadcast(out, s, out) : s->rank == out->rank;
        for (int d = 0; !add && ok && d < s->rank; d++)
            ok = d == axis || s->dims[d] == out->dims[d];
        if (!ok) {
            char a[96], b[96];
            shape_text(hetcl__spec_input_shape(layers, index, input), a, sizeof a);
            shape_text(s, b, sizeof b);
            return hetcl__fail(ctx, HETCL_ERR_FORMAT,
                               "%s: layers[%d]: %s of %s (inputs[0]) and %s (%s[%d]): %s", source,
                               index, hetcl_model_layer_type_name(l->type), a, b,
                               i < l->n_inputs ? "inputs" : "operand", i,
                               add ? "expected shapes that broadcast (each dimension, from "
                                     "the last, equal or 1 in one of them)"
                                   : "expected equal dimensions but the axis");
        }
        if (!add && out->dims[axis] > HETCL_MODEL_SPEC_MAX_DIM - s->dims[axis])
            return hetcl__fail(ctx, HETCL_ERR_FORMAT,
                               "%s: layers[%d]: concat of over %lld along axis %d", source, index,
                               (long long) HETCL_MODEL_SPEC_MAX_DIM, axis);
        if (!add)
            out->dims[axis] += s->dims[axis];
    }
    return HETCL_OK;
}
