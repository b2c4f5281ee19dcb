/*
 * The platform listing of the isolated enumeration (cl_enum.c): the vendor drivers registered
 * (the .icd files of the vendor directory), which of them the ICD loader can load, and the
 * platforms they offer.
 *
 * The listing runs in a child. When the vendor directory names several drivers, each is also
 * loaded alone, in a child of its own, at the same time and under the same time limit: when
 * the whole listing crashes or hangs, the broken drivers are known by then, so that a driver
 * that hangs costs one time limit, not one for the listing and another to find it. The rest of
 * the run then sees only the working drivers, through a private vendor directory.
 *
 * The loader skips a vendor file whose library is missing, or offers no platform, without a
 * word. The listing's child names those (it can ask the dynamic linker which libraries the
 * loader opened), and they become broken platforms too.
 */
#include "device/cl_enum_impl.h"
#include "util/env_set.h"
#include "util/isolate.h"
#include <hetcl_internal/base.h>
#include <hetcl_internal/cl_error.h>

#include <ctype.h>
#include <dirent.h>
#include <dlfcn.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* The listing job's output: header, loader string, platform descs, vendor problems. */
#define LIST_CAP                                          \
    (sizeof(struct job_header) + HETCL_STR_MAX +          \
     MAX_PLATFORMS * sizeof(struct hetcl_platform_desc) + \
     MAX_VENDOR_FILES * sizeof(struct vendor_problem))

static void set_platform_sort(void)
{
    hetcl__env_set_default("OCL_ICD_PLATFORM_SORT", "none");
}

/* ocl-icd sorts platforms by calling every vendor's clGetDeviceIDs inside clGetPlatformIDs, so
 * one broken driver would take the whole listing down; unsorted, the order is the vendor
 * directory's, the same in every child. A sort the user asked for is kept. The variable is
 * process-wide (the loader reads nothing else) and stays set, so that the runtime's process
 * (hetcl__cl_get_devices) sees the platforms in the children's order. Once per process
 * (a child forked after it finds it done and takes no lock); the record tells reports that
 * hetcl, not the user, set it. */
void hetcl__cl_platform_sort_once(void)
{
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, set_platform_sort);
}

cl_int hetcl__cl_list_platforms(cl_platform_id *ids, cl_uint *n)
{
    hetcl__cl_platform_sort_once();
    *n = 0;
    cl_int e = clGetPlatformIDs(MAX_PLATFORMS, ids, n);
    if (*n > MAX_PLATFORMS)
        *n = MAX_PLATFORMS;
    return e;
}

/* The directory (or single file) ocl-icd reads vendors from, as it decides it. */
static const char *vendors_location(void)
{
    const char *v = getenv("OCL_ICD_VENDORS");
    if (v && *v)
        return v;
    v = getenv("OPENCL_VENDOR_PATH");
    return v && *v ? v : "/etc/OpenCL/vendors";
}

/* The vendor files of a location, by name. */
struct vendor_files {
    size_t n;
    char path[MAX_VENDOR_FILES][PATH_MAX];
};

static bool is_icd_name(const char *name)
{
    size_t n = strlen(name);
    return n >= 5 && strcmp(name + n - 4, ".icd") == 0;
}

static int by_path(const void *a, const void *b)
{
    return strcmp(a, b);
}

/* The .icd files of location, sorted, when it is a directory; location itself when it is an
 * .icd file (OCL_ICD_VENDORS may name one); none otherwise. */
static void list_vendor_files(const char *location, struct vendor_files *vf)
{
    vf->n = 0;
    DIR *d = opendir(location);
    if (!d) {
        struct stat st;
        if (is_icd_name(location) && stat(location, &st) == 0 && S_ISREG(st.st_mode))
            hetcl__strlcpy(vf->path[vf->n++], location, PATH_MAX);
        return;
    }
    struct dirent *e;
    while ((e = readdir(d)) != NULL && vf->n < MAX_VENDOR_FILES)
        if (is_icd_name(e->d_name))
            snprintf(vf->path[vf->n++], PATH_MAX, "%s/%s", location, e->d_name);
    closedir(d);
    qsort(vf->path, vf->n, sizeof vf->path[0], by_path);
}

/* The library a vendor file names: its first line, trimmed, as ocl-icd reads it. */
static bool vendor_library(const char *file, char *lib, size_t cap)
{
    FILE *f = fopen(file, "r");
    if (!f)
        return false;
    bool ok = fgets(lib, (int) cap, f) != NULL;
    fclose(f);
    size_t n = ok ? strlen(lib) : 0;
    while (n > 0 && isspace((unsigned char) lib[n - 1]))
        lib[--n] = '\0';
    return n > 0;
}

/* Why the loader skipped a vendor file, into reason[cap], or false when it opened its library.
 * Runs in the listing's child, after the loader: RTLD_NOLOAD tells whether the loader has the
 * library open, and a plain dlopen why not. */
static bool vendor_problem(const char *file, char *reason, size_t cap)
{
    char lib[PATH_MAX];
    if (!vendor_library(file, lib, sizeof lib)) {
        snprintf(reason, cap, "vendor file %s: cannot be read, or names no library", file);
        return true;
    }
    void *h = dlopen(lib, RTLD_LAZY | RTLD_LOCAL | RTLD_NOLOAD);
    if (h) {
        dlclose(h);
        return false;
    }
    h = dlopen(lib, RTLD_LAZY | RTLD_LOCAL);
    if (!h) {
        const char *why = dlerror();
        if (!why || strstr(why, "No such file"))
            snprintf(reason, cap, "vendor file %s: library %s not found", file, lib);
        else
            snprintf(reason, cap, "vendor file %s: library %s cannot be loaded: %s", file, lib,
                     why);
        return true;
    }
    dlclose(h);
    snprintf(reason, cap, "vendor file %s: library %s offers no OpenCL platform", file, lib);
    return true;
}

bool hetcl__cl_drivers_loaded_here(void)
{
    struct vendor_files *vf = hetcl__malloc(sizeof *vf);
    bool loaded = false;
    if (!vf)
        return false;
    list_vendor_files(vendors_location(), vf);
    for (size_t i = 0; i < vf->n && !loaded; i++) {
        char lib[PATH_MAX];
        void *h = vendor_library(vf->path[i], lib, sizeof lib)
                          ? dlopen(lib, RTLD_LAZY | RTLD_LOCAL | RTLD_NOLOAD)
                          : NULL;
        if (h) {
            dlclose(h);
            loaded = true;
        }
    }
    hetcl__free(vf);
    return loaded;
}

/* The listing job. Output: header (n platforms, n_problems), the loader string, n platform
 * descs, n_problems vendor problems. */
static int job_platforms(void *argp, void *out, size_t cap, size_t *len)
{
    const struct job_arg *arg = argp;
    if (arg->vendors)
        setenv("OCL_ICD_VENDORS", arg->vendors, 1);
    struct job_header *h = out;
    char *loader = (char *) (h + 1);
    struct hetcl_platform_desc *pd = (struct hetcl_platform_desc *) (loader + HETCL_STR_MAX);
    struct vendor_problem *vp = (struct vendor_problem *) (pd + MAX_PLATFORMS);
    struct vendor_files *vf = hetcl__malloc(sizeof *vf);
    if (cap < LIST_CAP || !vf) {
        hetcl__free(vf);
        return 1;
    }
    memset(h, 0, sizeof *h);
    cl_platform_id ids[MAX_PLATFORMS];
    cl_uint n = 0;
    cl_int e = hetcl__cl_list_platforms(ids, &n);
    hetcl__cl_icd_loader(loader, HETCL_STR_MAX);
    list_vendor_files(vendors_location(), vf);
    for (size_t i = 0; i < vf->n; i++) {
        struct vendor_problem *p = &vp[h->n_problems];
        if (vendor_problem(vf->path[i], p->reason, sizeof p->reason)) {
            hetcl__strlcpy(p->file, vf->path[i], sizeof p->file);
            h->n_problems++;
        }
    }
    hetcl__free(vf);
    if (e != CL_SUCCESS || n == 0) {
        h->status = HETCL_ERR_NO_DEVICE;
        snprintf(h->message, sizeof h->message,
                 "no OpenCL platform found (clGetPlatformIDs: %s): no working ICD is "
                 "registered in %s (for the CPU device: apt-get install pocl-opencl-icd)",
                 e == CL_SUCCESS ? "0 platforms" : hetcl__cl_error_name(e),
                 arg->location ? arg->location : vendors_location());
        n = 0;
    }
    for (cl_uint i = 0; i < n; i++) {
        memset(&pd[i], 0, sizeof pd[i]);
        pd[i].index = (int) i;
        if (hetcl__cl_describe_platform(ids[i], &pd[i], pd[i].broken_reason, HETCL_STR_MAX) !=
            HETCL_OK)
            pd[i].broken = true;
    }
    h->n = n;
    *len = LIST_CAP;
    return 0;
}

hetcl_status hetcl__cl_append(void **array, size_t *n, size_t *cap_items, size_t item_size,
                              const void *item)
{
    if (*n == *cap_items) {
        size_t new_cap = *cap_items ? *cap_items * 2 : 8;
        void *grown = hetcl__realloc(*array, new_cap * item_size);
        if (!grown)
            return HETCL_ERR_NO_MEMORY;
        *array = grown;
        *cap_items = new_cap;
    }
    memcpy((char *) *array + *n * item_size, item, item_size);
    (*n)++;
    return HETCL_OK;
}

/* The platforms being gathered: the working ones, and the broken vendors that follow them. */
struct gather {
    struct hetcl_device_list *list;
    size_t cap;
    struct hetcl_platform_desc *bad;
    size_t n_bad, cap_bad;
};

static hetcl_status add_bad_vendor(struct gather *g, const char *file, const char *reason)
{
    struct hetcl_platform_desc pd;
    memset(&pd, 0, sizeof pd);
    const char *base = strrchr(file, '/');
    hetcl__strlcpy(pd.name, base ? base + 1 : file, sizeof pd.name);
    pd.broken = true;
    hetcl__strlcpy(pd.broken_reason, reason, sizeof pd.broken_reason);
    return hetcl__cl_append((void **) &g->bad, &g->n_bad, &g->cap_bad, sizeof pd, &pd);
}

/* The parts of a listing's output. */
static const struct hetcl_platform_desc *platforms_of(const void *buf)
{
    return (const struct hetcl_platform_desc *) ((const char *) buf + sizeof(struct job_header) +
                                                 HETCL_STR_MAX);
}

static const struct vendor_problem *problems_of(const void *buf)
{
    return (const struct vendor_problem *) (platforms_of(buf) + MAX_PLATFORMS);
}

/* Takes a listing's output: its platforms, and its vendor problems as broken vendors. */
static hetcl_status take_listing(struct gather *g, const char *buf)
{
    const struct job_header *h = (const struct job_header *) buf;
    const struct hetcl_platform_desc *pds = platforms_of(buf);
    const struct vendor_problem *vp = problems_of(buf);
    struct hetcl_device_list *list = g->list;
    hetcl__strlcpy(list->icd_loader, buf + sizeof *h, sizeof list->icd_loader);
    if (h->status != HETCL_OK)
        hetcl__strlcpy(list->no_device_reason, h->message, sizeof list->no_device_reason);
    hetcl_status st = HETCL_OK;
    for (uint32_t p = 0; p < h->n && p < MAX_PLATFORMS && st == HETCL_OK; p++)
        st = hetcl__cl_append((void **) &list->platforms, &list->n_platforms, &g->cap, sizeof *pds,
                              &pds[p]);
    for (uint32_t i = 0; i < h->n_problems && i < MAX_VENDOR_FILES && st == HETCL_OK; i++)
        st = add_bad_vendor(g, vp[i].file, vp[i].reason);
    return st;
}

/* Whether a vendor listed alone works; if not, records it as a broken vendor. */
static hetcl_status classify_vendor(struct gather *g, const char *file,
                                    const struct hetcl_isolate_job *job, bool *good)
{
    const struct job_header *h = job->out;
    const struct vendor_problem *vp = problems_of(job->out);
    char reason[HETCL_STR_MAX * 2];
    *good = false;
    if (job->status != HETCL_OK)
        snprintf(reason, sizeof reason, "vendor file %s: its driver %s while loading", file,
                 job->reason);
    else if (h->n_problems > 0)
        hetcl__strlcpy(reason, vp[0].reason, sizeof reason);
    else if (h->status != HETCL_OK || h->n == 0)
        snprintf(reason, sizeof reason, "vendor file %s: its driver offers no OpenCL platform",
                 file);
    else
        *good = true;
    return *good ? HETCL_OK : add_bad_vendor(g, file, reason);
}

static void remove_icd_dir(const char *dir)
{
    DIR *d = opendir(dir);
    struct dirent *e;
    char path[PATH_MAX];
    while (d && (e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.')
            continue;
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        unlink(path);
    }
    if (d)
        closedir(d);
    rmdir(dir);
}

void hetcl__cl_vendors_restore(struct hetcl_device_list *list)
{
    if (!list->icd_dir[0])
        return;
    hetcl__env_restore("OCL_ICD_VENDORS", list->icd_saved_env[0] ? list->icd_saved_env : NULL);
    remove_icd_dir(list->icd_dir);
    list->icd_dir[0] = '\0';
}

/* Points OCL_ICD_VENDORS (for this process and its children, until the list is destroyed) at a
 * private directory of links to the working vendor files, so that the rest of the run never
 * loads a broken driver. The environment is process-wide state, against STYLE.md's "no mutable
 * globals", by necessity: it is the only thing the ICD loader reads, and the list that changed
 * it restores it when destroyed. false when the directory could not be made. */
static bool use_vendors(struct hetcl_device_list *list, const struct vendor_files *vf,
                        const bool *good)
{
    char tmpl[] = "/tmp/hetcl-icd-XXXXXX";
    if (!mkdtemp(tmpl))
        return false;
    for (size_t i = 0; i < vf->n; i++) {
        if (!good[i])
            continue;
        char link_path[PATH_MAX];
        const char *base = strrchr(vf->path[i], '/');
        snprintf(link_path, sizeof link_path, "%s/%s", tmpl, base ? base + 1 : vf->path[i]);
        if (symlink(vf->path[i], link_path) != 0) {
            remove_icd_dir(tmpl);
            return false;
        }
    }
    const char *saved = getenv("OCL_ICD_VENDORS");
    hetcl__strlcpy(list->icd_saved_env, saved ? saved : "", sizeof list->icd_saved_env);
    hetcl__strlcpy(list->icd_dir, tmpl, sizeof list->icd_dir);
    hetcl__env_override("OCL_ICD_VENDORS", tmpl);
    return true;
}

/* The whole listing broke the loader: the vendors listed alone tell which drivers did. The
 * listing is retried over the working ones (with what is left of the time limit, at least half
 * of it: the retry loads only drivers that listed fine alone). */
static hetcl_status retry_without_broken(const struct hetcl_enum_options *o, struct gather *g,
                                         const struct vendor_files *vf,
                                         struct hetcl_isolate_job *jobs, const char *location,
                                         uint64_t deadline_ns)
{
    struct hetcl_device_list *list = g->list;
    const char *why = jobs[0].reason;
    bool good[MAX_VENDOR_FILES];
    size_t n_good = 0;
    hetcl_status st = HETCL_OK;
    for (size_t i = 0; i < vf->n && st == HETCL_OK; i++) {
        st = classify_vendor(g, vf->path[i], &jobs[1 + i], &good[i]);
        n_good += good[i];
    }
    if (st != HETCL_OK)
        return st;
    if (n_good == 0 || !use_vendors(list, vf, good)) {
        snprintf(list->no_device_reason, sizeof list->no_device_reason,
                 "the OpenCL ICD loader %s while listing platforms, and no driver registered in "
                 "%s works alone",
                 why, location);
        return HETCL_OK;
    }
    uint64_t now = hetcl__now_ns();
    unsigned left_ms = deadline_ns > now ? (unsigned) ((deadline_ns - now) / 1000000u) : 0;
    if (left_ms < o->timeout_ms / 2)
        left_ms = o->timeout_ms / 2;
    struct job_arg arg = {.location = location};
    jobs[0].arg = &arg;
    hetcl__isolate_run_many(jobs, 1, left_ms ? left_ms : 1, o->in_process);
    if (jobs[0].status != HETCL_OK) {
        snprintf(list->no_device_reason, sizeof list->no_device_reason,
                 "the OpenCL ICD loader %s while listing platforms, even without the broken "
                 "drivers of %s",
                 jobs[0].reason, location);
        return HETCL_OK;
    }
    return take_listing(g, jobs[0].out);
}

/* The loader broke with at most one vendor file: nothing to separate. */
static hetcl_status single_vendor_broken(struct gather *g, const struct vendor_files *vf,
                                         const struct hetcl_isolate_job *job, const char *location)
{
    snprintf(g->list->no_device_reason, sizeof g->list->no_device_reason,
             "the OpenCL ICD loader %s while listing platforms: the driver registered in %s is "
             "broken",
             job->reason, location);
    if (vf->n == 0)
        return HETCL_OK;
    char reason[HETCL_STR_MAX * 2];
    snprintf(reason, sizeof reason, "vendor file %s: its driver %s while loading", vf->path[0],
             job->reason);
    return add_bad_vendor(g, vf->path[0], reason);
}

/* The listing and the per-vendor listings, in parallel, then the platforms from them. */
static hetcl_status list_all(const struct hetcl_enum_options *o, struct gather *g,
                             const struct vendor_files *vf, const char *location, char *bufs)
{
    /* Vendors are listed alone only where there is something to separate, and only in
     * children (in this process, the loader reads OCL_ICD_VENDORS once). */
    size_t n_alone = vf->n >= 2 && !o->in_process ? vf->n : 0;
    struct hetcl_isolate_job jobs[1 + MAX_VENDOR_FILES];
    struct job_arg args[1 + MAX_VENDOR_FILES];
    for (size_t i = 0; i < 1 + n_alone; i++) {
        args[i] = (struct job_arg){.location = location, .vendors = i ? vf->path[i - 1] : NULL};
        jobs[i] = (struct hetcl_isolate_job){
                .fn = job_platforms, .arg = &args[i], .out = bufs + i * LIST_CAP, .cap = LIST_CAP};
    }
    uint64_t deadline = hetcl__now_ns() + (uint64_t) o->timeout_ms * 1000000u;
    hetcl__isolate_run_many(jobs, 1 + n_alone, o->timeout_ms, o->in_process);
    if (jobs[0].status == HETCL_OK)
        return take_listing(g, jobs[0].out);
    if (n_alone == 0)
        return single_vendor_broken(g, vf, &jobs[0], location);
    return retry_without_broken(o, g, vf, jobs, location, deadline);
}

hetcl_status hetcl__cl_enum_platforms(const struct hetcl_enum_options *o,
                                      struct hetcl_device_list *list)
{
    /* The user's location, read before any override: messages name it, not a private one. */
    char location[PATH_MAX];
    hetcl__strlcpy(location, vendors_location(), sizeof location);
    struct vendor_files *vf = hetcl__malloc(sizeof *vf);
    char *bufs = NULL;
    struct gather g = {.list = list};
    hetcl_status st = HETCL_ERR_NO_MEMORY;
    if (vf) {
        list_vendor_files(location, vf);
        bufs = hetcl__malloc((1 + vf->n) * LIST_CAP);
    }
    if (bufs)
        st = list_all(o, &g, vf, location, bufs);
    /* The broken vendors follow the working platforms, numbered after them. */
    for (size_t b = 0; st == HETCL_OK && b < g.n_bad; b++) {
        g.bad[b].index = (int) list->n_platforms;
        st = hetcl__cl_append((void **) &list->platforms, &list->n_platforms, &g.cap, sizeof *g.bad,
                              &g.bad[b]);
    }
    hetcl__free(g.bad);
    hetcl__free(bufs);
    hetcl__free(vf);
    return st;
}
