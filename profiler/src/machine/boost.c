/* Turbo / boost state of the CPU frequency drivers, part of hetcl_machine_state
 * (<hetcl/machine.h>): a turbo that is on lets single-thread figures depend on how many cores are
 * busy and how hot the package is, so a report has to say whether it was. */
#include "machine/machine_impl.h"
#include "machine/sysfs.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#define CPU_DIR "/sys/devices/system/cpu"

/* The per-policy boost files (acpi-cpufreq, amd-pstate on recent kernels) into pols; returns how
 * many were read, with the count of enabled ones in *n_on and the first errno of an unreadable
 * one in *err. */
static size_t policy_boost(const char *root, cJSON *pols, size_t *n_on, int *err)
{
    char *names[256];
    size_t n = hetcl__sysfs_list(root, CPU_DIR "/cpufreq", "policy", names, 256), n_read = 0;
    for (size_t i = 0; i < n; i++) {
        char p[HETCL_SYSFS_PATH_MAX];
        uint64_t v = 0;
        snprintf(p, sizeof p, CPU_DIR "/cpufreq/%s/boost", names[i]);
        if (!hetcl__sysfs_exists(root, p))
            continue;
        errno = 0;
        if (!hetcl__sysfs_u64(root, p, &v)) {
            if (!*err)
                *err = errno ? errno : EIO;
            continue;
        }
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "policy", names[i]);
        cJSON_AddBoolToObject(o, "enabled", v != 0);
        cJSON_AddItemToArray(pols, o);
        n_read++;
        *n_on += v != 0;
    }
    hetcl__sysfs_free(names, n);
    return n_read;
}

/* A machine-wide switch: intel_pstate's no_turbo (1: turbo off) or cpufreq's boost (1: on).
 * Returns 1 when read (*enabled set), 0 when absent, -1 when present but unreadable. */
static int global_switch(const char *root, const char *path, bool inverted, bool *enabled, int *err)
{
    if (!hetcl__sysfs_exists(root, path))
        return 0;
    uint64_t v = 0;
    errno = 0;
    if (!hetcl__sysfs_u64(root, path, &v)) {
        if (!*err)
            *err = errno ? errno : EIO;
        return -1;
    }
    *enabled = inverted ? v == 0 : v != 0;
    return 1;
}

cJSON *hetcl__machine_boost(const char *root)
{
    cJSON *o = cJSON_CreateObject(), *pols = cJSON_CreateArray();
    int err = 0;
    size_t n_on = 0;
    size_t n_pol = policy_boost(root, pols, &n_on, &err);
    bool enabled = false;
    const char *source = NULL;
    if (global_switch(root, CPU_DIR "/intel_pstate/no_turbo", true, &enabled, &err) == 1)
        source = "intel_pstate/no_turbo";
    else if (global_switch(root, CPU_DIR "/cpufreq/boost", false, &enabled, &err) == 1)
        source = "cpufreq/boost";
    else if (n_pol > 0)
        source = "cpufreq/policyN/boost";
    cJSON_AddBoolToObject(o, "available", source != NULL);
    if (source) {
        cJSON_AddNullToObject(o, "reason");
        /* Per-policy switches alone: on or off when they agree, null when they differ. */
        if (!strcmp(source, "cpufreq/policyN/boost") && n_on != 0 && n_on != n_pol)
            cJSON_AddNullToObject(o, "enabled");
        else
            cJSON_AddBoolToObject(o, "enabled",
                                  strcmp(source, "cpufreq/policyN/boost") ? enabled : n_on > 0);
        cJSON_AddStringToObject(o, "source", source);
    } else {
        char why[200];
        if (err)
            snprintf(why, sizeof why, "not available: the turbo/boost switch cannot be read (%s)",
                     strerror(err));
        else
            snprintf(why, sizeof why,
                     "not available: no intel_pstate/no_turbo, cpufreq/boost or per-policy boost "
                     "file under " CPU_DIR " (virtual machine or container?)");
        cJSON_AddStringToObject(o, "reason", why);
        cJSON_AddNullToObject(o, "enabled");
        cJSON_AddNullToObject(o, "source");
    }
    cJSON_AddItemToObject(o, "policies", pols);
    return o;
}
