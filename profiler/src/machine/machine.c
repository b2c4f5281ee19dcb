/* Machine state, the core round trip and energy readers (<hetcl/machine.h>). */
#include <hetcl/hetcl.h>
#include <hetcl/machine.h>

#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* Reads the first line of root/path into buf (newline stripped). Returns false and sets errno
 * when unreadable. */
static bool read_line(const char *root, const char *path, char *buf, size_t cap)
{
    char full[512];
    snprintf(full, sizeof full, "%s%s", root, path);
    FILE *f = fopen(full, "r");
    if (!f)
        return false;
    bool ok = fgets(buf, (int) cap, f) != NULL;
    int err = errno;
    fclose(f);
    if (!ok) {
        errno = err ? err : EIO;
        return false;
    }
    buf[strcspn(buf, "\n")] = '\0';
    return true;
}

static bool read_double(const char *root, const char *path, double *out)
{
    char buf[64], *end = NULL;
    if (!read_line(root, path, buf, sizeof buf))
        return false;
    double v = strtod(buf, &end);
    if (end == buf || !isfinite(v))
        return false;
    *out = v;
    return true;
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(const char *const *) a, *(const char *const *) b);
}

/* Entries of root/dir whose names start with prefix, sorted (by name; zone10 after zone1 is
 * fine for a report). Returns the count (at most cap); names are strdup'ed into out. */
static size_t list_dir(const char *root, const char *dir, const char *prefix, char **out,
                       size_t cap)
{
    char full[512];
    snprintf(full, sizeof full, "%s%s", root, dir);
    DIR *d = opendir(full);
    if (!d)
        return 0;
    size_t n = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL && n < cap)
        if (!strncmp(e->d_name, prefix, strlen(prefix)))
            if ((out[n] = strdup(e->d_name)) != NULL)
                n++;
    closedir(d);
    qsort(out, n, sizeof *out, cmp_str);
    return n;
}

static void free_list(char **v, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(v[i]);
}

static cJSON *num_or_null(bool ok, double v)
{
    return ok ? cJSON_CreateNumber(v) : cJSON_CreateNull();
}

static cJSON *cpufreq(const char *root)
{
    cJSON *o = cJSON_CreateObject();
    cJSON *pols = cJSON_CreateArray();
    char *names[256];
    const char *dir = "/sys/devices/system/cpu/cpufreq";
    size_t n = list_dir(root, dir, "policy", names, 256);
    for (size_t i = 0; i < n; i++) {
        char p[400], buf[256];
        cJSON *pol = cJSON_CreateObject();
        snprintf(p, sizeof p, "%s/%s/affected_cpus", dir, names[i]);
        if (!read_line(root, p, buf, sizeof buf))
            buf[0] = '\0';
        /* "0 1 2" -> "0,1,2" (the schema's cpuset list) */
        for (char *c = buf; *c; c++)
            if (*c == ' ')
                *c = ',';
        size_t len = strlen(buf);
        while (len > 0 && buf[len - 1] == ',')
            buf[--len] = '\0';
        cJSON_AddStringToObject(pol, "cpus", strspn(buf, "0123456789,-") == len ? buf : "");
        snprintf(p, sizeof p, "%s/%s/scaling_governor", dir, names[i]);
        if (!read_line(root, p, buf, sizeof buf))
            snprintf(buf, sizeof buf, "unknown");
        cJSON_AddStringToObject(pol, "governor", buf);
        static const char *const files[] = {"scaling_cur_freq", "scaling_min_freq",
                                            "scaling_max_freq"};
        static const char *const keys[] = {"cur_mhz", "min_mhz", "max_mhz"};
        for (int k = 0; k < 3; k++) {
            double khz = 0;
            snprintf(p, sizeof p, "%s/%s/%s", dir, names[i], files[k]);
            bool ok = read_double(root, p, &khz) && khz >= 0;
            cJSON_AddItemToObject(pol, keys[k], num_or_null(ok, khz / 1000.0));
        }
        cJSON_AddItemToArray(pols, pol);
    }
    free_list(names, n);
    cJSON_AddBoolToObject(o, "available", n > 0);
    if (n > 0)
        cJSON_AddNullToObject(o, "reason");
    else
        cJSON_AddStringToObject(o, "reason",
                                "not available: no cpufreq policy under "
                                "/sys/devices/system/cpu/cpufreq (virtual machine or container?)");
    cJSON_AddItemToObject(o, "policies", pols);
    return o;
}

static cJSON *thermal(const char *root)
{
    cJSON *o = cJSON_CreateObject();
    cJSON *zones = cJSON_CreateArray();
    char *names[256];
    const char *dir = "/sys/class/thermal";
    size_t n = list_dir(root, dir, "thermal_zone", names, 256), n_ok = 0;
    for (size_t i = 0; i < n; i++) {
        char p[400], type[128];
        double milli = 0;
        snprintf(p, sizeof p, "%s/%s/temp", dir, names[i]);
        if (!read_double(root, p, &milli))
            continue; /* a zone that cannot be read now (some report EAGAIN or ENODATA) */
        snprintf(p, sizeof p, "%s/%s/type", dir, names[i]);
        if (!read_line(root, p, type, sizeof type))
            type[0] = '\0';
        cJSON *z = cJSON_CreateObject();
        cJSON_AddStringToObject(z, "name", names[i]);
        cJSON_AddStringToObject(z, "type", type);
        cJSON_AddNumberToObject(z, "temp_c", milli / 1000.0);
        cJSON_AddItemToArray(zones, z);
        n_ok++;
    }
    free_list(names, n);
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
    cJSON_AddItemToObject(o, "thermal", thermal(root));
    double load = 0;
    bool load_ok = read_double(root, "/proc/loadavg", &load) && load >= 0;
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

static bool read_u64(const char *path, uint64_t *out)
{
    char buf[64], *end = NULL;
    if (!read_line("", path, buf, sizeof buf))
        return false;
    errno = 0;
    unsigned long long v = strtoull(buf, &end, 10);
    if (end == buf || errno)
        return false;
    *out = v;
    return true;
}

void hetcl_energy_begin(const char *root, struct hetcl_energy *e)
{
    if (!root)
        root = "";
    memset(e, 0, sizeof *e);
    char *names[64];
    int first_errno = 0;
    const char *dir = "/sys/class/powercap";
    size_t n = list_dir(root, dir, "intel-rapl:", names, 64);
    for (size_t i = 0; i < n && e->n < HETCL_ENERGY_MAX_DOMAINS; i++) {
        size_t k = e->n;
        char p[400];
        snprintf(e->path[k], sizeof e->path[k], "%s%s/%s/energy_uj", root, dir, names[i]);
        errno = 0;
        if (!read_u64(e->path[k], &e->start_uj[k])) {
            if (!first_errno)
                first_errno = errno ? errno : EIO;
            continue;
        }
        snprintf(p, sizeof p, "%s/%s/name", dir, names[i]);
        if (!read_line(root, p, e->name[k], sizeof e->name[k]))
            snprintf(e->name[k], sizeof e->name[k], "%s", names[i]);
        snprintf(p, sizeof p, "%s%s/%s/max_energy_range_uj", root, dir, names[i]);
        if (!read_u64(p, &e->range_uj[k]))
            e->range_uj[k] = 0;
        /* "intel-rapl:0" is a package; "intel-rapl:0:1" a part of it (core, dram...). */
        e->top[k] = strchr(names[i] + strlen("intel-rapl:"), ':') == NULL;
        e->n++;
    }
    free_list(names, n);
    if (e->n > 0) {
        e->available = true;
        e->source = "rapl";
        return;
    }
    /* hwmon energy counters (some ARM boards, AMD's amd_energy): microjoules. */
    const char *hdir = "/sys/class/hwmon";
    size_t nh = list_dir(root, hdir, "hwmon", names, 64);
    for (size_t i = 0; i < nh; i++) {
        char sub[400], *files[32];
        snprintf(sub, sizeof sub, "%s/%s", hdir, names[i]);
        size_t nf = list_dir(root, sub, "energy", files, 32);
        for (size_t j = 0; j < nf && e->n < HETCL_ENERGY_MAX_DOMAINS; j++) {
            size_t len = strlen(files[j]);
            if (len < 6 || strcmp(files[j] + len - 6, "_input"))
                continue;
            size_t k = e->n;
            snprintf(e->path[k], sizeof e->path[k], "%s%s/%s", root, sub, files[j]);
            errno = 0;
            if (!read_u64(e->path[k], &e->start_uj[k])) {
                if (!first_errno)
                    first_errno = errno ? errno : EIO;
                continue;
            }
            snprintf(e->name[k], sizeof e->name[k], "%s/%.*s", names[i], (int) (len - 6), files[j]);
            e->top[k] = true;
            e->n++;
        }
        free_list(files, nf);
    }
    free_list(names, nh);
    if (e->n > 0) {
        e->available = true;
        e->source = "hwmon";
        return;
    }
    if (first_errno)
        snprintf(e->reason, sizeof e->reason,
                 "not available: energy counters exist but cannot be read (%s; RAPL needs root "
                 "on recent kernels)",
                 strerror(first_errno));
    else
        snprintf(e->reason, sizeof e->reason,
                 "not available: no RAPL powercap (/sys/class/powercap) or hwmon energy counter");
}

cJSON *hetcl_energy_end(const struct hetcl_energy *e, double elapsed_s, double items)
{
    cJSON *o = cJSON_CreateObject();
    if (!o)
        return NULL;
    cJSON *domains = cJSON_CreateArray();
    double total = 0;
    bool ok = e->available;
    for (size_t k = 0; ok && k < e->n; k++) {
        uint64_t end = 0;
        if (!read_u64(e->path[k], &end)) {
            ok = false;
            break;
        }
        uint64_t d = end >= e->start_uj[k] ? end - e->start_uj[k]
                                           : end + (e->range_uj[k] - e->start_uj[k]);
        double j = (double) d / 1e6;
        cJSON *dom = cJSON_CreateObject();
        cJSON_AddStringToObject(dom, "name", e->name[k]);
        cJSON_AddNumberToObject(dom, "energy_j", j);
        cJSON_AddItemToArray(domains, dom);
        if (e->top[k])
            total += j;
    }
    cJSON_AddBoolToObject(o, "available", ok);
    if (ok) {
        cJSON_AddStringToObject(o, "source", e->source);
        cJSON_AddNullToObject(o, "reason");
        cJSON_AddNumberToObject(o, "energy_j", total);
        cJSON_AddItemToObject(o, "avg_power_w", num_or_null(elapsed_s > 0, total / elapsed_s));
        cJSON_AddItemToObject(o, "j_per_item", num_or_null(items > 0, total / items));
    } else {
        cJSON_Delete(domains);
        domains = cJSON_CreateArray();
        cJSON_AddNullToObject(o, "source");
        cJSON_AddStringToObject(o, "reason",
                                e->available ? "not available: an energy counter became "
                                               "unreadable during the run"
                                             : e->reason);
        cJSON_AddNullToObject(o, "energy_j");
        cJSON_AddNullToObject(o, "avg_power_w");
        cJSON_AddNullToObject(o, "j_per_item");
    }
    cJSON_AddItemToObject(o, "domains", domains);
    return o;
}

long long hetcl_peak_rss_bytes(void)
{
    FILE *f = fopen("/proc/self/status", "r");
    if (!f)
        return -1;
    char line[256];
    long long kb = -1;
    while (fgets(line, sizeof line, f))
        if (!strncmp(line, "VmHWM:", 6)) {
            kb = strtoll(line + 6, NULL, 10);
            break;
        }
    fclose(f);
    return kb >= 0 ? kb * 1024 : -1;
}

void hetcl_core_round_trip_measure(struct hetcl_core_round_trip *c, bool after)
{
    if (after && !c->measured)
        return;
    hetcl_context *ctx = NULL;
    hetcl_topology *topo = NULL;
    int pus[2];
    bool ok = hetcl_context_create(NULL, &ctx) == HETCL_OK &&
              hetcl_topology_create(ctx, NULL, &topo) == HETCL_OK &&
              hetcl_core_pair_default(topo, &pus[0], &pus[1]) &&
              hetcl_core_round_trip(ctx, topo, pus[0], pus[1], 0, after ? &c->after : &c->before) ==
                      HETCL_OK;
    if (!after) {
        c->pus[0] = pus[0];
        c->pus[1] = pus[1];
    }
    c->measured = ok && pus[0] == c->pus[0] && pus[1] == c->pus[1];
    hetcl_topology_destroy(topo);
    hetcl_context_destroy(ctx);
}

void hetcl_stat_add_json(cJSON *o, const struct hetcl_stat *st)
{
    cJSON_AddNumberToObject(o, "median", st->median);
    cJSON_AddNumberToObject(o, "min", st->min);
    cJSON_AddNumberToObject(o, "max", st->max);
    cJSON_AddNumberToObject(o, "n", st->n);
}

cJSON *hetcl_core_round_trip_json(const struct hetcl_core_round_trip *c)
{
    if (!c->measured)
        return cJSON_CreateNull();
    cJSON *o = cJSON_CreateObject(), *pus = cJSON_CreateArray(), *before = cJSON_CreateObject(),
          *after = cJSON_CreateObject();
    cJSON_AddItemToArray(pus, cJSON_CreateNumber(c->pus[0]));
    cJSON_AddItemToArray(pus, cJSON_CreateNumber(c->pus[1]));
    cJSON_AddItemToObject(o, "pus", pus);
    hetcl_stat_add_json(before, &c->before);
    hetcl_stat_add_json(after, &c->after);
    cJSON_AddItemToObject(o, "before", before);
    cJSON_AddItemToObject(o, "after", after);
    return o;
}
