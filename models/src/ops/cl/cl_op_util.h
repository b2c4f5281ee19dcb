/*
 * Helpers shared by the OpenCL operator implementations (ops/cl/X.c). Internal.
 *
 * Every hetcl__op_<name>_cl follows the same steps: check the argument blob and the sizes
 * (clop_args, clop_dim, clop_need: HETCL_ERR_INVALID_ARG with "<op>: <what>" on the runtime's
 * context), fetch its kernels (hetcl_cl_kernel), set their arguments (clop_set), enqueue them in
 * order on call->queue, the first waiting on call->wait (clop_launch), and return the last
 * command's event. Intermediate events are released at once: the queue is in order.
 */
#ifndef HETCL_CL_OP_UTIL_H
#define HETCL_CL_OP_UTIL_H

#include "ops/ops_impl.h"
#include <hetcl_internal/base.h>

#include <stddef.h>

/* The runtime's context, where failures are recorded. */
hetcl_context *hetcl__clop_ctx(const struct hetcl_cl_call *call);

/* The argument blob: non-NULL and exactly `size` bytes. */
hetcl_status hetcl__clop_args(const struct hetcl_cl_call *call, const char *op, size_t size);
/* A shape value: lo <= v <= INT32_MAX (kernels index with int). */
hetcl_status hetcl__clop_dim(const struct hetcl_cl_call *call, const char *op, const char *name,
                             int64_t v, int64_t lo);
/* The product of shape values as an element count, or an error above INT32_MAX. */
hetcl_status hetcl__clop_count(const struct hetcl_cl_call *call, const char *op, const char *what,
                               const int64_t *dims, int n_dims, size_t *out);
/* Buffer `index` (named `name` in messages) holds at least `bytes`. */
hetcl_status hetcl__clop_need(const struct hetcl_cl_call *call, const char *op, unsigned index,
                              const char *name, size_t bytes);

/* One kernel argument: CLOP_ARG(x) for any lvalue x (a cl_int, a float, a cl_mem). */
struct clop_arg {
    size_t size;
    const void *ptr;
};
#define CLOP_ARG(x) ((struct clop_arg){sizeof(x), &(x)})

/* Sets n arguments of k in order; name is for the detail. */
hetcl_status hetcl__clop_set(const struct hetcl_cl_call *call, cl_kernel k, const char *name,
                             const struct clop_arg *args, unsigned n);

/* Enqueues k over `dims` dimensions of `global` work-items (the real counts: each is rounded
 * up to the work-group size chosen here, and the kernels guard). n_wait/wait: what it waits
 * for (call->wait for the first command of an operator). ev: receives the command's event
 * (owned by the caller), or NULL. local: the work-group size, or NULL for clop's choice
 * (up to 64 along dimension 0, 1 elsewhere). A zero global size enqueues a marker instead
 * (OpenCL 1.2 rejects empty ranges), so that the operator still gets an event. */
hetcl_status hetcl__clop_launch(const struct hetcl_cl_call *call, cl_kernel k, const char *name,
                                unsigned dims, const size_t *global, const size_t *local,
                                cl_uint n_wait, const cl_event *wait, cl_event *ev);

/* The work-group size for kernels whose work-items are few and long (a chunk of a reduction,
 * 16 columns): {1, 1, 1} on CPU devices, where a work-group runs on one core and several
 * work-items in one group would run one after another; NULL elsewhere (clop's choice: a GPU
 * wants its work-groups full). */
const size_t *hetcl__clop_local_few(const struct hetcl_cl_call *call);

/* A marker waiting for wait[] (the event of an operator with nothing to compute). */
hetcl_status hetcl__clop_marker(const struct hetcl_cl_call *call, cl_uint n_wait,
                                const cl_event *wait, cl_event *ev);

/* Records a failed OpenCL call: "<op>: <what>: CL_... (code)" and returns HETCL_ERR_OPENCL. */
hetcl_status hetcl__clop_cl_fail(const struct hetcl_cl_call *call, const char *op, const char *what,
                                 cl_int err);

/* Whether the device supports cl_khr_fp16 (from call->desc when set, else a query). The
 * environment variable HETCL_F16_ANY_DEVICE=1 makes every device pass (tests: the f16 kernels
 * need no extension, see clkernels/f16.cl). */
bool hetcl__clop_has_fp16(const struct hetcl_cl_call *call);

/* Chains an operator's commands: the first waits for call->wait, each later one follows in
 * queue order; `last` holds the newest event (released when replaced). */
struct clop_chain {
    const struct hetcl_cl_call *call;
    cl_event last;
    bool started;
};
/* Launches k in the chain (see hetcl__clop_launch). */
hetcl_status hetcl__clop_chain_launch(struct clop_chain *ch, cl_kernel k, const char *name,
                                      unsigned dims, const size_t *global, const size_t *local);
/* The wait list for the next command of the chain (call->wait for the first). */
cl_uint hetcl__clop_chain_wait(const struct clop_chain *ch, const cl_event **wait);
/* Takes a new newest event (after a command enqueued outside clop_chain_launch). */
void hetcl__clop_chain_push(struct clop_chain *ch, cl_event ev);
/* Ends the chain: on success hands the last event to *done (a marker if nothing was enqueued);
 * on failure releases it and leaves *done NULL. Returns status (or a marker failure). */
hetcl_status hetcl__clop_chain_end(struct clop_chain *ch, hetcl_status status, cl_event *done);

/* The row softmax of loss.cl (float logits) and f16.cl (half logits, logit_bytes 2): args
 * hetcl_op_xent_args, buffers logits and probabilities (float), one work-item per row. */
hetcl_status hetcl__clop_softmax(const struct hetcl_cl_call *call, cl_event *done, const char *op,
                                 const char *file, const char *kname, size_t logit_bytes);

#endif /* HETCL_CL_OP_UTIL_H */
