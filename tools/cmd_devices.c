/*
 * hetcl devices: the hwloc topology, every OpenCL platform and device, the device map, CPU
 * sub-devices (--split-cpu) and measured ceilings (--probe). A human table by default, the
 * versioned JSON document (<hetcl/devices_report.h>) with --json.
 */
#include "cli.h"
#include "cli_options.h"

#include <hetcl/devices_report.h>
#include <hetcl/hetcl.h>
#include <hetcl/report.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

static const struct cli_help devices_help = {
        .intro = "usage: hetcl devices [--json [FILE]] [--probe [--quick]] [--split-cpu SPEC]\n"
                 "                     [--timeout-ms N] [--cache-dir DIR] [--topology FILE.xml]\n\n"
                 "Lists the hardware topology (hwloc), every OpenCL platform and device, and the\n"
                 "device map: where each device sits in the topology and how that was found.\n\n",
        .outro = "exit status: 0 on success (also when no OpenCL device is found: the output says\n"
                 "why), 1 when a probe or a write fails, 2 for bad options.\n",
};

/* --json takes its file optionally: a bare --json (last, or before another flag) means
 * stdout. The table parser wants a value, so such a --json becomes --json=- in a copy of argv
 * (returned; NULL when out of memory). */
static char **json_default_stdout(int argc, char **argv)
{
    static char json_stdout[] = "--json=-";
    char **copy = calloc((size_t) argc + 1, sizeof *copy);
    for (int i = 0; copy && i < argc; i++) {
        const char *next = i + 1 < argc ? argv[i + 1] : NULL;
        bool bare = i > 0 && !strcmp(argv[i], "--json") &&
                    (!next || (next[0] == '-' && strcmp(next, "-") != 0));
        copy[i] = bare ? json_stdout : argv[i];
    }
    return copy;
}

static int parse_args(int argc, char **argv, struct devices_opts *o)
{
    o->timeout_ms = 20000;
    const struct cli_option opts[] = {
            CLI_SECTION("options:"),
            {"--json", CLI_STRING, &o->json_path, .metavar = "[FILE]",
             .help = "write the versioned JSON document (schema:\n"
                     "reports/schema/devices.schema.json) to FILE, or stdout"},
            {"--probe", CLI_FLAG, &o->probe,
             .help = "measure each device's ceilings (memory bandwidth, fp32 peak,\n"
                     "CLBlast SGEMM, launch latency, host<->device bandwidth, program\n"
                     "build times) and cache them per device and driver"},
            {"--quick", CLI_FLAG, &o->quick,
             .help = "with --probe: small sizes and few runs (a smoke test)"},
            {"--split-cpu", CLI_STRING, &o->split_cpu, .metavar = "SPEC",
             .help = "split OpenCL CPU devices into sub-devices along hwloc cores:\n"
                     "N (N equal parts), a,b,... (cores per part), kinds (one part\n"
                     "per CPU kind, e.g. big and LITTLE)"},
            {"--timeout-ms", CLI_ULONG, &o->timeout_ms, .min = 1, .max = 3600000, .metavar = "N",
             .help = "time limit for each isolated driver query (default 20000);\n"
                     "a driver that hangs past it is reported as broken"},
            {"--cache-dir", CLI_STRING, &o->cache_dir, .metavar = "DIR",
             .help = "where ceilings and program binaries are cached\n"
                     "(default $HETCL_CACHE_DIR, else ~/.cache/hetcl)"},
            {"--topology", CLI_STRING, &o->topology_xml, .metavar = "FILE",
             .help = "read the topology from an hwloc XML file instead of this\n"
                     "machine (to check a board's map from its lstopo export)"},
            {"--in-process", CLI_FLAG, &o->in_process,
             .help = "run driver queries in this process (no isolation; debugging)"},
    };
    char **args = json_default_stdout(argc, argv);
    if (!args) {
        cli_error("out of memory");
        return CLI_EXIT_FAILURE;
    }
    int rc = cli_parse_flags("devices", &devices_help, argc, args, opts, CLI_N(opts));
    free(args);
    if (rc != CLI_PARSE_OK)
        return rc;
    if (o->quick && !o->probe) {
        cli_error("--quick only applies to --probe");
        return CLI_EXIT_USAGE;
    }
    return cli_check_outputs(&(struct cli_output){"--json", o->json_path}, 1);
}

/* ------------------------------------------------------------------ the human table */

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

static void print_figure(const char *what, const struct hetcl_figure *f, const char *unit)
{
    if (!f->measured) {
        printf("    %-22s not measured: %s\n", what, f->note);
        return;
    }
    printf("    %-22s %10.2f %-8s (min %.2f, max %.2f, %u runs)\n", what, f->stat.median, unit,
           f->stat.min, f->stat.max, f->stat.n);
}

static void print_ceilings(const struct hetcl_device_desc *d, const struct hetcl_ceilings *c,
                           bool measured_now)
{
    printf("\nCeilings of %s (%s%s%s)\n", d->id,
           measured_now ? "measured now" : "cached, measured ", measured_now ? "" : c->measured_at,
           c->quick ? "; quick: not real ceilings" : "");
    print_figure("memory bandwidth", &c->mem_bandwidth, "GB/s");
    print_figure("fp32 peak (kernel)", &c->fp32_gflops, "GFLOP/s");
    char sgemm[64];
    snprintf(sgemm, sizeof sgemm, "CLBlast SGEMM n=%llu", (unsigned long long) c->sgemm_n);
    print_figure(sgemm, &c->sgemm_gflops, "GFLOP/s");
    print_figure("kernel launch latency", &c->launch_latency_us, "us");
    print_figure("host to device", &c->h2d_gbs, "GB/s");
    print_figure("device to host", &c->d2h_gbs, "GB/s");
    print_figure("program build, cold", &c->build_cold_ms, "ms");
    print_figure("program build, warm", &c->build_warm_ms, "ms");
}

/* ------------------------------------------------------------------ the command */

/* What the command works on; freed by devices_close. */
struct devices_state {
    hetcl_context *ctx;
    hetcl_topology *topo;
    struct hetcl_device_list *list;
    struct hetcl_device_locality *locs;
    cJSON *doc;
};

static void devices_close(struct devices_state *s)
{
    cJSON_Delete(s->doc);
    free(s->locs);
    hetcl_device_list_destroy(s->list);
    hetcl_topology_destroy(s->topo);
    hetcl_context_destroy(s->ctx);
}

/* Enumerates the devices (with the split asked for) and places them in the topology. */
static int enumerate(const struct devices_opts *o, struct devices_state *s)
{
    struct hetcl_enum_options eo = {.timeout_ms = (unsigned) o->timeout_ms,
                                    .in_process = o->in_process,
                                    .split_cpu = o->split_cpu,
                                    .topo = s->topo};
    hetcl_status st = hetcl_device_enumerate(s->ctx, &eo, &s->list);
    if (st != HETCL_OK) {
        const char *detail = hetcl_context_last_error(s->ctx);
        if (o->split_cpu && strncmp(detail, "--split-cpu", 11) != 0)
            cli_error("--split-cpu %s: %s", o->split_cpu, detail);
        else
            cli_error("%s", detail);
        return st == HETCL_ERR_UNSUPPORTED || st == HETCL_ERR_INVALID_ARG ? CLI_EXIT_USAGE
                                                                          : CLI_EXIT_FAILURE;
    }
    bool any_cpu = false;
    for (size_t i = 0; i < s->list->n_devices; i++)
        any_cpu |= s->list->devices[i].type == HETCL_DEVICE_CPU;
    if (o->split_cpu && !any_cpu) {
        cli_error("--split-cpu %s: there is no OpenCL CPU device to split", o->split_cpu);
        return CLI_EXIT_USAGE;
    }
    s->locs = calloc(s->list->n_devices ? s->list->n_devices : 1, sizeof *s->locs);
    if (!s->locs) {
        cli_error("out of memory");
        return CLI_EXIT_FAILURE;
    }
    for (size_t i = 0; i < s->list->n_devices; i++)
        if (hetcl_device_locate(s->ctx, s->topo, &s->list->devices[i], &s->locs[i]) != HETCL_OK) {
            cli_error("device map for %s: %s", s->list->devices[i].id,
                      hetcl_context_last_error(s->ctx));
            return CLI_EXIT_FAILURE;
        }
    return CLI_EXIT_OK;
}

static int open_devices(const struct devices_opts *o, struct devices_state *s)
{
    if (cli_context_create(o->cache_dir, &s->ctx) != HETCL_OK) {
        cli_error("out of memory");
        return CLI_EXIT_FAILURE;
    }
    struct hetcl_topology_source src = {.xml_path = o->topology_xml};
    if (hetcl_topology_create(s->ctx, &src, &s->topo) != HETCL_OK) {
        cli_error("%s%s", o->topology_xml ? "--topology " : "", hetcl_context_last_error(s->ctx));
        return o->topology_xml ? CLI_EXIT_USAGE : CLI_EXIT_FAILURE;
    }
    if (o->probe && hetcl_dir_check_writable(s->ctx, hetcl_context_cache_dir(s->ctx),
                                             "cache directory") != HETCL_OK) {
        cli_error("--probe: %s (choose another with --cache-dir or HETCL_CACHE_DIR)",
                  hetcl_context_last_error(s->ctx));
        return CLI_EXIT_USAGE;
    }
    return enumerate(o, s);
}

/* Ceilings: measured now with --probe, else the cached ones when there are any. */
static int ceilings(const struct devices_opts *o, struct devices_state *s)
{
    int rc = CLI_EXIT_OK;
    struct hetcl_devices_ceilings_options co = {.measure = o->probe,
                                                .quick = o->quick,
                                                .timeout_ms = (unsigned) o->timeout_ms,
                                                .in_process = o->in_process};
    for (size_t i = 0; i < s->list->n_devices; i++) {
        const struct hetcl_device_desc *d = &s->list->devices[i];
        if (o->probe && d->sub_index < 0 && !o->json_path)
            fprintf(stderr, "hetcl: probing %s (%s)...\n", d->id, d->name);
        struct hetcl_devices_ceilings c;
        if (hetcl_devices_report_ceilings(s->ctx, &co, s->list, i, s->doc, &c) != HETCL_OK) {
            cli_error("%s", hetcl_context_last_error(s->ctx));
            rc = CLI_EXIT_FAILURE;
        }
        if (c.available && !o->json_path)
            print_ceilings(d, &c.ceilings, c.measured_now);
    }
    return rc;
}

static int write_json(const struct devices_opts *o, struct devices_state *s)
{
    if (strcmp(o->json_path, "-")) {
        if (hetcl_report_write(s->ctx, s->doc, o->json_path) != HETCL_OK) {
            cli_error("%s", hetcl_context_last_error(s->ctx));
            return CLI_EXIT_FAILURE;
        }
        fprintf(stderr, "hetcl: wrote %s\n", o->json_path);
        return CLI_EXIT_OK;
    }
    char *text = cJSON_Print(s->doc);
    if (!text) {
        cli_error("out of memory while formatting the JSON document");
        return CLI_EXIT_FAILURE;
    }
    fputs(text, stdout);
    fputc('\n', stdout);
    cJSON_free(text);
    return CLI_EXIT_OK;
}

int cli_devices(int argc, char **argv)
{
    struct devices_opts o = {0};
    int rc = parse_args(argc, argv, &o);
    if (rc != CLI_EXIT_OK)
        return rc < 0 ? CLI_EXIT_OK : rc;
    struct devices_state s = {0};
    rc = open_devices(&o, &s);
    if (rc != CLI_EXIT_OK)
        goto done;
    struct hetcl_devices_report_options ro = {.topo = s.topo,
                                              .list = s.list,
                                              .locs = s.locs,
                                              .split_cpu = o.split_cpu,
                                              .core_round_trips = !o.topology_xml};
    if (hetcl_devices_report_create(s.ctx, &ro, &s.doc) != HETCL_OK) {
        cli_error("%s", hetcl_context_last_error(s.ctx));
        rc = CLI_EXIT_FAILURE;
        goto done;
    }
    if (!o.json_path) {
        printf("hetcl %s: devices\n\n", hetcl_version());
        print_topology(cJSON_GetObjectItem(s.doc, "topology"));
        print_core_round_trips(cJSON_GetObjectItem(s.doc, "topology"));
        print_devices(s.list, s.locs);
    }
    rc = ceilings(&o, &s);
    if (rc == CLI_EXIT_OK && o.json_path)
        rc = write_json(&o, &s);
done:
    devices_close(&s);
    return rc;
}
