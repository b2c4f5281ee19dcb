/* The registry of scheduler policies, looked up by name. */
#include "rt/sched.h"

#include <string.h>

const struct rt_sched_policy *const hetcl__sched_policies[] = {
        &hetcl__sched_eager,
        &hetcl__sched_ws,
        &hetcl__sched_dmda,
        NULL,
};

const struct rt_sched_policy *hetcl__sched_find(const char *name)
{
    if (!name)
        return NULL;
    for (size_t i = 0; hetcl__sched_policies[i]; i++)
        if (strcmp(hetcl__sched_policies[i]->name, name) == 0)
            return hetcl__sched_policies[i];
    return NULL;
}
