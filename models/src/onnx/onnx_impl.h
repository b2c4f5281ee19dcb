/*
 * ONNX import, shared by the reader (onnx_read.c: files, protobuf, tensors) and the importer
 * (onnx_import.c: the graph onto a model spec). Private to this folder; built only with
 * HETCL_WITH_ONNX (protobuf-c and the code generated from onnx.proto).
 */
#ifndef HETCL_ONNX_IMPL_H
#define HETCL_ONNX_IMPL_H

#include "onnx.pb-c.h"

#include <hetcl/onnx.h>

#include <stddef.h>
#include <stdint.h>

/* Reads the whole of path (at most max bytes) into a new buffer (*data, *len; hetcl__free it).
 * HETCL_ERR_IO when it cannot be read, HETCL_ERR_FORMAT when it is larger than max. */
hetcl_status hetcl__onnx_read_file(hetcl_context *ctx, const char *path, size_t max, uint8_t **data,
                                   size_t *len);

/* Unpacks a ModelProto; *out is freed with onnx__model_proto__free_unpacked(*out, NULL).
 * HETCL_ERR_FORMAT naming `name` when the bytes are not one. */
hetcl_status hetcl__onnx_unpack_model(hetcl_context *ctx, const char *name, const uint8_t *data,
                                      size_t len, Onnx__ModelProto **out);

/* A TensorProto's values as floats: FLOAT from float_data or raw_data, INT64 (Reshape's shape)
 * converted when each value is exact in a float (|v| <= 2^24). External data is read from
 * dir/location (dir NULL: refused; a location that is absolute or climbs out with ".." is
 * refused). `what` names the tensor in messages ("file.onnx: initializer 'w'"). */
hetcl_status hetcl__onnx_tensor(hetcl_context *ctx, const char *what, const char *dir,
                                const Onnx__TensorProto *tp, struct hetcl_onnx_tensor **out);

/* A copy of t (name included). */
hetcl_status hetcl__onnx_tensor_copy(hetcl_context *ctx, const struct hetcl_onnx_tensor *t,
                                     struct hetcl_onnx_tensor **out);

/* Maps the unpacked model onto a spec and its weights (onnx_import.c). */
hetcl_status hetcl__onnx_import(hetcl_context *ctx, const char *name, const char *dir,
                                const Onnx__ModelProto *mp, const struct hetcl_onnx_options *opt,
                                hetcl_onnx_model **out);

#endif /* HETCL_ONNX_IMPL_H */
