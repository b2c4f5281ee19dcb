/* The accelerator replica path: not wired yet (needs the operator codelets of <hetcl/ops.h>
 * on OpenCL workers). Every entry point reports HETCL_ERR_UNSUPPORTED so that the trainer
 * refuses OpenCL devices with a clear message instead of misusing them. */
#include "internal.h"
#include "train_run.h"

hetcl_status hetcl__tr_cl_prepare(struct tr *t, struct tr_dev *d)
{
    return hetcl__fail(t->ctx, HETCL_ERR_UNSUPPORTED,
                       "device %s: training on OpenCL devices is not available yet (use "
                       "--devices host)",
                       d->name);
}

hetcl_status hetcl__tr_cl_submit(struct tr *t, struct tr_slot *s)
{
    return hetcl__fail(t->ctx, HETCL_ERR_UNSUPPORTED, "device %s: no replica path", s->dev->name);
}

void hetcl__tr_cl_release(struct tr *t, struct tr_dev *d)
{
    (void) t;
    (void) d;
}
