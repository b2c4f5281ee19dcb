/* Names of the algorithms and schedules, as the CLI and reports spell them. */
#include <hetcl/train.h>

#include <string.h>

static const char *const algo_names[] = {
        [HETCL_TRAIN_ADAPTIVE] = "adaptive", [HETCL_TRAIN_HOGBATCH] = "hogbatch",
        [HETCL_TRAIN_SYNC] = "sync",         [HETCL_TRAIN_HOGWILD] = "hogwild",
        [HETCL_TRAIN_SINGLE] = "single",
};

const char *hetcl_train_algo_name(enum hetcl_train_algo a)
{
    if ((unsigned) a >= sizeof algo_names / sizeof algo_names[0])
        return "?";
    return algo_names[a];
}

bool hetcl_train_algo_parse(const char *name, enum hetcl_train_algo *out)
{
    for (unsigned i = 0; name && i < sizeof algo_names / sizeof algo_names[0]; i++)
        if (!strcmp(name, algo_names[i])) {
            *out = (enum hetcl_train_algo) i;
            return true;
        }
    return false;
}

const char *hetcl_lr_schedule_name(enum hetcl_lr_schedule s)
{
    switch (s) {
    case HETCL_LR_CONSTANT:
        return "constant";
    case HETCL_LR_STEP:
        return "step";
    case HETCL_LR_COSINE:
        return "cosine";
    }
    return "?";
}
