/* The machine's state around a measurement (<hetcl/machine.h>): CPU frequency policies, turbo
 * or boost, thermal zones, the load average; and the throttling verdict from them. */
#include "machine/machine_impl.h"
#include "machine/sysfs.h"

#include <hetcl/machine.h>

#include <math.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#define CPUFREQ_DIR "/sys/devices/system/cpu/cpufreq"

static cJSON *num_or_null(bool ok, double v)
{
    return ok ? cJSON_CreateNumber(v) : cJSON_CreateNull();
}

/* "0 1 2" -> "0,1,2" (the schema's cpuset list), or "" when it is not such a list. */
static void cpus_list(char *buf)
{
    for (char *c = buf; *c; c++)
        if (*c == ' ')
            *c = ',';
    size_t len = strlen(buf);
    while (len > 0 && buf[len - 1] == ',')
        buf[--len] = '\0';
    if (strspn(buf, "0123456789,-") != len)
        buf[0] = '\0';
}

static cJSON *policy_json(const char *root, const char *name)
{
    char p[HETCL_SYSFS_PATH_MAX], buf[256];
    cJSON *pol = cJSON_CreateObject();
    snprintf(p, sizeof p, "%s/%s/affected_cpus", CPUFREQ_DIR, name);
    if (!hetcl__sysfs_line(root, p, buf, sizeof buf))
        buf[0] = '\0';
    cpus_list(buf);
    cJSON_AddStringToObject(pol, "cpus", buf);
    snprintf(p, sizeof p, "%s/%s/scaling_governor", CPUFREQ_DIR, name);
    if (!hetcl__sysfs_line(root, p, buf, sizeof buf))
        snprintf(buf, sizeof buf, "unknown");
    cJSON_AddStringToObject(pol, "governor", buf);
    static const char *const files[] = {"scaling_cur_freq", "scaling_min_freq", "scaling_max_freq"};
    static const char *const keys[] = {"cur_mhz", "min_mhz", "max_mhz"};
    for (int k = 0; k < 3; k++) {
        double khz = 0;
        snprintf(p, sizeof p, "%s/%s/%s", CPUFREQ_DIR, name, files[k]);
        bool ok = hetcl__sysfs_double(root, p, &khz) && khz >= 0;
        cJSON_AddItemToObject(pol, keys[k], num_or_null(ok, khz / 1000.0));
    }
    return pol;
}

static cJSON *cpufreq(const char *root)
{
    cJSON *o = cJSON_CreateObject();
    cJSON *pols = cJSON_CreateArray();
    char *names[256];
    size_t n = hetcl__sysfs_list(root, CPUFREQ_DIR, "policy", names, 256);
    for (size_t i = 0; i < n; i++)
        cJSON_AddItemToArray(pols, policy_json(root, names[i]));
    hetcl__sysfs_free(names, n);
    cJSON_AddBoolToObject(o, "available", n > 0);
    if (n > 0)
        cJSON_AddNullToObject(o, "reason");
    else
        cJSON_AddStringToObject(o, "reason",
                                "not available: no cpufreq policy under " CPUFREQ_DIR
                                " (virtual machine or container?)");
    cJSON_AddItemToObject(o, "policies", pols);
    return o;
}

static cJSON *thermal(const char *root)
{
    cJSON *o = cJSON_CreateObject();
    cJSON *zones = cJSON_CreateArray();
    char *names[256];
    const char *dir = "/sys/class/thermal";
    size_t n = hetcl__sysfs_list(root, dir, "thermal_zone", names, 256), n_ok = 0;
    for (size_t i = 0; i < n; i++) {
        char p[HETCL_SYSFS_PATH_MAX], type[128];
        double milli = 0;
        snprintf(p, sizeof p, "%s/%s/temp", dir, names[i]);
        if (!hetcl__sysfs_double(root, p, &milli))
            continue; /* a zone that cannot be read now (some report EAGAIN or ENODATA) */
        snprintf(p, sizeof p, "%s/%s/type", dir, names[i]);
        if (!hetcl__sysfs_line(root, p, type, sizeof type))
            type[0] = '\0';
        cJSON *z = cJSON_CreateObject();
        cJSON_AddStringToObject(z, "name", names[i]);
        cJSON_AddStringToObject(z, "type", type);
        cJSON_AddNumberToObject(z, "temp_c", milli / 1000.0);
        cJSON_AddItemToArray(zones, z);
        n_ok++;
    }
    hetcl__sysfs_free(names, n);
    cJSON_AddBoolToObject(o, "available", n_ok > 0);
    if (n_ok > 0)
        cJSON_AddNullToObject(o, "reason");
    else
        cJSON_AddStringToObject(o, "reason",
                                n > 0 ? "not available: thermal zones unreadable"
                                      : "not available: no /sys/class/thermal zone");
    cJSON_AddItemToObject(o, "zones", zones);
    return o;
}

cJSON *hetcl_machine_state(const char *root)
{
    if (!root)
        root = "";
    cJSON *o = cJSON_CreateObject();
    if (!o)
        return NULL;
    char ts[32];
    time_t now = time(NULL);
    struct tm tm;
    gmtime_r(&now, &tm);
    strftime(ts, sizeof ts, "%Y-%m-%dT%H:%M:%SZ", &tm);
    cJSON_AddStringToObject(o, "captured_at", ts);
    cJSON_AddItemToObject(o, "cpufreq", cpufreq(root));
    cJSON_AddItemToObject(o, "boost", hetcl__machine_boost(root));
    cJSON_AddItemToObject(o, "thermal", thermal(root));
    double load = 0;
    bool load_ok = hetcl__sysfs_double(root, "/proc/loadavg", &load) && load >= 0;
    cJSON_AddItemToObject(o, "load_avg_1m", num_or_null(load_ok, load));
    return o;
}

int hetcl_machine_throttled(const cJSON *before, const cJSON *after)
{
    (void) before;
    if (!after)
        return -1;
    bool known = false, throttled = false;
    const cJSON *cf = cJSON_GetObjectItemCaseSensitive(after, "cpufreq");
    const cJSON *p;
    cJSON_ArrayForEach(p, cJSON_GetObjectItemCaseSensitive(cf, "policies"))
    {
        const cJSON *cur = cJSON_GetObjectItemCaseSensitive(p, "cur_mhz");
        const cJSON *max = cJSON_GetObjectItemCaseSensitive(p, "max_mhz");
        const cJSON *gov = cJSON_GetObjectItemCaseSensitive(p, "governor");
        if (!cJSON_IsNumber(cur) || !cJSON_IsNumber(max))
            continue;
        known = true;
        if (cJSON_IsString(gov) && !strcmp(gov->valuestring, "performance") &&
            cur->valuedouble < 0.8 * max->valuedouble)
            throttled = true;
    }
    const cJSON *th = cJSON_GetObjectItemCaseSensitive(after, "thermal");
    const cJSON *z;
    cJSON_ArrayForEach(z, cJSON_GetObjectItemCaseSensitive(th, "zones"))
    {
        const cJSON *t = cJSON_GetObjectItemCaseSensitive(z, "temp_c");
        if (!cJSON_IsNumber(t))
            continue;
        known = true;
        if (t->valuedouble >= 90.0)
            throttled = true;
    }
    return known ? (throttled ? 1 : 0) : -1;
}
