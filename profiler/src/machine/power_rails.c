/* Power rails and their sampler (machine/machine_impl.h): where a board has power sensors but no
 * energy counter (Jetson's INA3221, hwmon power*_input), energy is the integral of the power
 * over the timed phase, sampled at a fixed period by the trapezoid rule. */
#define _XOPEN_SOURCE 700 /* realpath */
#include "machine/machine_impl.h"

#include <hetcl_internal/base.h>

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#define MAX_DIRS 64

/* The digits between prefix and "_input" in name ("power1_input" -> "1"), or false. */
static bool channel(const char *name, const char *prefix, char *out, size_t cap)
{
    size_t lp = strlen(prefix), ln = strlen(name), ls = strlen("_input");
    if (strncmp(name, prefix, lp) || ln <= lp + ls || strcmp(name + ln - ls, "_input"))
        return false;
    size_t nd = ln - lp - ls;
    if (nd >= cap)
        return false;
    for (size_t i = 0; i < nd; i++)
        if (!isdigit((unsigned char) name[lp + i]))
            return false;
    memcpy(out, name + lp, nd);
    out[nd] = '\0';
    return true;
}

/* A rail's name: the first label file of the list that reads (its path into file), else
 * "<chip>/<fallback>" (file ""). */
struct rail_name {
    char name[64];
    char file[160];
};

static void label(const char *root, const char *dir, const char *chip, const char *fallback,
                  const char *const *files, int n_files, struct rail_name *out)
{
    for (int i = 0; i < n_files; i++) {
        snprintf(out->file, sizeof out->file, "%s/%s", dir, files[i]);
        if (hetcl__sysfs_line(root, out->file, out->name, sizeof out->name) && out->name[0])
            return;
    }
    out->file[0] = '\0';
    snprintf(out->name, sizeof out->name, "%s/%s", chip[0] ? chip : "sensor", fallback);
}

static bool is_input_rail(const char *name)
{
    size_t n = strlen(name);
    return !strcmp(name, "VIN") || (n > 3 && !strcasecmp(name + n - 3, "_IN"));
}

/* Adds a rail reading root/dir/a (times root/dir/b when b) if it reads now. */
static void add_rail(const char *root, const char *dir, const char *source, const char *a,
                     const char *b, double scale, const struct rail_name *name,
                     struct hetcl__rail *out, size_t *n, size_t cap, int *first_errno)
{
    if (*n >= cap)
        return;
    struct hetcl__rail *r = &out[*n];
    memset(r, 0, sizeof *r);
    hetcl__strlcpy(r->name, name->name, sizeof r->name);
    hetcl__strlcpy(r->label_file, name->file, sizeof r->label_file);
    r->source = source;
    r->scale = scale;
    r->input = is_input_rail(name->name);
    snprintf(r->path_a, sizeof r->path_a, "%s%s/%s", root, dir, a);
    if (b)
        snprintf(r->path_b, sizeof r->path_b, "%s%s/%s", root, dir, b);
    snprintf(r->sensor, sizeof r->sensor, "%s/%s%s%s", dir, a, b ? "*" : "", b ? b : "");
    double va = 0, vb = 1;
    errno = 0;
    if (!hetcl__sysfs_double("", r->path_a, &va) ||
        (b && !hetcl__sysfs_double("", r->path_b, &vb))) {
        if (!*first_errno)
            *first_errno = errno ? errno : EIO;
        return;
    }
    (*n)++;
}

/* The rails of one sensor directory. */
static void scan_dir(const char *root, const char *dir, const char *source, struct hetcl__rail *out,
                     size_t *n, size_t cap, int *first_errno)
{
    char chip[64] = "", p[HETCL_SYSFS_PATH_MAX], ch[16], a[64], b[64];
    struct rail_name name;
    snprintf(p, sizeof p, "%s/name", dir);
    if (!hetcl__sysfs_line(root, p, chip, sizeof chip))
        chip[0] = '\0';
    char *files[256];
    size_t nf = hetcl__sysfs_list(root, dir, "", files, 256);
    for (size_t i = 0; i < nf; i++) {
        const char *f = files[i];
        char l1[64], l2[64];
        if (channel(f, "power", ch, sizeof ch)) { /* hwmon: microwatts */
            snprintf(l1, sizeof l1, "power%s_label", ch);
            snprintf(a, sizeof a, "power%s", ch);
            const char *labels[] = {l1};
            label(root, dir, chip, a, labels, 1, &name);
            add_rail(root, dir, source, f, NULL, 1e-6, &name, out, n, cap, first_errno);
        } else if (channel(f, "in_power", ch, sizeof ch)) { /* IIO ina3221x: milliwatts */
            snprintf(l1, sizeof l1, "in_power%s_label", ch);
            snprintf(l2, sizeof l2, "rail_name_%s", ch);
            snprintf(a, sizeof a, "in_power%s", ch);
            const char *labels[] = {l1, l2};
            label(root, dir, chip, a, labels, 2, &name);
            add_rail(root, dir, source, f, NULL, 1e-3, &name, out, n, cap, first_errno);
        } else if (channel(f, "curr", ch, sizeof ch)) { /* hwmon ina3221: mV x mA = uW */
            snprintf(a, sizeof a, "in%s_input", ch);
            snprintf(p, sizeof p, "%s/%s", dir, a);
            if (!hetcl__sysfs_exists(root, p))
                continue;
            snprintf(l1, sizeof l1, "in%s_label", ch);
            snprintf(l2, sizeof l2, "curr%s_label", ch);
            snprintf(b, sizeof b, "in%s", ch);
            const char *labels[] = {l1, l2};
            label(root, dir, chip, b, labels, 2, &name);
            add_rail(root, dir, source, a, f, 1e-6, &name, out, n, cap, first_errno);
        } else if (channel(f, "in_current", ch, sizeof ch)) { /* IIO: mV x mA = uW */
            snprintf(a, sizeof a, "in_voltage%s_input", ch);
            snprintf(p, sizeof p, "%s/%s", dir, a);
            if (!hetcl__sysfs_exists(root, p))
                continue;
            snprintf(l1, sizeof l1, "rail_name_%s", ch);
            snprintf(b, sizeof b, "in_current%s", ch);
            const char *labels[] = {l1};
            label(root, dir, chip, b, labels, 1, &name);
            add_rail(root, dir, source, a, f, 1e-6, &name, out, n, cap, first_errno);
        }
    }
    hetcl__sysfs_free(files, nf);
}

/* Scans dir once: false when its real path was seen already (a class link to a bus device). */
static bool first_visit(const char *root, const char *dir, char seen[][PATH_MAX], size_t *n_seen)
{
    char full[HETCL_SYSFS_PATH_MAX], real[PATH_MAX];
    snprintf(full, sizeof full, "%s%s", root, dir);
    if (!realpath(full, real))
        return false;
    for (size_t i = 0; i < *n_seen; i++)
        if (!strcmp(seen[i], real))
            return false;
    if (*n_seen < MAX_DIRS)
        memcpy(seen[(*n_seen)++], real, sizeof real);
    return true;
}

/* Every dir/<a>/<mid>/<b>* (mid may be ""), scanned as source. */
static void scan_tree(const char *root, const char *dir, const char *mid, const char *b_prefix,
                      const char *source, struct hetcl__rail *out, size_t *n, size_t cap,
                      int *first_errno, char seen[][PATH_MAX], size_t *n_seen)
{
    char *as[64];
    size_t na = mid ? hetcl__sysfs_list(root, dir, "", as, 64) : 1;
    for (size_t i = 0; i < na; i++) {
        char sub[HETCL_SYSFS_PATH_MAX], *bs[64];
        if (mid)
            snprintf(sub, sizeof sub, "%s/%s%s%s", dir, as[i], mid[0] ? "/" : "", mid);
        else
            snprintf(sub, sizeof sub, "%s", dir);
        size_t nb = hetcl__sysfs_list(root, sub, b_prefix, bs, 64);
        for (size_t j = 0; j < nb; j++) {
            char d[HETCL_SYSFS_PATH_MAX];
            snprintf(d, sizeof d, "%s/%s", sub, bs[j]);
            if (first_visit(root, d, seen, n_seen))
                scan_dir(root, d, source, out, n, cap, first_errno);
        }
        hetcl__sysfs_free(bs, nb);
    }
    if (mid)
        hetcl__sysfs_free(as, na);
}

size_t hetcl__rails_find(const char *root, struct hetcl__rail *out, size_t cap, int *first_errno)
{
    char(*dirs)[PATH_MAX] = malloc(MAX_DIRS * sizeof *dirs);
    size_t n = 0, n_seen = 0;
    *first_errno = 0;
    if (!dirs)
        return 0;
    scan_tree(root, "/sys/class/hwmon", NULL, "hwmon", "hwmon", out, &n, cap, first_errno, dirs,
              &n_seen);
    scan_tree(root, "/sys/bus/i2c/drivers/ina3221", "hwmon", "hwmon", "hwmon", out, &n, cap,
              first_errno, dirs, &n_seen);
    scan_tree(root, "/sys/bus/i2c/drivers/ina3221x", "", "iio:device", "iio", out, &n, cap,
              first_errno, dirs, &n_seen);
    scan_tree(root, "/sys/bus/iio/devices", NULL, "iio:device", "iio", out, &n, cap, first_errno,
              dirs, &n_seen);
    free(dirs);
    return n;
}

void hetcl__rails_sample(struct hetcl__rail *rails, size_t n, uint64_t now_ns)
{
    for (size_t i = 0; i < n; i++) {
        struct hetcl__rail *r = &rails[i];
        double a = 0, b = 1;
        if (!hetcl__sysfs_double("", r->path_a, &a) ||
            (r->path_b[0] && !hetcl__sysfs_double("", r->path_b, &b))) {
            r->failures++; /* the integral bridges the gap from the last good sample */
            continue;
        }
        double w = a * b * r->scale;
        if (r->have_last && now_ns > r->last_ns)
            r->joules += 0.5 * (w + r->last_w) * (double) (now_ns - r->last_ns) * 1e-9;
        r->last_w = w;
        r->last_ns = now_ns;
        r->have_last = true;
        r->samples++;
    }
}

static void *sampler_main(void *arg)
{
    struct hetcl__rail_sampler *s = arg;
    uint64_t period_ns = (uint64_t) (s->period_ms * 1e6);
    uint64_t next = s->start_ns + period_ns;
    pthread_mutex_lock(&s->mu);
    while (!s->stop) {
        struct timespec ts = {.tv_sec = (time_t) (next / 1000000000u),
                              .tv_nsec = (long) (next % 1000000000u)};
        int rc = pthread_cond_timedwait(&s->cv, &s->mu, &ts);
        if (s->stop)
            break;
        if (rc != ETIMEDOUT)
            continue; /* spurious wake-up: wait on for the same tick */
        pthread_mutex_unlock(&s->mu);
        uint64_t now = hetcl__now_ns();
        hetcl__rails_sample(s->rails, s->n, now);
        /* The next tick on the fixed grid; ticks missed while descheduled are skipped. */
        next += period_ns;
        while (next <= now)
            next += period_ns;
        pthread_mutex_lock(&s->mu);
    }
    pthread_mutex_unlock(&s->mu);
    return NULL;
}

bool hetcl__rail_sampler_start(struct hetcl__rail_sampler *s)
{
    s->running = false;
    s->stop = false;
    if (!(s->period_ms >= 1))
        s->period_ms = 1;
    s->start_ns = hetcl__now_ns();
    hetcl__rails_sample(s->rails, s->n, s->start_ns);
    pthread_condattr_t ca;
    if (pthread_condattr_init(&ca) != 0)
        return false;
    /* The deadlines are on the monotonic clock, as hetcl__now_ns is. */
    bool ok = pthread_condattr_setclock(&ca, CLOCK_MONOTONIC) == 0 &&
              pthread_cond_init(&s->cv, &ca) == 0;
    pthread_condattr_destroy(&ca);
    if (!ok)
        return false;
    if (pthread_mutex_init(&s->mu, NULL) != 0) {
        pthread_cond_destroy(&s->cv);
        return false;
    }
    int rc = pthread_create(&s->thread, NULL, sampler_main, s);
    if (rc != 0) {
        pthread_mutex_destroy(&s->mu);
        pthread_cond_destroy(&s->cv);
        errno = rc;
        return false;
    }
    s->running = true;
    return true;
}

void hetcl__rail_sampler_stop(struct hetcl__rail_sampler *s)
{
    if (s->running) {
        pthread_mutex_lock(&s->mu);
        s->stop = true;
        pthread_cond_signal(&s->cv);
        pthread_mutex_unlock(&s->mu);
        pthread_join(s->thread, NULL);
        pthread_mutex_destroy(&s->mu);
        pthread_cond_destroy(&s->cv);
        s->running = false;
    }
    s->stop_ns = hetcl__now_ns();
    hetcl__rails_sample(s->rails, s->n, s->stop_ns);
}
