/*
 * Tests `hetcl devices` end to end, as a user runs it: the JSON document validates against its
 * schema, the PoCL device is listed and mapped to the machine's cores and NUMA node,
 * --split-cpu 2 gives two sub-devices with disjoint cores, and bad input gets a one-line error
 * and exit status 2 (or 1 for a failed write), never a crash.
 */
#include "harness.h"

#include <cjson/cJSON.h>
#include <hwloc.h>
#include <stdbool.h>
#include <sys/wait.h>
#include <unistd.h>

static char tmpdir[256];
static const char *bin;

/* Runs `hetcl <args>`, capturing stdout and stderr in files; returns the exit status (or -1 when
 * it died of a signal, which is always a failure: hetcl must never crash on bad input). */
static int run(const char *args, char *out, size_t out_cap, char *err, size_t err_cap)
{
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "%s %s", bin, args);
    int st = hetcl_test_sh(tmpdir, cmd);
    hetcl_test_read(tmpdir, "out", out, out_cap);
    hetcl_test_read(tmpdir, "err", err, err_cap);
    return st;
}

/* A one-line error: exactly one newline, at the end, and the "hetcl: " prefix. */
static bool one_line_error(const char *err)
{
    const char *nl = strchr(err, '\n');
    return !strncmp(err, "hetcl: ", 7) && nl && nl[1] == '\0';
}

static void check_bad_input(void)
{
    static const struct {
        const char *args;
        int status;
        const char *mentions;
    } cases[] = {
            {"devices --bogus", 2, "--bogus"},
            {"devices --timeout-ms abc", 2, "--timeout-ms"},
            {"devices --timeout-ms", 2, "--timeout-ms"},
            {"devices --timeout-ms 0", 2, "--timeout-ms"},
            {"devices --split-cpu 3", 2, "--split-cpu"},
            {"devices --split-cpu 0", 2, "--split-cpu"},
            {"devices --split-cpu x,y", 2, "--split-cpu"},
            {"devices --split-cpu 1,99", 2, "--split-cpu"},
            {"devices --split-cpu kinds", 2, "--split-cpu"},
            {"devices --quick", 2, "--quick"},
            {"devices --topology /nonexistent.xml", 2, "/nonexistent.xml"},
            {"devices --json /nonexistent-dir/x.json", 2, "/nonexistent-dir/x.json"},
            {"nosuchcommand", 2, "nosuchcommand"},
    };
    char out[65536], err[4096];
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        int st = run(cases[i].args, out, sizeof out, err, sizeof err);
        if (st != cases[i].status || !one_line_error(err) || !strstr(err, cases[i].mentions)) {
            fprintf(stderr, "`hetcl %s`: status %d (want %d), stderr: %s\n", cases[i].args, st,
                    cases[i].status, err);
            hetcl_test_failures++;
        }
    }
    /* An unwritable cache directory with --probe: a path below a regular file can never be
     * created, even by root. */
    char args[512];
    snprintf(args, sizeof args, "devices --probe --quick --cache-dir %s/out/cache", tmpdir);
    int st = run(args, out, sizeof out, err, sizeof err);
    CHECK_EQ_INT(st, 2);
    CHECK(one_line_error(err) && strstr(err, "cache"));
    /* --help for the tool and the command. */
    CHECK_EQ_INT(run("--help", out, sizeof out, err, sizeof err), 0);
    CHECK(strstr(out, "devices") != NULL);
    CHECK_EQ_INT(run("devices --help", out, sizeof out, err, sizeof err), 0);
    CHECK(strstr(out, "--split-cpu") != NULL);
    CHECK_EQ_INT(run("--version", out, sizeof out, err, sizeof err), 0);
    CHECK(!strncmp(out, "hetcl 0.1.0", 11));
}

static const cJSON *get(const cJSON *o, const char *k)
{
    return cJSON_GetObjectItemCaseSensitive(o, k);
}

static int validate(const char *doc_path)
{
    const char *checker = getenv("HETCL_SCHEMA_CHECK");
    const char *src = getenv("HETCL_SOURCE_DIR");
    if (!checker || !src)
        return -1;
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "%s %s/reports/schema/devices.schema.json %s", checker, src,
             doc_path);
    int st = system(cmd);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* The machine's PUs and NUMA nodes, from hwloc, to compare with the map. */
static void machine_sets(char *pus, size_t pus_cap, char *nodes, size_t nodes_cap)
{
    hwloc_topology_t t;
    hwloc_topology_init(&t);
    hwloc_topology_load(t);
    hwloc_bitmap_list_snprintf(pus, pus_cap, hwloc_topology_get_allowed_cpuset(t));
    hwloc_bitmap_list_snprintf(nodes, nodes_cap, hwloc_topology_get_topology_nodeset(t));
    hwloc_topology_destroy(t);
}

int main(void)
{
    bin = getenv("HETCL_BIN");
    if (!bin) {
        fprintf(stderr, "HETCL_BIN is not set (run through ctest)\n");
        return 1;
    }
    snprintf(tmpdir, sizeof tmpdir, "/tmp/hetcl-cli-XXXXXX");
    if (!mkdtemp(tmpdir))
        return 1;
    check_bad_input();

    /* No OpenCL platform at all: the host is still listed and the output says why. */
    char path0[400];
    snprintf(path0, sizeof path0, "%s/none.json", tmpdir);
    {
        /* run() puts the binary first; the variable must come before it, so call the shell. */
        char cmd[1400];
        snprintf(cmd, sizeof cmd, "OCL_ICD_VENDORS=%s/no-such-dir %s devices --json %s 2>%s/err0",
                 tmpdir, bin, path0, tmpdir);
        CHECK_EQ_INT(system(cmd), 0);
        CHECK_EQ_INT(validate(path0), 0);
        cJSON *none = hetcl_test_load_json(path0);
        CHECK(none != NULL);
        CHECK_EQ_INT(cJSON_GetArraySize(get(get(none, "opencl"), "devices")), 0);
        const char *why = cJSON_GetStringValue(get(get(none, "opencl"), "no_device_reason"));
        CHECK(why && strstr(why, "no OpenCL platform") != NULL);
        CHECK(get(get(none, "topology"), "n_pus")->valueint >= 1);
        cJSON_Delete(none);
    }

    /* The JSON document validates even when there is no device (the topology is still there). */
    char args[512], path[400], err[4096];
    snprintf(path, sizeof path, "%s/devices.json", tmpdir);
    snprintf(args, sizeof args, "devices --json %s", path);
    CHECK_EQ_INT(run(args, NULL, 0, err, sizeof err), 0);
    CHECK_EQ_INT(validate(path), 0);
    cJSON *doc = hetcl_test_load_json(path);
    CHECK(doc != NULL);
    /* The cache-line round trip from the first PU to each other one the process may use. */
    const cJSON *rts = get(get(doc, "topology"), "core_round_trip_ns");
    hwloc_topology_t ht;
    hwloc_topology_init(&ht);
    hwloc_topology_load(ht);
    int allowed = hwloc_bitmap_weight(hwloc_topology_get_allowed_cpuset(ht));
    hwloc_topology_destroy(ht);
    if (allowed >= 2) {
        CHECK(cJSON_IsArray(rts));
        CHECK_EQ_INT(cJSON_GetArraySize(rts), allowed - 1 < 63 ? allowed - 1 : 63);
        CHECK(get(cJSON_GetArrayItem(rts, 0), "median")->valuedouble > 0);
    } else {
        CHECK(cJSON_IsNull(rts)); /* one PU to run on: nothing to measure */
    }
    const cJSON *devs = get(get(doc, "opencl"), "devices");
    if (cJSON_GetArraySize(devs) == 0) {
        printf("no OpenCL device: %s\n",
               cJSON_GetStringValue(get(get(doc, "opencl"), "no_device_reason")));
        cJSON_Delete(doc);
        if (hetcl_test_failures)
            return hetcl_test_finish("test_cli_devices");
        hetcl_test_skip("no OpenCL device for the device-map checks");
    }

    /* The CPU device: mapped to all the machine's PUs and its NUMA nodes. */
    char pus[256], nodes[256];
    machine_sets(pus, sizeof pus, nodes, sizeof nodes);
    const cJSON *cpu = NULL, *d;
    cJSON_ArrayForEach(d, devs) if (!cpu && !strcmp(cJSON_GetStringValue(get(d, "type")), "CPU"))
            cpu = d;
    if (!cpu) {
        cJSON_Delete(doc);
        hetcl_test_skip("no OpenCL CPU device");
    }
    const cJSON *loc = get(cpu, "locality");
    CHECK_EQ_STR(cJSON_GetStringValue(get(loc, "method")), "cpu-cores");
    CHECK_EQ_STR(cJSON_GetStringValue(get(loc, "cpuset")), pus);
    CHECK_EQ_STR(cJSON_GetStringValue(get(loc, "nodeset")), nodes);
    int cpu_units = get(cpu, "compute_units")->valueint;
    cJSON_Delete(doc);

    /* --split-cpu 2: two sub-devices with disjoint cores that cover the device's. */
    if (cpu_units >= 2 && cpu_units % 2 == 0) {
        snprintf(path, sizeof path, "%s/split.json", tmpdir);
        snprintf(args, sizeof args, "devices --split-cpu 2 --json %s", path);
        CHECK_EQ_INT(run(args, NULL, 0, err, sizeof err), 0);
        CHECK_EQ_INT(validate(path), 0);
        doc = hetcl_test_load_json(path);
        hwloc_bitmap_t a = hwloc_bitmap_alloc(), b = hwloc_bitmap_alloc();
        int n_sub = 0;
        cJSON_ArrayForEach(d, get(get(doc, "opencl"), "devices"))
        {
            if (cJSON_IsNull(get(d, "sub_index")))
                continue;
            const char *set = cJSON_GetStringValue(get(get(d, "locality"), "cpuset"));
            hwloc_bitmap_list_sscanf(n_sub == 0 ? a : b, set);
            CHECK_EQ_INT(get(d, "compute_units")->valueint, cpu_units / 2);
            n_sub++;
        }
        CHECK_EQ_INT(n_sub, 2);
        CHECK(!hwloc_bitmap_intersects(a, b));
        CHECK_EQ_INT(hwloc_bitmap_weight(a), cpu_units / 2);
        CHECK_EQ_INT(hwloc_bitmap_weight(b), cpu_units / 2);
        hwloc_bitmap_free(a);
        hwloc_bitmap_free(b);
        cJSON_Delete(doc);
    }

    /* --probe --quick measures ceilings into the document; a later run shows the cached ones. */
    snprintf(path, sizeof path, "%s/probe.json", tmpdir);
    snprintf(args, sizeof args, "devices --probe --quick --cache-dir %s/cache --json %s", tmpdir,
             path);
    CHECK_EQ_INT(run(args, NULL, 0, err, sizeof err), 0);
    CHECK_EQ_INT(validate(path), 0);
    doc = hetcl_test_load_json(path);
    const cJSON *ceil = get(cJSON_GetArrayItem(get(get(doc, "opencl"), "devices"), 0), "ceilings");
    CHECK(ceil != NULL);
    CHECK_EQ_STR(cJSON_GetStringValue(get(ceil, "source")), "measured");
    const cJSON *bw = get(get(ceil, "figures"), "mem_bandwidth");
    CHECK(cJSON_IsTrue(get(bw, "measured")) && get(bw, "median")->valuedouble > 0);
    cJSON_Delete(doc);
    snprintf(args, sizeof args, "devices --cache-dir %s/cache --json %s", tmpdir, path);
    CHECK_EQ_INT(run(args, NULL, 0, err, sizeof err), 0);
    CHECK_EQ_INT(validate(path), 0);
    doc = hetcl_test_load_json(path);
    ceil = get(cJSON_GetArrayItem(get(get(doc, "opencl"), "devices"), 0), "ceilings");
    CHECK_EQ_STR(cJSON_GetStringValue(get(ceil, "source")), "cache");
    cJSON_Delete(doc);

    /* The human table lists the device and the map. */
    char out[65536];
    CHECK_EQ_INT(run("devices", out, sizeof out, err, sizeof err), 0);
    CHECK(strstr(out, "Device map") != NULL && strstr(out, "cpu-cores") != NULL);

    snprintf(args, sizeof args, "rm -rf %s", tmpdir);
    CHECK_EQ_INT(system(args), 0);
    return hetcl_test_finish("test_cli_devices");
}
