/* ONNX files for tests, written with protobuf-c (onnx_fixture.h). */
#include "onnx_fixture.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct fx {
    Onnx__ModelProto model;
    Onnx__GraphProto graph;
    Onnx__OperatorSetIdProto opset;
    Onnx__OperatorSetIdProto *opsets[1];
    void **owned; /* every allocation, freed by fx_free */
    size_t n_owned, cap_owned;
};

static void *own(struct fx *f, void *p)
{
    if (!p)
        abort();
    if (f->n_owned == f->cap_owned) {
        f->cap_owned = f->cap_owned ? 2 * f->cap_owned : 64;
        f->owned = realloc(f->owned, f->cap_owned * sizeof *f->owned);
        if (!f->owned)
            abort();
    }
    f->owned[f->n_owned++] = p;
    return p;
}

static void *zalloc(struct fx *f, size_t n)
{
    return own(f, calloc(1, n ? n : 1));
}

static char *str(struct fx *f, const char *s)
{
    return strcpy(zalloc(f, strlen(s) + 1), s);
}

/* Appends p to the array *arr of *n pointers (grown in the fixture). */
static void push(struct fx *f, void ***arr, size_t *n, void *p)
{
    void **a = zalloc(f, (*n + 1) * sizeof *a);
    if (*n)
        memcpy(a, *arr, *n * sizeof *a);
    a[(*n)++] = p;
    *arr = a;
}

struct fx *fx_new(int64_t opset)
{
    struct fx *f = calloc(1, sizeof *f);
    if (!f)
        abort();
    onnx__model_proto__init(&f->model);
    onnx__graph_proto__init(&f->graph);
    onnx__operator_set_id_proto__init(&f->opset);
    f->opset.domain = str(f, "");
    f->opset.has_version = 1;
    f->opset.version = opset;
    f->opsets[0] = &f->opset;
    f->model.has_ir_version = 1;
    f->model.ir_version = 8;
    f->model.n_opset_import = 1;
    f->model.opset_import = f->opsets;
    f->model.producer_name = str(f, "hetcl tests");
    f->model.graph = &f->graph;
    f->graph.name = str(f, "fixture");
    return f;
}

void fx_free(struct fx *f)
{
    if (!f)
        return;
    for (size_t i = 0; i < f->n_owned; i++)
        free(f->owned[i]);
    free(f->owned);
    free(f);
}

static Onnx__ValueInfoProto *value_info(struct fx *f, const char *name, int rank,
                                        const int64_t *dims)
{
    Onnx__ValueInfoProto *vi = zalloc(f, sizeof *vi);
    onnx__value_info_proto__init(vi);
    vi->name = str(f, name);
    Onnx__TypeProto *tp = zalloc(f, sizeof *tp);
    onnx__type_proto__init(tp);
    Onnx__TypeProto__Tensor *tt = zalloc(f, sizeof *tt);
    onnx__type_proto__tensor__init(tt);
    tt->has_elem_type = 1;
    tt->elem_type = ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT;
    tp->value_case = ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE;
    tp->tensor_type = tt;
    vi->type = tp;
    if (rank < 0)
        return vi; /* shape unknown */
    Onnx__TensorShapeProto *sh = zalloc(f, sizeof *sh);
    onnx__tensor_shape_proto__init(sh);
    for (int d = 0; d < rank; d++) {
        Onnx__TensorShapeProto__Dimension *dim = zalloc(f, sizeof *dim);
        onnx__tensor_shape_proto__dimension__init(dim);
        if (dims[d] > 0) {
            dim->value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE;
            dim->dim_value = dims[d];
        } else {
            dim->value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM;
            dim->dim_param = str(f, "N");
        }
        push(f, (void ***) &sh->dim, &sh->n_dim, dim);
    }
    tt->shape = sh;
    return vi;
}

void fx_input(struct fx *f, const char *name, int rank, const int64_t *dims)
{
    push(f, (void ***) &f->graph.input, &f->graph.n_input, value_info(f, name, rank, dims));
}

void fx_output(struct fx *f, const char *name)
{
    push(f, (void ***) &f->graph.output, &f->graph.n_output, value_info(f, name, -1, NULL));
}

static Onnx__TensorProto *tensor(struct fx *f, const char *name, int rank, const int64_t *dims,
                                 int type)
{
    Onnx__TensorProto *t = zalloc(f, sizeof *t);
    onnx__tensor_proto__init(t);
    t->name = str(f, name);
    t->has_data_type = 1;
    t->data_type = type;
    t->n_dims = (size_t) rank;
    t->dims = zalloc(f, (size_t) rank * sizeof *t->dims);
    if (rank > 0) /* a scalar (rank 0) has no dims to copy, and may pass NULL */
        memcpy(t->dims, dims, (size_t) rank * sizeof *t->dims);
    push(f, (void ***) &f->graph.initializer, &f->graph.n_initializer, t);
    /* an initializer that is also listed as an input, as older exporters write them */
    return t;
}

Onnx__TensorProto *fx_weight(struct fx *f, const char *name, int rank, const int64_t *dims,
                             const float *data)
{
    Onnx__TensorProto *t = tensor(f, name, rank, dims, ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT);
    size_t n = 1;
    for (int d = 0; d < rank; d++)
        n *= (size_t) dims[d];
    t->n_float_data = n;
    t->float_data = zalloc(f, n * sizeof(float));
    memcpy(t->float_data, data, n * sizeof(float));
    return t;
}

void fx_shape(struct fx *f, const char *name, int n, const int64_t *values)
{
    Onnx__TensorProto *t = tensor(f, name, 1, (int64_t[]){n}, ONNX__TENSOR_PROTO__DATA_TYPE__INT64);
    t->has_raw_data = 1;
    t->raw_data.len = (size_t) n * 8;
    t->raw_data.data = zalloc(f, t->raw_data.len);
    memcpy(t->raw_data.data, values, t->raw_data.len); /* little-endian, as ONNX's raw_data */
}

void fx_make_external(struct fx *f, Onnx__TensorProto *t, const char *location, long offset)
{
    t->n_float_data = 0;
    t->has_data_location = 1;
    t->data_location = ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL;
    const char *keys[2] = {"location", "offset"};
    char off[32];
    snprintf(off, sizeof off, "%ld", offset);
    const char *vals[2] = {location, off};
    for (int i = 0; i < 2; i++) {
        Onnx__StringStringEntryProto *e = zalloc(f, sizeof *e);
        onnx__string_string_entry_proto__init(e);
        e->key = str(f, keys[i]);
        e->value = str(f, vals[i]);
        push(f, (void ***) &t->external_data, &t->n_external_data, e);
    }
}

Onnx__NodeProto *fx_node(struct fx *f, const char *op, const char *name, const char *inputs,
                         const char *output)
{
    Onnx__NodeProto *n = zalloc(f, sizeof *n);
    onnx__node_proto__init(n);
    n->op_type = str(f, op);
    n->name = str(f, name);
    for (const char *p = inputs; p;) {
        const char *c = strchr(p, ',');
        size_t len = c ? (size_t) (c - p) : strlen(p);
        char *in = zalloc(f, len + 1);
        memcpy(in, p, len);
        push(f, (void ***) &n->input, &n->n_input, in);
        p = c ? c + 1 : NULL;
    }
    push(f, (void ***) &n->output, &n->n_output, str(f, output));
    push(f, (void ***) &f->graph.node, &f->graph.n_node, n);
    return n;
}

static Onnx__AttributeProto *attribute(struct fx *f, Onnx__NodeProto *n, const char *name,
                                       Onnx__AttributeProto__AttributeType type)
{
    Onnx__AttributeProto *a = zalloc(f, sizeof *a);
    onnx__attribute_proto__init(a);
    a->name = str(f, name);
    a->has_type = 1;
    a->type = type;
    push(f, (void ***) &n->attribute, &n->n_attribute, a);
    return a;
}

void fx_attr_int(struct fx *f, Onnx__NodeProto *n, const char *name, int64_t v)
{
    Onnx__AttributeProto *a = attribute(f, n, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT);
    a->has_i = 1;
    a->i = v;
}

void fx_attr_float(struct fx *f, Onnx__NodeProto *n, const char *name, float v)
{
    Onnx__AttributeProto *a = attribute(f, n, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT);
    a->has_f = 1;
    a->f = v;
}

void fx_attr_ints(struct fx *f, Onnx__NodeProto *n, const char *name, int count, const int64_t *v)
{
    Onnx__AttributeProto *a = attribute(f, n, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS);
    a->n_ints = (size_t) count;
    a->ints = zalloc(f, (size_t) count * sizeof *a->ints);
    memcpy(a->ints, v, (size_t) count * sizeof *a->ints);
}

Onnx__GraphProto *fx_graph(struct fx *f)
{
    return &f->graph;
}

uint8_t *fx_pack(struct fx *f, size_t *len)
{
    *len = onnx__model_proto__get_packed_size(&f->model);
    uint8_t *buf = malloc(*len ? *len : 1);
    if (!buf)
        abort();
    onnx__model_proto__pack(&f->model, buf);
    return buf;
}

int fx_write(struct fx *f, const char *path)
{
    size_t len;
    uint8_t *buf = fx_pack(f, &len);
    FILE *fp = fopen(path, "wb");
    int rc = fp && fwrite(buf, 1, len, fp) == len ? 0 : -1;
    if (fp && fclose(fp) != 0)
        rc = -1;
    free(buf);
    return rc;
}
