/*
 * What hetcl set in this process's environment (env_set.h, hetcl_env_set_by_hetcl).
 *
 * The environment is the process's, so this record is too: a table behind one mutex, the only
 * mutable global of the runtime besides the environment itself. Every setenv of hetcl's goes
 * through here, under the lock, so that a query never reads a half-changed variable from
 * another of hetcl's threads (a setenv of the application's own is its race, as with getenv).
 */
#include "util/env_set.h"

#include <hetcl_internal/base.h>

#include <hetcl/device.h>

#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

/* Two variables today (OCL_ICD_PLATFORM_SORT, OCL_ICD_VENDORS); nested overrides of the second
 * take one entry each. Past the cap a setting still happens but is not recorded. */
#define MAX_ENTRIES 16

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct hetcl_env_setting entries[MAX_ENTRIES];
static size_t n_entries;

/* The latest record of name, or NULL. */
static const struct hetcl_env_setting *latest(const char *name)
{
    for (size_t i = n_entries; i-- > 0;)
        if (!strcmp(entries[i].name, name))
            return &entries[i];
    return NULL;
}

static void record(const char *name, const char *value, const char *before)
{
    if (n_entries == MAX_ENTRIES)
        return;
    struct hetcl_env_setting *e = &entries[n_entries];
    memset(e, 0, sizeof *e);
    hetcl__strlcpy(e->name, name, sizeof e->name);
    hetcl__strlcpy(e->value, value, sizeof e->value);
    /* Over one of hetcl's own values, the user's is the one that value replaced. */
    const struct hetcl_env_setting *prev = latest(name);
    if (prev && before && !strcmp(before, prev->value)) {
        e->replaced_user_value = prev->replaced_user_value;
        hetcl__strlcpy(e->user_value, prev->user_value, sizeof e->user_value);
    } else if (before) {
        e->replaced_user_value = true;
        hetcl__strlcpy(e->user_value, before, sizeof e->user_value);
    }
    n_entries++;
}

void hetcl__env_set_default(const char *name, const char *value)
{
    pthread_mutex_lock(&lock);
    if (!getenv(name) && setenv(name, value, 1) == 0)
        record(name, value, NULL);
    pthread_mutex_unlock(&lock);
}

void hetcl__env_override(const char *name, const char *value)
{
    pthread_mutex_lock(&lock);
    const char *before = getenv(name);
    char saved[HETCL_STR_MAX];
    if (before)
        hetcl__strlcpy(saved, before, sizeof saved);
    if (setenv(name, value, 1) == 0)
        record(name, value, before ? saved : NULL);
    pthread_mutex_unlock(&lock);
}

void hetcl__env_restore(const char *name, const char *previous)
{
    pthread_mutex_lock(&lock);
    if (previous)
        setenv(name, previous, 1);
    else
        unsetenv(name);
    for (size_t i = n_entries; i-- > 0;)
        if (!strcmp(entries[i].name, name)) {
            memmove(&entries[i], &entries[i + 1], (n_entries - i - 1) * sizeof entries[0]);
            n_entries--;
            break;
        }
    pthread_mutex_unlock(&lock);
}

size_t hetcl_env_set_by_hetcl(struct hetcl_env_setting *out, size_t cap)
{
    size_t n = 0;
    pthread_mutex_lock(&lock);
    for (size_t i = 0; i < n_entries; i++) {
        const char *now = getenv(entries[i].name);
        /* Only the latest record of a name can be in effect; one whose value was changed since
         * (by the application) is no longer hetcl's. */
        if (latest(entries[i].name) != &entries[i] || !now || strcmp(now, entries[i].value))
            continue;
        if (out && n < cap)
            out[n] = entries[i];
        n++;
    }
    pthread_mutex_unlock(&lock);
    return n;
}
