/*
 * ONNX files for tests, written with protobuf-c from the code generated from onnx.proto (the
 * same that hetcl reads with), so that the tests need neither PyTorch nor the onnx package:
 *
 *     struct fx *f = fx_new(13);
 *     fx_input(f, "x", 2, (int64_t[]){0, 784});            // 0: a symbolic batch ("N")
 *     fx_weight(f, "w1", 2, (int64_t[]){64, 784}, data);   // an initializer
 *     Onnx__NodeProto *n = fx_node(f, "Gemm", "fc1", "x,w1,b1", "h1");
 *     fx_attr_int(f, n, "transB", 1);
 *     fx_output(f, "h1");
 *     fx_write(f, "mlp.onnx");                              // 0 on success
 *     fx_free(f);
 *
 * Everything is allocated in the fixture and freed by fx_free; helpers abort on out of memory
 * (a test program).
 */
#ifndef HETCL_TEST_ONNX_FIXTURE_H
#define HETCL_TEST_ONNX_FIXTURE_H

#include "onnx.pb-c.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct fx;

struct fx *fx_new(int64_t opset);
void fx_free(struct fx *f);
/* A float graph input; dims[0] == 0 makes the batch symbolic. */
void fx_input(struct fx *f, const char *name, int rank, const int64_t *dims);
void fx_output(struct fx *f, const char *name);
/* A float initializer (float_data); returns it, e.g. to move it to external data. */
Onnx__TensorProto *fx_weight(struct fx *f, const char *name, int rank, const int64_t *dims,
                             const float *data);
/* An int64 initializer in raw_data (Reshape's shape). */
void fx_shape(struct fx *f, const char *name, int n, const int64_t *values);
/* Moves an initializer's values to raw bytes at offset in file `location` (the caller writes
 * them there). */
void fx_make_external(struct fx *f, Onnx__TensorProto *t, const char *location, long offset);
/* A node; inputs comma-separated ("x,w,b"; an empty entry is an omitted optional input). */
Onnx__NodeProto *fx_node(struct fx *f, const char *op, const char *name, const char *inputs,
                         const char *output);
void fx_attr_int(struct fx *f, Onnx__NodeProto *n, const char *name, int64_t v);
void fx_attr_float(struct fx *f, Onnx__NodeProto *n, const char *name, float v);
void fx_attr_ints(struct fx *f, Onnx__NodeProto *n, const char *name, int count, const int64_t *v);
/* The graph, to break it on purpose. */
Onnx__GraphProto *fx_graph(struct fx *f);
/* The serialized model: a new buffer (free()) and its length. */
uint8_t *fx_pack(struct fx *f, size_t *len);
/* Writes the serialized model to path; 0 on success. */
int fx_write(struct fx *f, const char *path);

#endif /* HETCL_TEST_ONNX_FIXTURE_H */
