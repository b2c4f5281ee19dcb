/* The `hetcl devices` JSON document: topology, OpenCL devices and the device map, and the
 * environment every report records (<hetcl/report.h>). */
#include "util/json.h"

#include <hetcl/hetcl.h>
#include <hetcl/report.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

extern char **environ;

static cJSON *bitmap_string(hwloc_const_bitmap_t set)
{
    char buf[HETCL_CPUSET_MAX];
    if (!set)
        return cJSON_CreateString("");
    hwloc_bitmap_list_snprintf(buf, sizeof buf, set);
    return cJSON_CreateString(buf);
}

static cJSON *obj_infos(const hwloc_obj_t obj)
{
    cJSON *infos = cJSON_CreateObject();
    for (unsigned i = 0; infos && i < obj->infos_count; i++)
        hetcl__json_add(infos, obj->infos[i].name, cJSON_CreateString(obj->infos[i].value));
    return infos;
}

static cJSON *packages_json(hwloc_topology_t h)
{
    cJSON *arr = cJSON_CreateArray();
    hwloc_obj_t p = NULL;
    while (arr && (p = hwloc_get_next_obj_by_type(h, HWLOC_OBJ_PACKAGE, p)) != NULL) {
        cJSON *o = cJSON_CreateObject();
        hetcl__json_add(o, "os_index", cJSON_CreateNumber(p->os_index));
        hetcl__json_add(o, "cpuset", bitmap_string(p->cpuset));
        hetcl__json_add(o, "cores",
                        cJSON_CreateNumber(hwloc_get_nbobjs_inside_cpuset_by_type(h, p->cpuset,
                                                                                  HWLOC_OBJ_CORE)));
        hetcl__json_add(o, "infos", obj_infos(p));
        cJSON_AddItemToArray(arr, o);
    }
    return arr;
}

static cJSON *numa_json(hwloc_topology_t h)
{
    cJSON *arr = cJSON_CreateArray();
    hwloc_obj_t n = NULL;
    while (arr && (n = hwloc_get_next_obj_by_type(h, HWLOC_OBJ_NUMANODE, n)) != NULL) {
        cJSON *o = cJSON_CreateObject();
        hetcl__json_add(o, "os_index", cJSON_CreateNumber(n->os_index));
        hetcl__json_add(o, "memory_bytes",
                        cJSON_CreateNumber((double) n->attr->numanode.local_memory));
        hetcl__json_add(o, "cpuset", bitmap_string(n->cpuset));
        cJSON_AddItemToArray(arr, o);
    }
    return arr;
}

/* Caches grouped by level and kind: "L2", 1 MiB, 2 instances. */
static cJSON *caches_json(hwloc_topology_t h)
{
    static const struct {
        hwloc_obj_type_t type;
        const char *name;
    } levels[] = {
            {HWLOC_OBJ_L1CACHE, "L1"}, {HWLOC_OBJ_L1ICACHE, "L1i"}, {HWLOC_OBJ_L2CACHE, "L2"},
            {HWLOC_OBJ_L3CACHE, "L3"}, {HWLOC_OBJ_L4CACHE, "L4"},   {HWLOC_OBJ_L5CACHE, "L5"},
    };
    cJSON *arr = cJSON_CreateArray();
    for (size_t l = 0; arr && l < sizeof levels / sizeof levels[0]; l++) {
        int n = hwloc_get_nbobjs_by_type(h, levels[l].type);
        if (n <= 0)
            continue;
        hwloc_obj_t c = hwloc_get_obj_by_type(h, levels[l].type, 0);
        const char *name = levels[l].name;
        if (levels[l].type == HWLOC_OBJ_L1CACHE && c->attr->cache.type == HWLOC_OBJ_CACHE_DATA)
            name = "L1d";
        cJSON *o = cJSON_CreateObject();
        hetcl__json_add(o, "level", cJSON_CreateString(name));
        hetcl__json_add(o, "size_bytes", cJSON_CreateNumber((double) c->attr->cache.size));
        hetcl__json_add(o, "line_bytes", cJSON_CreateNumber(c->attr->cache.linesize));
        hetcl__json_add(o, "count", cJSON_CreateNumber(n));
        cJSON_AddItemToArray(arr, o);
    }
    return arr;
}

static cJSON *cpukinds_json(hwloc_topology_t h)
{
    cJSON *arr = cJSON_CreateArray();
    int nr = hwloc_cpukinds_get_nr(h, 0);
    hwloc_bitmap_t set = hwloc_bitmap_alloc();
    for (int k = 0; arr && set && k < nr; k++) {
        int efficiency = -1;
        unsigned n_infos = 0;
        struct hwloc_info_s *infos = NULL;
        if (hwloc_cpukinds_get_info(h, (unsigned) k, set, &efficiency, &n_infos, &infos, 0) != 0)
            continue;
        cJSON *o = cJSON_CreateObject();
        hetcl__json_add(o, "index", cJSON_CreateNumber(k));
        hetcl__json_add(o, "efficiency", cJSON_CreateNumber(efficiency));
        hetcl__json_add(o, "cpuset", bitmap_string(set));
        cJSON *in = cJSON_CreateObject();
        for (unsigned i = 0; in && i < n_infos; i++)
            hetcl__json_add(in, infos[i].name, cJSON_CreateString(infos[i].value));
        hetcl__json_add(o, "infos", in);
        cJSON_AddItemToArray(arr, o);
    }
    hwloc_bitmap_free(set);
    return arr;
}

static cJSON *pci_json(hwloc_topology_t h)
{
    cJSON *arr = cJSON_CreateArray();
    hwloc_obj_t p = NULL;
    while (arr && (p = hwloc_get_next_pcidev(h, p)) != NULL) {
        char busid[32];
        snprintf(busid, sizeof busid, "%04x:%02x:%02x.%01x", p->attr->pcidev.domain,
                 p->attr->pcidev.bus, p->attr->pcidev.dev, p->attr->pcidev.func);
        hwloc_obj_t anc = hwloc_get_non_io_ancestor_obj(h, p);
        cJSON *o = cJSON_CreateObject();
        hetcl__json_add(o, "busid", cJSON_CreateString(busid));
        hetcl__json_add(o, "class_id", cJSON_CreateNumber(p->attr->pcidev.class_id));
        hetcl__json_add(o, "vendor_id", cJSON_CreateNumber(p->attr->pcidev.vendor_id));
        hetcl__json_add(o, "device_id", cJSON_CreateNumber(p->attr->pcidev.device_id));
        hetcl__json_add(o, "name", cJSON_CreateString(p->name ? p->name : ""));
        hetcl__json_add(o, "cpuset", bitmap_string(anc ? anc->cpuset : NULL));
        hetcl__json_add(o, "nodeset", bitmap_string(anc ? anc->nodeset : NULL));
        /* Children OS devices (block, net, GPU, CoProc) name what the PCI device is. */
        cJSON *osdevs = cJSON_CreateArray();
        for (hwloc_obj_t c = p->io_first_child; osdevs && c; c = c->next_sibling)
            if (c->type == HWLOC_OBJ_OS_DEVICE && c->name)
                cJSON_AddItemToArray(osdevs, cJSON_CreateString(c->name));
        hetcl__json_add(o, "os_devices", osdevs);
        cJSON_AddItemToArray(arr, o);
    }
    return arr;
}

cJSON *hetcl_report_topology(const hetcl_topology *topo)
{
    hwloc_topology_t h = hetcl_topology_hwloc(topo);
    cJSON *t = cJSON_CreateObject();
    hetcl__json_add(t, "origin", cJSON_CreateString(hetcl_topology_origin(topo)));
    hetcl__json_add(t, "cpuset", bitmap_string(hwloc_topology_get_allowed_cpuset(h)));
    hetcl__json_add(t, "n_packages",
                    cJSON_CreateNumber(hwloc_get_nbobjs_by_type(h, HWLOC_OBJ_PACKAGE)));
    hetcl__json_add(t, "n_numa_nodes",
                    cJSON_CreateNumber(hwloc_get_nbobjs_by_type(h, HWLOC_OBJ_NUMANODE)));
    hetcl__json_add(t, "n_cores", cJSON_CreateNumber(hwloc_get_nbobjs_by_type(h, HWLOC_OBJ_CORE)));
    hetcl__json_add(t, "n_pus", cJSON_CreateNumber(hwloc_get_nbobjs_by_type(h, HWLOC_OBJ_PU)));
    hetcl__json_add(t, "packages", packages_json(h));
    hetcl__json_add(t, "numa_nodes", numa_json(h));
    hetcl__json_add(t, "caches", caches_json(h));
    hetcl__json_add(t, "cpu_kinds", cpukinds_json(h));
    hetcl__json_add(t, "pci_devices", pci_json(h));
    return t;
}

cJSON *hetcl_report_device(const struct hetcl_device_desc *d,
                           const struct hetcl_device_locality *loc)
{
    cJSON *o = cJSON_CreateObject();
    hetcl__json_add(o, "id", cJSON_CreateString(d->id));
    hetcl__json_add(o, "platform_index", cJSON_CreateNumber(d->platform_index));
    hetcl__json_add(o, "device_index", cJSON_CreateNumber(d->device_index));
    hetcl__json_add(o, "sub_index",
                    d->sub_index < 0 ? cJSON_CreateNull() : cJSON_CreateNumber(d->sub_index));
    hetcl__json_add(o, "type", cJSON_CreateString(hetcl_device_type_name(d->type)));
    hetcl__json_add(o, "name", cJSON_CreateString(d->name));
    hetcl__json_add(o, "vendor", cJSON_CreateString(d->vendor));
    hetcl__json_add(o, "vendor_id", cJSON_CreateNumber(d->vendor_id));
    hetcl__json_add(o, "device_version", cJSON_CreateString(d->device_version));
    hetcl__json_add(o, "driver_version", cJSON_CreateString(d->driver_version));
    hetcl__json_add(o, "opencl_c_version", cJSON_CreateString(d->opencl_c_version));
    hetcl__json_add(o, "platform_name", cJSON_CreateString(d->platform_name));
    hetcl__json_add(o, "platform_version", cJSON_CreateString(d->platform_version));
    hetcl__json_add(o, "compute_units", cJSON_CreateNumber(d->compute_units));
    hetcl__json_add(o, "clock_mhz", cJSON_CreateNumber(d->clock_mhz));
    hetcl__json_add(o, "global_mem_bytes", cJSON_CreateNumber((double) d->global_mem_bytes));
    hetcl__json_add(o, "global_mem_cache_bytes",
                    cJSON_CreateNumber((double) d->global_mem_cache_bytes));
    hetcl__json_add(o, "local_mem_bytes", cJSON_CreateNumber((double) d->local_mem_bytes));
    hetcl__json_add(o, "local_mem_dedicated", cJSON_CreateBool(d->local_mem_dedicated));
    hetcl__json_add(o, "max_alloc_bytes", cJSON_CreateNumber((double) d->max_alloc_bytes));
    hetcl__json_add(o, "max_work_group_size", cJSON_CreateNumber((double) d->max_work_group_size));
    cJSON *items = cJSON_CreateArray();
    for (int i = 0; items && i < 3; i++)
        cJSON_AddItemToArray(items, cJSON_CreateNumber((double) d->max_work_item_sizes[i]));
    hetcl__json_add(o, "max_work_item_sizes", items);
    hetcl__json_add(o, "fp16", cJSON_CreateBool(d->fp16));
    hetcl__json_add(o, "fp64", cJSON_CreateBool(d->fp64));
    hetcl__json_add(o, "host_unified_memory", cJSON_CreateBool(d->host_unified));
    hetcl__json_add(o, "profiling", cJSON_CreateBool(d->profiling));
    cJSON *part = cJSON_CreateObject();
    hetcl__json_add(part, "max_sub_devices", cJSON_CreateNumber(d->partition_max_sub_devices));
    hetcl__json_add(part, "equally", cJSON_CreateBool(d->partition_equally));
    hetcl__json_add(part, "by_counts", cJSON_CreateBool(d->partition_by_counts));
    hetcl__json_add(part, "by_affinity_domain", cJSON_CreateBool(d->partition_by_affinity_domain));
    hetcl__json_add(o, "partition", part);
    cJSON *exts = cJSON_CreateArray();
    char buf[sizeof d->extensions];
    memcpy(buf, d->extensions, sizeof buf);
    for (char *save = NULL, *tok = strtok_r(buf, " ", &save); exts && tok;
         tok = strtok_r(NULL, " ", &save))
        cJSON_AddItemToArray(exts, cJSON_CreateString(tok));
    hetcl__json_add(o, "extensions", exts);
    if (d->pci.valid) {
        char busid[32];
        snprintf(busid, sizeof busid, "%04x:%02x:%02x.%01x", d->pci.domain, d->pci.bus,
                 d->pci.device, d->pci.function);
        cJSON *pci = cJSON_CreateObject();
        hetcl__json_add(pci, "busid", cJSON_CreateString(busid));
        hetcl__json_add(pci, "method", cJSON_CreateString(d->pci.method));
        hetcl__json_add(o, "pci", pci);
    } else {
        hetcl__json_add(o, "pci", cJSON_CreateNull());
    }
    if (loc) {
        cJSON *l = cJSON_CreateObject();
        hetcl__json_add(l, "method", cJSON_CreateString(hetcl_locality_method_name(loc->method)));
        hetcl__json_add(l, "cpuset", cJSON_CreateString(loc->cpuset));
        hetcl__json_add(l, "nodeset", cJSON_CreateString(loc->nodeset));
        hetcl__json_add(l, "package",
                        loc->package < 0 ? cJSON_CreateNull() : cJSON_CreateNumber(loc->package));
        hetcl__json_add(l, "n_cores", cJSON_CreateNumber(loc->n_cores));
        hetcl__json_add(l, "n_pus", cJSON_CreateNumber(loc->n_pus));
        hetcl__json_add(l, "cpu_kind",
                        loc->cpu_kind < 0 ? cJSON_CreateNull() : cJSON_CreateNumber(loc->cpu_kind));
        hetcl__json_add(l, "pci_busid", cJSON_CreateString(loc->pci_busid));
        hetcl__json_add(l, "shares_host_memory", cJSON_CreateBool(loc->shares_host_memory));
        hetcl__json_add(l, "how", cJSON_CreateString(loc->how));
        hetcl__json_add(o, "locality", l);
    }
    return o;
}

static cJSON *platform_json(const struct hetcl_platform_desc *pd)
{
    cJSON *o = cJSON_CreateObject();
    hetcl__json_add(o, "index", cJSON_CreateNumber(pd->index));
    hetcl__json_add(o, "name", cJSON_CreateString(pd->name));
    hetcl__json_add(o, "vendor", cJSON_CreateString(pd->vendor));
    hetcl__json_add(o, "version", cJSON_CreateString(pd->version));
    hetcl__json_add(o, "n_devices", cJSON_CreateNumber(pd->n_devices));
    hetcl__json_add(o, "broken", cJSON_CreateBool(pd->broken));
    hetcl__json_add(o, "broken_reason", cJSON_CreateString(pd->broken_reason));
    return o;
}

cJSON *hetcl_report_opencl(const struct hetcl_device_list *list,
                           const struct hetcl_device_locality *locs, const char *split_cpu)
{
    cJSON *cl = cJSON_CreateObject();
    hetcl__json_add(cl, "icd_loader", cJSON_CreateString(list->icd_loader));
    hetcl__json_add(cl, "no_device_reason", cJSON_CreateString(list->no_device_reason));
    cJSON *plats = cJSON_CreateArray();
    for (size_t p = 0; plats && p < list->n_platforms; p++)
        cJSON_AddItemToArray(plats, platform_json(&list->platforms[p]));
    hetcl__json_add(cl, "platforms", plats);
    cJSON *devs = cJSON_CreateArray();
    for (size_t i = 0; devs && i < list->n_devices; i++)
        cJSON_AddItemToArray(devs, hetcl_report_device(&list->devices[i], &locs[i]));
    hetcl__json_add(cl, "devices", devs);
    cJSON *broken = cJSON_CreateArray();
    for (size_t b = 0; broken && b < list->n_broken; b++) {
        cJSON *bo = cJSON_CreateObject();
        hetcl__json_add(bo, "id", cJSON_CreateString(list->broken[b].id));
        hetcl__json_add(bo, "reason", cJSON_CreateString(list->broken[b].reason));
        cJSON_AddItemToArray(broken, bo);
    }
    hetcl__json_add(cl, "broken_devices", broken);
    hetcl__json_add(cl, "split_cpu",
                    split_cpu ? cJSON_CreateString(split_cpu) : cJSON_CreateNull());
    return cl;
}

static bool perf_relevant(const char *name)
{
    static const char *const prefixes[] = {
            "OPENBLAS_", "OMP_",     "POCL_",        "OCL_ICD_",     "OPENCL_",
            "HETCL_",    "CL_",      "CUDA_VISIBLE", "GOMP_",        "KMP_",
            "MKL_",      "CLBLAST_", "GPU_",         "ROCR_VISIBLE", "HIP_VISIBLE"};
    for (size_t i = 0; i < sizeof prefixes / sizeof prefixes[0]; i++)
        if (!strncmp(name, prefixes[i], strlen(prefixes[i])))
            return true;
    return false;
}

/* What hetcl set itself, from the runtime's record (hetcl_env_set_by_hetcl). */
static size_t set_by_hetcl(struct hetcl_env_setting *set, size_t cap)
{
    size_t n = hetcl_env_set_by_hetcl(set, cap);
    return n < cap ? n : cap;
}

cJSON *hetcl_report_environment(void)
{
    struct hetcl_env_setting set[8];
    size_t n_set = set_by_hetcl(set, sizeof set / sizeof set[0]);
    cJSON *env = cJSON_CreateObject();
    for (char **e = environ; env && e && *e; e++) {
        const char *eq = strchr(*e, '=');
        if (!eq || (size_t) (eq - *e) >= 128)
            continue;
        char name[128];
        memcpy(name, *e, (size_t) (eq - *e));
        name[eq - *e] = '\0';
        if (!perf_relevant(name))
            continue;
        /* A variable hetcl set holds the user's value only where it replaced one. */
        const char *value = eq + 1;
        for (size_t i = 0; i < n_set; i++)
            if (!strcmp(set[i].name, name))
                value = set[i].replaced_user_value ? set[i].user_value : NULL;
        if (value)
            hetcl__json_add(env, name, cJSON_CreateString(value));
    }
    return env;
}

cJSON *hetcl_report_environment_set_by_hetcl(void)
{
    struct hetcl_env_setting set[8];
    size_t n_set = set_by_hetcl(set, sizeof set / sizeof set[0]);
    cJSON *env = cJSON_CreateObject();
    for (size_t i = 0; env && i < n_set; i++)
        hetcl__json_add(env, set[i].name, cJSON_CreateString(set[i].value));
    return env;
}
