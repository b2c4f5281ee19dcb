/* Argument and buffer-size checks of the host operators (see host_ops.h). */
#include "host_ops.h"

hetcl_context *hetcl__host_ctx(const struct hetcl_host_call *call)
{
    return hetcl_runtime_context(call->rt);
}

hetcl_status hetcl__host_check_args(const struct hetcl_host_call *call, size_t size, const char *op)
{
    if (!call->args || call->args_size != size) {
        return hetcl__fail(hetcl__host_ctx(call), HETCL_ERR_INVALID_ARG,
                           "%s: the arguments are %zu bytes, expected %zu", op, call->args_size,
                           size);
    }
    return HETCL_OK;
}

hetcl_status hetcl__host_count(const struct hetcl_host_call *call, const char *op, const char *what,
                               int n, const int64_t *dims, int64_t *out)
{
    int64_t total = 1;
    for (int i = 0; i < n; i++) {
        if (dims[i] < 0) {
            return hetcl__fail(hetcl__host_ctx(call), HETCL_ERR_INVALID_ARG,
                               "%s: %s has a negative dimension (%" PRId64 ")", op, what, dims[i]);
        }
        if (dims[i] != 0 && total > INT64_MAX / dims[i]) {
            return hetcl__fail(hetcl__host_ctx(call), HETCL_ERR_INVALID_ARG,
                               "%s: %s overflows 64 bits", op, what);
        }
        total *= dims[i];
    }
    *out = total;
    return HETCL_OK;
}

hetcl_status hetcl__host_check_buf(const struct hetcl_host_call *call, const char *op, int index,
                                   const char *name, int64_t elems, size_t elem_size)
{
    if (elems < 0 || (uint64_t) elems > SIZE_MAX / elem_size) {
        return hetcl__fail(hetcl__host_ctx(call), HETCL_ERR_INVALID_ARG,
                           "%s: buffer %d (%s) would exceed the address space", op, index, name);
    }
    size_t need = (size_t) elems * elem_size;
    if (call->sizes[index] < need) {
        return hetcl__fail(hetcl__host_ctx(call), HETCL_ERR_INVALID_ARG,
                           "%s: buffer %d (%s) has %zu bytes, the shapes need %zu", op, index, name,
                           call->sizes[index], need);
    }
    if (need > 0 && !call->ptrs[index]) {
        return hetcl__fail(hetcl__host_ctx(call), HETCL_ERR_INVALID_ARG,
                           "%s: buffer %d (%s) is NULL", op, index, name);
    }
    return HETCL_OK;
}
