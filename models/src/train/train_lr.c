/* Learning rate: schedule over epochs, linear warm-up, and linear scaling with the batch size
 * (Goyal et al. 2017; the rule HeteroGPU applies per worker, seeds.md 1.9). */
#include "train_impl.h"

#include <math.h>

double hetcl__lr_schedule(const struct hetcl_train_options *o, double t, double total)
{
    switch (o->schedule) {
    case HETCL_LR_STEP:
        return pow(o->step_gamma, floor(t / (double) (o->step_epochs > 0 ? o->step_epochs : 1)));
    case HETCL_LR_COSINE:
        if (total <= 0)
            return 1.0;
        if (t > total)
            t = total;
        return 0.5 * (1.0 + cos(3.14159265358979323846 * t / total));
    case HETCL_LR_CONSTANT:
    default:
        return 1.0;
    }
}

double hetcl__lr_at(const struct hetcl_train_options *o, int64_t batch, double t, double total)
{
    double scale = (double) batch / (double) (o->lr_batch > 0 ? o->lr_batch : 1);
    if (o->lr_scale_max > 0 && scale > o->lr_scale_max)
        scale = o->lr_scale_max;
    double lr = o->lr * scale;
    lr *= hetcl__lr_schedule(o, t, total);
    if (o->warmup_epochs > 0 && t < o->warmup_epochs)
        lr *= (t + 1e-3) / o->warmup_epochs;
    return lr;
}
