/*
 * ONNX files (hetcl/onnx.h): reading a ModelProto or a TensorProto with protobuf-c, tensors from
 * inline or external data, and the public entry points. Without protobuf-c (HETCL_WITH_ONNX
 * undefined) every entry point that reads says that this hetcl was built without ONNX.
 */
#include <hetcl/onnx.h>
#include <hetcl_internal/base.h>
#include <hetcl_internal/fileio.h>

#include <stdio.h>
#include <string.h>

const char *hetcl_onnx_supported_ops(void)
{
    return "Conv, Gemm (C a constant or one per example), MatMul, Add and Mul (of two computed "
           "tensors or of one and a constant, broadcasting; Add also as a MatMul's bias), Concat "
           "(an axis after the batch), BatchNormalization (inference; folded into a Conv, Gemm or "
           "MatMul before it, else a scale and shift per channel), Relu, Sigmoid, Tanh, "
           "LeakyRelu, Clip, MaxPool (dilations too), AveragePool (1-D and 2-D), "
           "GlobalAveragePool, GlobalMaxPool, Flatten, Reshape (keeping the batch first), "
           "Transpose (of each example's dimensions), Softmax (along an axis after the batch), "
           "Dropout, Identity, Constant";
}

void hetcl_onnx_tensor_destroy(struct hetcl_onnx_tensor *t)
{
    if (!t)
        return;
    hetcl__free(t->name);
    hetcl__free(t->data);
    hetcl__free(t);
}

void hetcl_onnx_model_destroy(hetcl_onnx_model *m)
{
    if (!m)
        return;
    if (m->params && m->spec)
        for (int i = 0; i < m->spec->n_params; i++)
            hetcl__free(m->params[i]);
    hetcl__free(m->params);
    hetcl_model_spec_destroy(m->spec);
    hetcl__free(m->input_name);
    hetcl__free(m->output_name);
    hetcl__free(m);
}

#ifndef HETCL_WITH_ONNX

static hetcl_status no_onnx(hetcl_context *ctx, const char *what)
{
    return hetcl__fail(ctx, HETCL_ERR_UNSUPPORTED,
                       "%s: this hetcl was built without ONNX import (configure with protobuf-c: "
                       "apt-get install protobuf-c-compiler libprotobuf-c-dev libonnx-dev)",
                       what ? what : "<memory>");
}

bool hetcl_onnx_available(void)
{
    return false;
}

hetcl_status hetcl_onnx_load(hetcl_context *ctx, const char *path,
                             const struct hetcl_onnx_options *opt, hetcl_onnx_model **out)
{
    (void) opt;
    if (out)
        *out = NULL;
    return no_onnx(ctx, path);
}

hetcl_status hetcl_onnx_parse(hetcl_context *ctx, const char *name, const void *data, size_t len,
                              const char *dir, const struct hetcl_onnx_options *opt,
                              hetcl_onnx_model **out)
{
    (void) data, (void) len, (void) dir, (void) opt;
    if (out)
        *out = NULL;
    return no_onnx(ctx, name);
}

hetcl_status hetcl_onnx_tensor_load(hetcl_context *ctx, const char *path,
                                    struct hetcl_onnx_tensor **out)
{
    if (out)
        *out = NULL;
    return no_onnx(ctx, path);
}

int hetcl_onnx_node_types(hetcl_context *ctx, const char *path, char *buf, size_t cap)
{
    if (buf && cap)
        buf[0] = '\0';
    (void) no_onnx(ctx, path);
    return -1;
}

#else /* HETCL_WITH_ONNX */

#include "onnx/onnx_impl.h"

#include <errno.h>
#include <stdlib.h>
#include <sys/stat.h>

bool hetcl_onnx_available(void)
{
    return true;
}

hetcl_status hetcl__onnx_read_file(hetcl_context *ctx, const char *path, size_t max, uint8_t **data,
                                   size_t *len)
{
    *data = NULL;
    *len = 0;
    FILE *f = fopen(path, "rb");
    struct stat st;
    int e = !f ? errno : fstat(fileno(f), &st) != 0 ? errno : S_ISREG(st.st_mode) ? 0 : EISDIR;
    if (e) {
        if (f)
            fclose(f);
        return hetcl__fail(ctx, HETCL_ERR_IO, "cannot read %s: %s", path, strerror(e));
    }
    if ((uint64_t) st.st_size > max) {
        fclose(f);
        return hetcl__fail(ctx, HETCL_ERR_FORMAT,
                           "%s: %lld bytes, more than the %zu an ONNX file "
                           "may have here",
                           path, (long long) st.st_size, max);
    }
    size_t n = (size_t) st.st_size;
    uint8_t *buf = hetcl__malloc(n ? n : 1);
    if (!buf) {
        fclose(f);
        return hetcl__fail(ctx, HETCL_ERR_NO_MEMORY, "%s: %zu bytes", path, n);
    }
    size_t got = fread(buf, 1, n, f);
    int bad = ferror(f);
    fclose(f);
    if (got != n || bad) {
        hetcl__free(buf);
        return hetcl__fail(ctx, HETCL_ERR_IO, "cannot read %s: short read", path);
    }
    *data = buf;
    *len = n;
    return HETCL_OK;
}

hetcl_status hetcl__onnx_unpack_model(hetcl_context *ctx, const char *name, const uint8_t *data,
                                      size_t len, Onnx__ModelProto **out)
{
    *out = onnx__model_proto__unpack(NULL, len, data);
    if (!*out)
        return hetcl__fail(ctx, HETCL_ERR_FORMAT,
                           "%s: not an ONNX model (the protobuf ModelProto did not decode: a "
                           "truncated file, or not ONNX)",
                           name);
    if (!(*out)->graph) {
        onnx__model_proto__free_unpacked(*out, NULL);
        *out = NULL;
        return hetcl__fail(ctx, HETCL_ERR_FORMAT, "%s: the ModelProto has no graph", name);
    }
    return HETCL_OK;
}

/* ---- tensors ------------------------------------------------------------------------------ */

#define MAX_TENSOR_ELEMS (INT64_C(1) << 31)

/* The bytes of an external tensor: dir/location from offset, length (0: to the end). */
static hetcl_status external(hetcl_context *ctx, const char *what, const char *dir,
                             const Onnx__TensorProto *tp, size_t want, uint8_t **out)
{
    const char *loc = NULL;
    long long off = 0, length = -1;
    for (size_t i = 0; i < tp->n_external_data; i++) {
        const Onnx__StringStringEntryProto *e = tp->external_data[i];
        const char *k = e->key ? e->key : "", *v = e->value ? e->value : "";
        char *end = NULL;
        if (!strcmp(k, "location")) {
            loc = v;
        } else if (!strcmp(k, "offset") || !strcmp(k, "length")) {
            errno = 0;
            long long x = strtoll(v, &end, 10);
            if (errno || end == v || *end || x < 0)
                return hetcl__fail(ctx, HETCL_ERR_FORMAT,
                                   "%s: external data %s: expected an integer >= 0", what, k);
            *(k[0] == 'o' ? &off : &length) = x;
        }
    }
    if (!loc || !*loc)
        return hetcl__fail(ctx, HETCL_ERR_FORMAT, "%s: external data without a location", what);
    if (!dir || loc[0] == '/' || !strncmp(loc, "../", 3) || strstr(loc, "/../"))
        return hetcl__fail(ctx, HETCL_ERR_FORMAT,
                           "%s: external data location must be a relative path inside the "
                           "model's directory",
                           what);
    if (length >= 0 && (size_t) length != want)
        return hetcl__fail(ctx, HETCL_ERR_FORMAT,
                           "%s: external data length %lld, the tensor's shape needs %zu bytes",
                           what, length, want);
    size_t plen = strlen(dir) + strlen(loc) + 2;
    char *path = hetcl__malloc(plen);
    uint8_t *buf = NULL;
    hetcl_status s = HETCL_OK;
    FILE *f = NULL;
    struct stat st;
    if (!path) {
        s = hetcl__fail(ctx, HETCL_ERR_NO_MEMORY, "%s: external data", what);
        goto done;
    }
    snprintf(path, plen, "%s/%s", dir, loc);
    f = fopen(path, "rb");
    if (!f || fstat(fileno(f), &st) != 0 || fseeko(f, (off_t) off, SEEK_SET) != 0) {
        s = hetcl__fail(ctx, HETCL_ERR_IO, "%s: cannot read external data %s: %s", what, path,
                        strerror(errno));
        goto done;
    }
    /* the file's size first: a shape may claim more than any file holds */
    if ((uint64_t) off > (uint64_t) st.st_size || want > (uint64_t) st.st_size - (uint64_t) off) {
        s = hetcl__fail(ctx, HETCL_ERR_FORMAT,
                        "%s: external data %s ends before offset %lld + %zu bytes", what, path, off,
                        want);
        goto done;
    }
    if (!(buf = hetcl__malloc(want ? want : 1))) {
        s = hetcl__fail(ctx, HETCL_ERR_NO_MEMORY, "%s: external data", what);
        goto done;
    }
    if (fread(buf, 1, want, f) != want)
        s = hetcl__fail(ctx, HETCL_ERR_FORMAT,
                        "%s: external data %s ends before offset %lld + %zu bytes", what, path, off,
                        want);
done:
    if (f)
        fclose(f);
    hetcl__free(path);
    if (s == HETCL_OK)
        *out = buf;
    else
        hetcl__free(buf);
    return s;
}

/* Where n values of tp are: *raw (little-endian bytes: raw_data, or external data read into
 * *ext, which the caller frees) or NULL for float_data / int64_data; each checked to hold
 * exactly n values before anything of their size is allocated. */
static hetcl_status source(hetcl_context *ctx, const char *what, const char *dir,
                           const Onnx__TensorProto *tp, size_t n, const uint8_t **raw,
                           uint8_t **ext)
{
    const bool is_f32 = tp->data_type == ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT;
    const size_t width = is_f32 ? 4 : 8;
    const size_t inline_n = is_f32 ? tp->n_float_data : tp->n_int64_data;
    *raw = NULL;
    *ext = NULL;
    if (tp->has_data_location && tp->data_location == ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL) {
        hetcl_status s = external(ctx, what, dir, tp, n * width, ext);
        *raw = *ext;
        return s;
    }
    if (tp->has_raw_data) {
        if (tp->raw_data.len != n * width)
            return hetcl__fail(ctx, HETCL_ERR_FORMAT,
                               "%s: raw_data holds %zu bytes, its shape needs %zu", what,
                               tp->raw_data.len, n * width);
        *raw = tp->raw_data.data;
    } else if (inline_n != n) {
        return hetcl__fail(ctx, HETCL_ERR_FORMAT, "%s: %zu values, its shape needs %zu", what,
                           inline_n, n);
    }
    return HETCL_OK;
}

/* Fills t->data from the values of tp at raw (NULL: inline), whose count was checked. */
static hetcl_status values(hetcl_context *ctx, const char *what, const Onnx__TensorProto *tp,
                           const uint8_t *raw, struct hetcl_onnx_tensor *t)
{
    const bool is_f32 = tp->data_type == ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT;
    const size_t n = (size_t) t->n_elements;
    hetcl_status s = HETCL_OK;
    /* raw_data is little-endian, as is every machine hetcl builds for (x86-64, aarch64). */
    for (size_t i = 0; i < n && s == HETCL_OK; i++) {
        if (is_f32) {
            if (raw)
                memcpy(&t->data[i], raw + 4 * i, 4);
            else
                t->data[i] = tp->float_data[i];
            continue;
        }
        int64_t v;
        if (raw)
            memcpy(&v, raw + 8 * i, 8);
        else
            v = tp->int64_data[i];
        if (v > (INT64_C(1) << 24) || v < -(INT64_C(1) << 24))
            s = hetcl__fail(ctx, HETCL_ERR_UNSUPPORTED,
                            "%s: int64 value %lld is too large for the importer", what,
                            (long long) v);
        t->data[i] = (float) v;
    }
    return s;
}

hetcl_status hetcl__onnx_tensor(hetcl_context *ctx, const char *what, const char *dir,
                                const Onnx__TensorProto *tp, struct hetcl_onnx_tensor **out)
{
    *out = NULL;
    if (!tp->has_data_type || (tp->data_type != ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT &&
                               tp->data_type != ONNX__TENSOR_PROTO__DATA_TYPE__INT64))
        return hetcl__fail(ctx, HETCL_ERR_UNSUPPORTED,
                           "%s: data type %d; the importer reads float32 tensors (and int64 "
                           "shapes)",
                           what, tp->has_data_type ? (int) tp->data_type : 0);
    if (tp->n_dims > HETCL_ONNX_MAX_RANK)
        return hetcl__fail(ctx, HETCL_ERR_UNSUPPORTED, "%s: rank %zu, at most %d supported", what,
                           tp->n_dims, HETCL_ONNX_MAX_RANK);
    if (tp->segment)
        return hetcl__fail(ctx, HETCL_ERR_UNSUPPORTED, "%s: segmented tensors", what);
    int64_t n = 1;
    for (size_t d = 0; d < tp->n_dims; d++) {
        if (tp->dims[d] < 0 || (tp->dims[d] > 0 && n > MAX_TENSOR_ELEMS / tp->dims[d]))
            return hetcl__fail(ctx, HETCL_ERR_FORMAT,
                               "%s: dimension %zu is %lld (expected 0 to 2^31 elements in all)",
                               what, d, (long long) tp->dims[d]);
        n *= tp->dims[d];
    }
    const uint8_t *raw = NULL;
    uint8_t *ext = NULL;
    hetcl_status s = source(ctx, what, dir, tp, (size_t) n, &raw, &ext);
    if (s != HETCL_OK)
        return s;
    struct hetcl_onnx_tensor *t = hetcl__calloc(1, sizeof *t);
    if (t) {
        t->name = hetcl__strdup(tp->name ? tp->name : "");
        t->data = hetcl__malloc(n ? (size_t) n * sizeof(float) : 1);
    }
    if (!t || !t->name || !t->data) {
        hetcl_onnx_tensor_destroy(t);
        hetcl__free(ext);
        return hetcl__fail(ctx, HETCL_ERR_NO_MEMORY, "%s: %lld floats", what, (long long) n);
    }
    t->rank = (int) tp->n_dims;
    for (int d = 0; d < t->rank; d++)
        t->dims[d] = tp->dims[d];
    t->n_elements = n;
    s = values(ctx, what, tp, raw, t);
    hetcl__free(ext);
    if (s != HETCL_OK) {
        hetcl_onnx_tensor_destroy(t);
        return s;
    }
    *out = t;
    return HETCL_OK;
}

hetcl_status hetcl__onnx_tensor_copy(hetcl_context *ctx, const struct hetcl_onnx_tensor *t,
                                     struct hetcl_onnx_tensor **out)
{
    struct hetcl_onnx_tensor *c = hetcl__calloc(1, sizeof *c);
    if (c) {
        *c = *t;
        c->name = hetcl__strdup(t->name ? t->name : "");
        c->data = hetcl__malloc(t->n_elements ? (size_t) t->n_elements * sizeof(float) : 1);
    }
    if (!c || !c->name || !c->data) {
        hetcl_onnx_tensor_destroy(c);
        *out = NULL;
        return hetcl__fail(ctx, HETCL_ERR_NO_MEMORY, "tensor copy");
    }
    memcpy(c->data, t->data, (size_t) t->n_elements * sizeof(float));
    *out = c;
    return HETCL_OK;
}

/* ---- entry points --------------------------------------------------------------------------- */

hetcl_status hetcl_onnx_parse(hetcl_context *ctx, const char *name, const void *data, size_t len,
                              const char *dir, const struct hetcl_onnx_options *opt,
                              hetcl_onnx_model **out)
{
    if (out)
        *out = NULL;
    if (!out || (!data && len))
        return hetcl__fail(ctx, HETCL_ERR_INVALID_ARG, "hetcl_onnx_parse: NULL out or data");
    if (!name)
        name = "<memory>";
    Onnx__ModelProto *mp = NULL;
    hetcl_status s = hetcl__onnx_unpack_model(ctx, name, data, len, &mp);
    if (s == HETCL_OK)
        s = hetcl__onnx_import(ctx, name, dir, mp, opt, out);
    if (mp)
        onnx__model_proto__free_unpacked(mp, NULL);
    return s;
}

hetcl_status hetcl_onnx_load(hetcl_context *ctx, const char *path,
                             const struct hetcl_onnx_options *opt, hetcl_onnx_model **out)
{
    if (out)
        *out = NULL;
    if (!path || !out)
        return hetcl__fail(ctx, HETCL_ERR_INVALID_ARG, "hetcl_onnx_load: NULL path or out");
    uint8_t *data = NULL;
    size_t len = 0;
    hetcl_status s = hetcl__onnx_read_file(ctx, path, HETCL_ONNX_MAX_FILE_BYTES, &data, &len);
    if (s != HETCL_OK)
        return s;
    char *dir = hetcl__dir_of(path);
    s = dir ? hetcl_onnx_parse(ctx, path, data, len, dir, opt, out)
            : hetcl__fail(ctx, HETCL_ERR_NO_MEMORY, "%s", path);
    hetcl__free(dir);
    hetcl__free(data);
    return s;
}

hetcl_status hetcl_onnx_tensor_load(hetcl_context *ctx, const char *path,
                                    struct hetcl_onnx_tensor **out)
{
    if (out)
        *out = NULL;
    if (!path || !out)
        return hetcl__fail(ctx, HETCL_ERR_INVALID_ARG, "hetcl_onnx_tensor_load: NULL argument");
    uint8_t *data = NULL;
    size_t len = 0;
    hetcl_status s = hetcl__onnx_read_file(ctx, path, HETCL_ONNX_MAX_FILE_BYTES, &data, &len);
    if (s != HETCL_OK)
        return s;
    Onnx__TensorProto *tp = onnx__tensor_proto__unpack(NULL, len, data);
    hetcl__free(data);
    if (!tp)
        return hetcl__fail(ctx, HETCL_ERR_FORMAT, "%s: not a serialized ONNX TensorProto", path);
    s = hetcl__onnx_tensor(ctx, path, NULL, tp, out);
    onnx__tensor_proto__free_unpacked(tp, NULL);
    return s;
}

int hetcl_onnx_node_types(hetcl_context *ctx, const char *path, char *buf, size_t cap)
{
    if (buf && cap)
        buf[0] = '\0';
    if (!path || !buf || !cap) {
        (void) hetcl__fail(ctx, HETCL_ERR_INVALID_ARG, "hetcl_onnx_node_types: NULL argument");
        return -1;
    }
    uint8_t *data = NULL;
    size_t len = 0;
    Onnx__ModelProto *mp = NULL;
    if (hetcl__onnx_read_file(ctx, path, HETCL_ONNX_MAX_FILE_BYTES, &data, &len) != HETCL_OK)
        return -1;
    hetcl_status s = hetcl__onnx_unpack_model(ctx, path, data, len, &mp);
    hetcl__free(data);
    if (s != HETCL_OK)
        return -1;
    size_t used = 0;
    for (size_t i = 0; i < mp->graph->n_node; i++) {
        const char *t = mp->graph->node[i]->op_type ? mp->graph->node[i]->op_type : "?";
        int w = snprintf(buf + used, cap - used, "%s%s", i ? "," : "", t);
        used = w < 0 || (size_t) w >= cap - used ? cap - 1 : used + (size_t) w;
    }
    int n = (int) mp->graph->n_node;
    onnx__model_proto__free_unpacked(mp, NULL);
    return n;
}

#endif /* HETCL_WITH_ONNX */
