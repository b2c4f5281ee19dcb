/*
 * hetcl devices: the hwloc topology, every OpenCL platform and device, the device map, CPU
 * sub-devices (--split-cpu) and measured ceilings (--probe). A human table by default, the
 * versioned JSON document with --json.
 */
#include "cli.h"
#include "util/json.h"

#include "devices_probe.h"
#include <hetcl/machine.h>
#include <hetcl/report.h>

#include <hetcl/hetcl.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

struct devices_opts {
    const char *json_path; /* "-" for stdout; NULL for the human table */
    bool probe;
    bool quick;
    const char *split_cpu;
    const char *topology_xml;
    const char *cache_dir;
    unsigned long timeout_ms;
    bool in_process;
};

static void devices_usage(FILE *out)
{
    fprintf(out,
            "usage: hetcl devices [--json [FILE]] [--probe [--quick]] [--split-cpu SPEC]\n"
            "                     [--timeout-ms N] [--cache-dir DIR] [--topology FILE.xml]\n\n"
            "Lists the hardware topology (hwloc), every OpenCL platform and device, and the\n"
            "device map: where each device sits in the topology and how that was found.\n\n"
            "options:\n"
            "  --json [FILE]      write the versioned JSON document (schema:\n"
            "                     reports/schema/devices.schema.json) to FILE, or stdout\n"
            "  --probe            measure each device's ceilings (memory bandwidth, fp32 peak,\n"
            "                     CLBlast SGEMM, launch latency, host<->device bandwidth, program\n"
            "                     build times) and cache them per device and driver\n"
            "  --quick            with --probe: small sizes and few runs (a smoke test)\n"
            "  --split-cpu SPEC   split OpenCL CPU devices into sub-devices along hwloc cores:\n"
            "                     N (N equal parts), a,b,... (cores per part), kinds (one part\n"
            "                     per CPU kind, e.g. big and LITTLE)\n"
            "  --timeout-ms N     time limit for each isolated driver query (default 20000);\n"
            "                     a driver that hangs past it is reported as broken\n"
            "  --cache-dir DIR    where ceilings and program binaries are cached\n"
            "                     (default $HETCL_CACHE_DIR, else ~/.cache/hetcl)\n"
            "  --topology FILE    read the topology from an hwloc XML file instead of this\n"
            "                     machine (to check a board's map from its lstopo export)\n"
            "  --in-process       run driver queries in this process (no isolation; debugging)\n"
            "  -h, --help         this help\n\n"
            "exit status: 0 on success (also when no OpenCL device is found: the output says\n"
            "why), 1 when a probe or a write fails, 2 for bad options.\n");
}

static int parse_args(int argc, char **argv, struct devices_opts *o)
{
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        bool has_value = i + 1 < argc;
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            devices_usage(stdout);
            exit(CLI_EXIT_OK);
        } else if (!strcmp(a, "--json")) {
            o->json_path = "-";
            if (has_value && argv[i + 1][0] != '-')
                o->json_path = argv[++i];
            else if (has_value && !strcmp(argv[i + 1], "-"))
                i++;
        } else if (!strncmp(a, "--json=", 7)) {
            o->json_path = a + 7;
        } else if (!strcmp(a, "--probe")) {
            o->probe = true;
        } else if (!strcmp(a, "--quick")) {
            o->quick = true;
        } else if (!strcmp(a, "--in-process")) {
            o->in_process = true;
        } else if (!strcmp(a, "--split-cpu") || !strcmp(a, "--timeout-ms") ||
                   !strcmp(a, "--cache-dir") || !strcmp(a, "--topology")) {
            if (!has_value) {
                cli_error("%s expects a value; see 'hetcl devices --help'", a);
                return CLI_EXIT_USAGE;
            }
            const char *v = argv[++i];
            if (!strcmp(a, "--split-cpu"))
                o->split_cpu = v;
            else if (!strcmp(a, "--cache-dir"))
                o->cache_dir = v;
            else if (!strcmp(a, "--topology"))
                o->topology_xml = v;
            else if (!cli_parse_uint(a, v, 3600000, &o->timeout_ms))
                return CLI_EXIT_USAGE;
            else if (o->timeout_ms == 0) {
                cli_error("--timeout-ms expects a positive number of milliseconds, got 0");
                return CLI_EXIT_USAGE;
            }
        } else {
            cli_error("devices: unknown option '%s'; see 'hetcl devices --help'", a);
            return CLI_EXIT_USAGE;
        }
    }
    if (o->quick && !o->probe) {
        cli_error("--quick only applies to --probe");
        return CLI_EXIT_USAGE;
    }
    return CLI_EXIT_OK;
}

static void human_bytes(double b, char *out, size_t cap)
{
    const char *units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    int u = 0;
    while (b >= 1024.0 && u < 4) {
        b /= 1024.0;
        u++;
    }
    snprintf(out, cap, u ? "%.1f %s" : "%.0f %s", b, units[u]);
}

/* The PCI base class in words, since hwloc names PCI devices only with libpciaccess. */
static const char *pci_class_name(int class_id)
{
    switch (class_id >> 8) {
    case 0x01:
        return "storage";
    case 0x02:
        return "network";
    case 0x03:
        return "display (GPU)";
    case 0x04:
        return "multimedia";
    case 0x06:
        return "bridge";
    case 0x0b:
        return "processor";
    case 0x0c:
        return "serial bus";
    case 0x12:
        return "processing accelerator";
    }
    return "other";
}

static void print_topology(const cJSON *t)
{
    printf("Topology (%s)\n", cJSON_GetObjectItem(t, "origin")->valuestring);
    printf("  %d package(s), %d NUMA node(s), %d core(s), %d PU(s)\n",
           cJSON_GetObjectItem(t, "n_packages")->valueint,
           cJSON_GetObjectItem(t, "n_numa_nodes")->valueint,
           cJSON_GetObjectItem(t, "n_cores")->valueint, cJSON_GetObjectItem(t, "n_pus")->valueint);
    const cJSON *it;
    cJSON_ArrayForEach(it, cJSON_GetObjectItem(t, "numa_nodes"))
    {
        char mem[32];
        human_bytes(cJSON_GetObjectItem(it, "memory_bytes")->valuedouble, mem, sizeof mem);
        printf("  NUMA node %d: %s, PUs %s\n", cJSON_GetObjectItem(it, "os_index")->valueint, mem,
               cJSON_GetObjectItem(it, "cpuset")->valuestring);
    }
    printf("  caches:");
    cJSON_ArrayForEach(it, cJSON_GetObjectItem(t, "caches"))
    {
        char size[32];
        human_bytes(cJSON_GetObjectItem(it, "size_bytes")->valuedouble, size, sizeof size);
        printf(" %s %s x%d;", cJSON_GetObjectItem(it, "level")->valuestring, size,
               cJSON_GetObjectItem(it, "count")->valueint);
    }
    printf("\n");
    const cJSON *kinds = cJSON_GetObjectItem(t, "cpu_kinds");
    if (cJSON_GetArraySize(kinds) <= 1) {
        printf("  CPU kinds: one (hwloc reports no big/LITTLE efficiency classes)\n");
    } else {
        cJSON_ArrayForEach(it, kinds)
        {
            printf("  CPU kind %d: efficiency %d, PUs %s\n",
                   cJSON_GetObjectItem(it, "index")->valueint,
                   cJSON_GetObjectItem(it, "efficiency")->valueint,
                   cJSON_GetObjectItem(it, "cpuset")->valuestring);
        }
    }
    cJSON_ArrayForEach(it, cJSON_GetObjectItem(t, "pci_devices"))
    {
        const cJSON *os = cJSON_GetObjectItem(it, "os_devices");
        int class_id = cJSON_GetObjectItem(it, "class_id")->valueint;
        printf("  PCI %s %s (class 0x%04x) %s%s%s near PUs %s\n",
               cJSON_GetObjectItem(it, "busid")->valuestring, pci_class_name(class_id), class_id,
               cJSON_GetObjectItem(it, "name")->valuestring, cJSON_GetArraySize(os) ? "-> " : "",
               cJSON_GetArraySize(os) ? cJSON_GetArrayItem(os, 0)->valuestring : "",
               cJSON_GetObjectItem(it, "cpuset")->valuestring);
    }
}

/* The cache-line round trip from the first PU this process may run on to each other one (at
 * most 63 pairs, about 10 ms each), measured on this machine only (not for --topology). On a
 * big.LITTLE board it separates the clusters; on a virtual machine it shows whether the
 * vCPUs sit on nearby cores now (see <hetcl/core_latency.h>). Null when not measured. */
static cJSON *core_round_trips(hetcl_context *ctx, const hetcl_topology *topo)
{
    int a, b;
    if (!hetcl_core_pair_default(topo, &a, &b))
        return cJSON_CreateNull();
    hwloc_const_bitmap_t allowed = hwloc_topology_get_allowed_cpuset(hetcl_topology_hwloc(topo));
    cJSON *arr = cJSON_CreateArray();
    int n = 0;
    for (int pu = b; pu >= 0 && n < 63; pu = hwloc_bitmap_next(allowed, pu), n++) {
        struct hetcl_stat st;
        if (hetcl_core_round_trip(ctx, topo, a, pu, 0, &st) != HETCL_OK)
            continue; /* the OS refused this PU: leave it out */
        cJSON *o = cJSON_CreateObject(), *pus = cJSON_CreateArray();
        cJSON_AddItemToArray(pus, cJSON_CreateNumber(a));
        cJSON_AddItemToArray(pus, cJSON_CreateNumber(pu));
        hetcl__json_add(o, "pus", pus);
        hetcl_stat_add_json(o, &st);
        cJSON_AddItemToArray(arr, o);
    }
    if (!cJSON_GetArraySize(arr)) {
        cJSON_Delete(arr);
        return cJSON_CreateNull();
    }
    return arr;
}

static void print_core_round_trips(const cJSON *t)
{
    const cJSON *arr = cJSON_GetObjectItem(t, "core_round_trip_ns"), *it;
    if (!cJSON_IsArray(arr))
        return;
    printf("  cache-line round trip from PU %d:",
           cJSON_GetArrayItem(cJSON_GetObjectItem(cJSON_GetArrayItem(arr, 0), "pus"), 0)->valueint);
    cJSON_ArrayForEach(it, arr)
    {
        printf(" PU %d %.0f ns;", cJSON_GetArrayItem(cJSON_GetObjectItem(it, "pus"), 1)->valueint,
               cJSON_GetObjectItem(it, "median")->valuedouble);
    }
    printf("\n");
}

static void print_devices(const struct hetcl_device_list *list,
                          const struct hetcl_device_locality *locs)
{
    printf("\nOpenCL%s%s%s\n", list->icd_loader[0] ? " (ICD loader: " : "", list->icd_loader,
           list->icd_loader[0] ? ")" : "");
    for (size_t p = 0; p < list->n_platforms; p++) {
        const struct hetcl_platform_desc *pd = &list->platforms[p];
        if (pd->broken)
            printf("  platform %d: BROKEN: %s%s%s\n", pd->index, pd->name[0] ? pd->name : "",
                   pd->name[0] ? ": " : "", pd->broken_reason);
        else
            printf("  platform %d: %s (%s), %u device(s)\n", pd->index, pd->name, pd->version,
                   pd->n_devices);
    }
    if (list->no_device_reason[0])
        printf("  no OpenCL device: %s\n", list->no_device_reason);
    for (size_t b = 0; b < list->n_broken; b++)
        printf("  device %s: BROKEN: %s\n", list->broken[b].id, list->broken[b].reason);
    if (!list->n_devices)
        return;

    printf("\nDevices\n  %-8s %-6s %-34s %4s %6s %10s %10s %9s %s\n", "ID", "TYPE", "NAME", "CU",
           "MHz", "GLOBAL", "MAX ALLOC", "LOCAL", "FP16 FP64 UNIFIED");
    for (size_t i = 0; i < list->n_devices; i++) {
        const struct hetcl_device_desc *d = &list->devices[i];
        char g[32], a[32], l[32];
        human_bytes((double) d->global_mem_bytes, g, sizeof g);
        human_bytes((double) d->max_alloc_bytes, a, sizeof a);
        human_bytes((double) d->local_mem_bytes, l, sizeof l);
        printf("  %-8s %-6s %-34.34s %4u %6u %10s %10s %9s %-4s %-4s %s\n", d->id,
               hetcl_device_type_name(d->type), d->name, d->compute_units, d->clock_mhz, g, a, l,
               d->fp16 ? "yes" : "no", d->fp64 ? "yes" : "no", d->host_unified ? "yes" : "no");
    }
    for (size_t i = 0; i < list->n_devices; i++) {
        const struct hetcl_device_desc *d = &list->devices[i];
        if (d->sub_index >= 0)
            continue;
        printf("  %s: %s; driver %s; %s; max work-group %llu; partitions:%s%s%s (max %u)\n", d->id,
               d->platform_name, d->driver_version, d->opencl_c_version,
               (unsigned long long) d->max_work_group_size, d->partition_equally ? " equally" : "",
               d->partition_by_counts ? " by-counts" : "",
               d->partition_by_affinity_domain ? " by-affinity" : "", d->partition_max_sub_devices);
        if (d->extensions[0])
            printf("      extensions: %s\n", d->extensions);
    }

    printf("\nDevice map\n");
    for (size_t i = 0; i < list->n_devices; i++) {
        const struct hetcl_device_locality *l = &locs[i];
        char package[16] = "?";
        if (l->package >= 0)
            snprintf(package, sizeof package, "%d", l->package);
        printf("  %-8s %-11s PUs %s (%u core(s)), NUMA %s, package %s%s%s%s\n", list->devices[i].id,
               hetcl_locality_method_name(l->method), l->cpuset, l->n_cores,
               l->nodeset[0] ? l->nodeset : "?", package, l->pci_busid[0] ? ", PCI " : "",
               l->pci_busid, l->shares_host_memory ? ", shares host memory" : "");
        printf("           %s\n", l->how);
    }
}

static int write_json(const struct devices_opts *o, cJSON *doc)
{
    char *text = cJSON_Print(doc);
    if (!text) {
        cli_error("out of memory while formatting the JSON document");
        return CLI_EXIT_FAILURE;
    }
    int rc = CLI_EXIT_OK;
    if (!strcmp(o->json_path, "-")) {
        fputs(text, stdout);
        fputc('\n', stdout);
    } else if (cli_write_file_atomic(o->json_path, text) != 0) {
        rc = CLI_EXIT_FAILURE;
    } else {
        fprintf(stderr, "hetcl: wrote %s\n", o->json_path);
    }
    cJSON_free(text);
    return rc;
}

static cJSON *document_header(void)
{
    cJSON *doc = hetcl_report_create("hetcl.devices", HETCL_DEVICES_SCHEMA_VERSION);
    cJSON *host = cJSON_CreateObject();
    struct utsname u;
    char hostname[256] = "";
    gethostname(hostname, sizeof hostname - 1);
    hetcl__json_add(host, "hostname", cJSON_CreateString(hostname));
    if (uname(&u) == 0) {
        char os[512];
        snprintf(os, sizeof os, "%s %s %s", u.sysname, u.release, u.machine);
        hetcl__json_add(host, "os", cJSON_CreateString(os));
    }
    hetcl__json_add(host, "environment", hetcl_report_environment());
    hetcl__json_add(doc, "host", host);
    return doc;
}

int cli_devices(int argc, char **argv)
{
    struct devices_opts o = {0};
    int rc = parse_args(argc, argv, &o);
    if (rc != CLI_EXIT_OK)
        return rc;

    hetcl_context *ctx = NULL;
    hetcl_topology *topo = NULL;
    struct hetcl_device_list *list = NULL;
    struct hetcl_device_locality *locs = NULL;
    cJSON *doc = NULL;
    struct hetcl_context_options copts = {.cache_dir = o.cache_dir};
    if (hetcl_context_create(&copts, &ctx) != HETCL_OK) {
        cli_error("out of memory");
        return CLI_EXIT_FAILURE;
    }
    struct hetcl_topology_source src = {.xml_path = o.topology_xml};
    if (hetcl_topology_create(ctx, &src, &topo) != HETCL_OK) {
        cli_error("%s%s", o.topology_xml ? "--topology " : "", hetcl_context_last_error(ctx));
        rc = o.topology_xml ? CLI_EXIT_USAGE : CLI_EXIT_FAILURE;
        goto done;
    }
    if (o.probe && !devices_probe_cache_ok(ctx)) {
        rc = CLI_EXIT_USAGE;
        goto done;
    }

    struct hetcl_enum_options eo = {.timeout_ms = (unsigned) o.timeout_ms,
                                    .in_process = o.in_process,
                                    .split_cpu = o.split_cpu,
                                    .topo = topo};
    hetcl_status st = hetcl_device_enumerate(ctx, &eo, &list);
    if (st != HETCL_OK) {
        const char *detail = hetcl_context_last_error(ctx);
        if (o.split_cpu && strncmp(detail, "--split-cpu", 11) != 0)
            cli_error("--split-cpu %s: %s", o.split_cpu, detail);
        else
            cli_error("%s", detail);
        rc = (st == HETCL_ERR_UNSUPPORTED || st == HETCL_ERR_INVALID_ARG) ? CLI_EXIT_USAGE
                                                                          : CLI_EXIT_FAILURE;
        goto done;
    }
    if (o.split_cpu) {
        bool any_cpu = false;
        for (size_t i = 0; i < list->n_devices; i++)
            any_cpu |= list->devices[i].type == HETCL_DEVICE_CPU;
        if (!any_cpu) {
            cli_error("--split-cpu %s: there is no OpenCL CPU device to split", o.split_cpu);
            rc = CLI_EXIT_USAGE;
            goto done;
        }
    }
    locs = calloc(list->n_devices ? list->n_devices : 1, sizeof *locs);
    if (!locs) {
        cli_error("out of memory");
        rc = CLI_EXIT_FAILURE;
        goto done;
    }
    for (size_t i = 0; i < list->n_devices; i++) {
        if (hetcl_device_locate(ctx, topo, &list->devices[i], &locs[i]) != HETCL_OK) {
            cli_error("device map for %s: %s", list->devices[i].id, hetcl_context_last_error(ctx));
            rc = CLI_EXIT_FAILURE;
            goto done;
        }
    }

    doc = document_header();
    cJSON *topo_json = hetcl_report_topology(topo);
    if (!o.topology_xml)
        hetcl__json_add(topo_json, "core_round_trip_ns", core_round_trips(ctx, topo));
    hetcl__json_add(doc, "topology", topo_json);
    cJSON *cl = hetcl_report_opencl(list, locs, o.split_cpu);
    cJSON *devs = cJSON_GetObjectItemCaseSensitive(cl, "devices");
    hetcl__json_add(doc, "opencl", cl);

    if (!o.json_path) {
        printf("hetcl %s: devices\n\n", hetcl_version());
        print_topology(cJSON_GetObjectItem(doc, "topology"));
        print_core_round_trips(cJSON_GetObjectItem(doc, "topology"));
        print_devices(list, locs);
    }
    /* Ceilings: measured now with --probe, else the cached ones when there are any. */
    rc = devices_probe_all(ctx, &o.probe, o.quick, (unsigned) o.timeout_ms, o.in_process, list,
                           devs, !o.json_path);
    if (rc == CLI_EXIT_OK && o.json_path)
        rc = write_json(&o, doc);

done:
    cJSON_Delete(doc);
    free(locs);
    hetcl_device_list_destroy(list);
    hetcl_topology_destroy(topo);
    hetcl_context_destroy(ctx);
    return rc;
}
