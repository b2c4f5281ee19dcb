/*
 * Tests the device map (hetcl_device_locate) and CPU split plans (hetcl_cpu_split_plan_make)
 * on XML and synthetic hwloc topologies with hand-filled device descriptions: no OpenCL and no
 * particular hardware needed.
 *
 * Fixtures (tests/fixtures/): two-socket-2gpu.xml (2 packages x 8 cores x 2 PUs, a GPU under
 * each package's host bridge at 0000:17:00.0 and 0000:b3:00.0) and biglittle-4x4-soc.xml (one
 * package, LITTLE cores 0-3 and big cores 4-7 as two hwloc CPU kinds).
 */
#include "harness.h"

#include <hetcl/context.h>
#include <hetcl/devmap.h>
#include <hetcl/status.h>

#include <stdio.h>
#include <string.h>

static hetcl_context *ctx;

static hetcl_topology *load_xml(const char *name)
{
    const char *dir = getenv("HETCL_FIXTURES");
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", dir ? dir : "tests/fixtures", name);
    hetcl_topology *topo = NULL;
    CHECK_OK(ctx,
             hetcl_topology_create(ctx, &(struct hetcl_topology_source){.xml_path = path}, &topo));
    if (!topo) {
        fprintf(stderr, "cannot load fixture %s\n", path);
        exit(1);
    }
    return topo;
}

static hetcl_topology *load_synthetic(const char *desc)
{
    hetcl_topology *topo = NULL;
    CHECK_OK(ctx,
             hetcl_topology_create(ctx, &(struct hetcl_topology_source){.synthetic = desc}, &topo));
    if (!topo)
        exit(1);
    return topo;
}

static struct hetcl_device_desc gpu(const char *id, unsigned bus)
{
    struct hetcl_device_desc d = {.type = HETCL_DEVICE_GPU, .sub_index = -1};
    snprintf(d.id, sizeof d.id, "%s", id);
    d.pci = (struct hetcl_pci_address){.valid = true, .bus = bus};
    snprintf(d.pci.method, sizeof d.pci.method, "cl_khr_pci_bus_info");
    return d;
}

static void test_method_names(void)
{
    CHECK_EQ_STR(hetcl_locality_method_name(HETCL_LOCALITY_PCI), "pci");
    CHECK_EQ_STR(hetcl_locality_method_name(HETCL_LOCALITY_CPU_CORES), "cpu-cores");
    CHECK_EQ_STR(hetcl_locality_method_name(HETCL_LOCALITY_SOC_PACKAGE), "soc-package");
    CHECK_EQ_STR(hetcl_locality_method_name(HETCL_LOCALITY_MACHINE), "machine");
}

static void test_two_socket(void)
{
    hetcl_topology *topo = load_xml("two-socket-2gpu.xml");
    struct hetcl_device_locality loc;

    struct hetcl_device_desc g0 = gpu("p0d0", 0x17);
    CHECK_OK(ctx, hetcl_device_locate(ctx, topo, &g0, &loc));
    CHECK_EQ_INT(loc.method, HETCL_LOCALITY_PCI);
    CHECK_EQ_STR(loc.pci_busid, "0000:17:00.0");
    CHECK_EQ_STR(loc.cpuset, "0-15");
    CHECK_EQ_STR(loc.nodeset, "0");
    CHECK_EQ_INT(loc.package, 0);
    CHECK_EQ_INT(loc.n_cores, 8);
    CHECK_EQ_INT(loc.n_pus, 16);
    CHECK_EQ_INT(loc.cpu_kind, -1);
    CHECK(!loc.shares_host_memory);
    CHECK_EQ_STR(loc.how, "PCI 0000:17:00.0 (from cl_khr_pci_bus_info) found in hwloc under "
                          "Package P#0, NUMA node 0.");

    struct hetcl_device_desc g1 = gpu("p0d1", 0xb3);
    CHECK_OK(ctx, hetcl_device_locate(ctx, topo, &g1, &loc));
    CHECK_EQ_INT(loc.method, HETCL_LOCALITY_PCI);
    CHECK_EQ_STR(loc.pci_busid, "0000:b3:00.0");
    CHECK_EQ_STR(loc.cpuset, "16-31");
    CHECK_EQ_STR(loc.nodeset, "1");
    CHECK_EQ_INT(loc.package, 1);

    /* A discrete GPU whose bus id the topology lacks: the whole machine, and `how` says why. */
    struct hetcl_device_desc gx = gpu("p1d0", 0x65);
    CHECK_OK(ctx, hetcl_device_locate(ctx, topo, &gx, &loc));
    CHECK_EQ_INT(loc.method, HETCL_LOCALITY_MACHINE);
    CHECK_EQ_STR(loc.pci_busid, "");
    CHECK_EQ_STR(loc.cpuset, "0-31");
    CHECK_EQ_STR(loc.nodeset, "0-1");
    CHECK_EQ_INT(loc.package, -1);
    CHECK(!loc.shares_host_memory);
    CHECK(strstr(loc.how, "PCI 0000:65:00.0 (from cl_khr_pci_bus_info) is not in the hwloc "
                          "topology") == loc.how);
    printf("fallback: %s\n", loc.how);

    /* The same with host-unified memory: a system-on-chip part, but two packages. */
    gx.host_unified = true;
    CHECK_OK(ctx, hetcl_device_locate(ctx, topo, &gx, &loc));
    CHECK_EQ_INT(loc.method, HETCL_LOCALITY_SOC_PACKAGE);
    CHECK_EQ_INT(loc.package, -1);
    CHECK_EQ_STR(loc.cpuset, "0-31");
    CHECK(loc.shares_host_memory);
    CHECK(strstr(loc.how, "is not in the hwloc topology") != NULL);
    CHECK(strstr(loc.how, "could not be narrowed") != NULL);

    /* A GPU with no PCI id on a two-package machine: cannot be narrowed to a package. */
    struct hetcl_device_desc gn = {.id = "p1d1", .type = HETCL_DEVICE_GPU};
    CHECK_OK(ctx, hetcl_device_locate(ctx, topo, &gn, &loc));
    CHECK_EQ_INT(loc.method, HETCL_LOCALITY_SOC_PACKAGE);
    CHECK_EQ_INT(loc.package, -1);
    CHECK(strstr(loc.how, "could not be narrowed") != NULL);
    /* It does not report host-unified memory: its own, whatever its locality (issue 16). */
    CHECK(!loc.shares_host_memory);

    struct hetcl_device_desc cpu = {.id = "p2d0", .type = HETCL_DEVICE_CPU, .sub_index = -1};
    CHECK_OK(ctx, hetcl_device_locate(ctx, topo, &cpu, &loc));
    CHECK_EQ_INT(loc.method, HETCL_LOCALITY_CPU_CORES);
    CHECK_EQ_STR(loc.cpuset, "0-31");
    CHECK_EQ_STR(loc.nodeset, "0-1");
    CHECK_EQ_INT(loc.package, -1);
    CHECK_EQ_INT(loc.n_cores, 16);
    CHECK_EQ_INT(loc.n_pus, 32);
    CHECK(loc.shares_host_memory);

    /* A CPU sub-device on half a core of package 1 and a core of package 1. */
    struct hetcl_device_desc sub = cpu;
    snprintf(sub.assigned_cpuset, sizeof sub.assigned_cpuset, "17-19");
    CHECK_OK(ctx, hetcl_device_locate(ctx, topo, &sub, &loc));
    CHECK_EQ_STR(loc.cpuset, "17-19");
    CHECK_EQ_STR(loc.nodeset, "1");
    CHECK_EQ_INT(loc.package, 1);
    CHECK_EQ_INT(loc.n_cores, 2);
    CHECK_EQ_INT(loc.n_pus, 3);

    /* Malformed or out-of-topology assigned cpusets. */
    const char *bad[] = {"4-7x", "abc", "7-4", "3-", "0,,2", " 1", "0-99"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        snprintf(sub.assigned_cpuset, sizeof sub.assigned_cpuset, "%s", bad[i]);
        CHECK_EQ_INT(hetcl_device_locate(ctx, topo, &sub, &loc), HETCL_ERR_INVALID_ARG);
        CHECK(strstr(hetcl_context_last_error(ctx), "p2d0") != NULL);
        CHECK(strstr(hetcl_context_last_error(ctx), bad[i]) != NULL);
        CHECK_EQ_STR(loc.cpuset, "");
    }
    printf("bad cpuset: %s\n", hetcl_context_last_error(ctx));

    CHECK_EQ_INT(hetcl_device_locate(ctx, topo, NULL, &loc), HETCL_ERR_INVALID_ARG);
    hetcl_topology_destroy(topo);
}

static void test_biglittle(void)
{
    hetcl_topology *topo = load_xml("biglittle-4x4-soc.xml");
    struct hetcl_device_locality loc;

    struct hetcl_device_desc igpu = {.id = "p0d0", .type = HETCL_DEVICE_GPU, .host_unified = true};
    CHECK_OK(ctx, hetcl_device_locate(ctx, topo, &igpu, &loc));
    CHECK_EQ_INT(loc.method, HETCL_LOCALITY_SOC_PACKAGE);
    CHECK(loc.shares_host_memory);
    CHECK_EQ_INT(loc.package, 0);
    CHECK_EQ_STR(loc.cpuset, "0-7");
    CHECK_EQ_STR(loc.nodeset, "0");
    CHECK_EQ_STR(loc.how, "No PCI id, and it reports host-unified memory: taken as a "
                          "system-on-chip part of Package P#0 (PUs 0-7, NUMA node 0).");

    /* An NPU that does not report host-unified memory is located as a system-on-chip part,
     * but its memory is its own: the driver says so, nothing is assumed from the missing PCI
     * id (issue 16). */
    struct hetcl_device_desc npu = {.id = "p1d0", .type = HETCL_DEVICE_ACCELERATOR};
    CHECK_OK(ctx, hetcl_device_locate(ctx, topo, &npu, &loc));
    CHECK_EQ_INT(loc.method, HETCL_LOCALITY_SOC_PACKAGE);
    CHECK(!loc.shares_host_memory);
    CHECK_EQ_INT(loc.package, 0);
    CHECK(strstr(loc.how, "no host-unified memory (so its own memory)") != NULL);

    struct hetcl_device_desc cpu = {.id = "p2d0", .type = HETCL_DEVICE_CPU, .sub_index = -1};
    CHECK_OK(ctx, hetcl_device_locate(ctx, topo, &cpu, &loc));
    CHECK_EQ_INT(loc.method, HETCL_LOCALITY_CPU_CORES);
    CHECK_EQ_STR(loc.cpuset, "0-7");
    CHECK_EQ_INT(loc.cpu_kind, -1); /* spans both kinds */
    CHECK_EQ_INT(loc.package, 0);
    CHECK_EQ_INT(loc.n_cores, 8);

    /* hwloc orders kinds by increasing efficiency (performance): LITTLE is kind 0, big kind 1. */
    struct hetcl_device_desc big = cpu;
    snprintf(big.assigned_cpuset, sizeof big.assigned_cpuset, "4-7");
    CHECK_OK(ctx, hetcl_device_locate(ctx, topo, &big, &loc));
    CHECK_EQ_INT(loc.cpu_kind, 1);
    CHECK_EQ_INT(loc.n_cores, 4);
    struct hetcl_device_desc little = cpu;
    snprintf(little.assigned_cpuset, sizeof little.assigned_cpuset, "1,3");
    CHECK_OK(ctx, hetcl_device_locate(ctx, topo, &little, &loc));
    CHECK_EQ_INT(loc.cpu_kind, 0);

    struct hetcl_cpu_split_plan plan;
    CHECK_OK(ctx, hetcl_cpu_split_plan_make(ctx, topo, "0-7", "kinds", &plan));
    CHECK_EQ_INT(plan.n_parts, 2);
    CHECK_EQ_STR(plan.cpusets[0], "0-3"); /* least efficient (LITTLE) first */
    CHECK_EQ_STR(plan.cpusets[1], "4-7");
    CHECK_EQ_INT(plan.counts[0], 4);
    CHECK_EQ_INT(plan.counts[1], 4);
    CHECK(plan.equally);

    /* A device on 3 LITTLE and 2 big cores. */
    CHECK_OK(ctx, hetcl_cpu_split_plan_make(ctx, topo, "1-3,6-7", "kinds", &plan));
    CHECK_EQ_INT(plan.n_parts, 2);
    CHECK_EQ_STR(plan.cpusets[0], "1-3");
    CHECK_EQ_STR(plan.cpusets[1], "6-7");
    CHECK(!plan.equally);

    /* Only big cores: a single kind. */
    CHECK_EQ_INT(hetcl_cpu_split_plan_make(ctx, topo, "4-7", "kinds", &plan),
                 HETCL_ERR_INVALID_ARG);
    CHECK_EQ_INT(plan.n_parts, 0);
    printf("kinds on one kind: %s\n", hetcl_context_last_error(ctx));
    hetcl_topology_destroy(topo);
}

static void check_split_error(const hetcl_topology *topo, const char *spec, const char *want)
{
    struct hetcl_cpu_split_plan plan;
    hetcl_status st = hetcl_cpu_split_plan_make(ctx, topo, "0-7", spec, &plan);
    CHECK_EQ_INT(st, HETCL_ERR_INVALID_ARG);
    CHECK_EQ_INT(plan.n_parts, 0);
    const char *detail = hetcl_context_last_error(ctx);
    if (!strstr(detail, want)) {
        fprintf(stderr, "split '%s': detail \"%s\" lacks \"%s\"\n", spec, detail, want);
        hetcl_test_failures++;
    }
    CHECK(!strchr(detail, '\n'));
    CHECK(strncmp(detail, "hetcl:", 6) != 0);
}

static void test_split_synthetic(void)
{
    hetcl_topology *topo = load_synthetic("pack:1 core:4 pu:2");
    struct hetcl_cpu_split_plan plan;

    CHECK_OK(ctx, hetcl_cpu_split_plan_make(ctx, topo, "0-7", "2", &plan));
    CHECK_EQ_INT(plan.n_parts, 2);
    CHECK_EQ_INT(plan.counts[0], 4);
    CHECK_EQ_INT(plan.counts[1], 4);
    CHECK_EQ_STR(plan.cpusets[0], "0-3");
    CHECK_EQ_STR(plan.cpusets[1], "4-7");
    CHECK(plan.equally);

    CHECK_OK(ctx, hetcl_cpu_split_plan_make(ctx, topo, "0-7", "1,2", &plan));
    CHECK_EQ_INT(plan.n_parts, 2);
    CHECK_EQ_INT(plan.counts[0], 2);
    CHECK_EQ_INT(plan.counts[1], 4);
    CHECK_EQ_STR(plan.cpusets[0], "0-1");
    CHECK_EQ_STR(plan.cpusets[1], "2-5");
    CHECK(!plan.equally);

    CHECK_OK(ctx, hetcl_cpu_split_plan_make(ctx, topo, "0-7", "4", &plan));
    CHECK_EQ_INT(plan.n_parts, 4);
    CHECK_EQ_STR(plan.cpusets[3], "6-7");
    CHECK_OK(ctx, hetcl_cpu_split_plan_make(ctx, topo, "0-7", "1", &plan));
    CHECK_EQ_INT(plan.n_parts, 1);
    CHECK_EQ_STR(plan.cpusets[0], "0-7");

    /* A device holding half of core 0 and all of core 1: two cores, split along them. */
    CHECK_OK(ctx, hetcl_cpu_split_plan_make(ctx, topo, "1-3", "2", &plan));
    CHECK_EQ_STR(plan.cpusets[0], "1");
    CHECK_EQ_STR(plan.cpusets[1], "2-3");
    CHECK(!plan.equally);

    check_split_error(topo, "3",
                      "CPU split '3': the device has 4 cores, which do not divide "
                      "into 3 equal parts");
    check_split_error(topo, "1,9", "CPU split '1,9': asks for 10 cores, but the device has 4");
    check_split_error(topo, "x", "CPU split 'x': expected N");
    check_split_error(topo, "", "CPU split '': empty; expected N");
    check_split_error(topo, "0", "CPU split '0': expected N");
    check_split_error(topo, "1,0", "CPU split '1,0': expected N");
    check_split_error(topo, "1,", "CPU split '1,': expected N");
    check_split_error(topo, "2 ", "CPU split '2 ': expected N");
    check_split_error(topo, "65", "at most 64 equal parts");
    check_split_error(topo, "kinds",
                      "CPU split 'kinds': the device's PUs 0-7 span 0 known CPU "
                      "kinds");
    CHECK_EQ_INT(hetcl_cpu_split_plan_make(ctx, topo, "0-3x", "2", &plan), HETCL_ERR_INVALID_ARG);
    CHECK(strstr(hetcl_context_last_error(ctx), "'0-3x'") != NULL);
    CHECK_EQ_INT(hetcl_cpu_split_plan_make(ctx, topo, "100-101", "1", &plan),
                 HETCL_ERR_INVALID_ARG);
    CHECK_EQ_INT(hetcl_cpu_split_plan_make(ctx, topo, "0-7", NULL, &plan), HETCL_ERR_INVALID_ARG);
    hetcl_topology_destroy(topo);

    /* The brief's example: 2 cores cannot be split in 3. */
    topo = load_synthetic("pack:1 core:2 pu:2");
    CHECK_EQ_INT(hetcl_cpu_split_plan_make(ctx, topo, "0-3", "3", &plan), HETCL_ERR_INVALID_ARG);
    CHECK_EQ_STR(hetcl_context_last_error(ctx),
                 "CPU split '3': the device has 2 cores, which do not divide into 3 equal parts");
    hetcl_topology_destroy(topo);

    /* A topology without Core objects is split along PUs. */
    topo = load_synthetic("pack:1 pu:4");
    CHECK_OK(ctx, hetcl_cpu_split_plan_make(ctx, topo, "0-3", "2", &plan));
    CHECK_EQ_STR(plan.cpusets[1], "2-3");
    struct hetcl_device_locality loc;
    struct hetcl_device_desc cpu = {.id = "c", .type = HETCL_DEVICE_CPU};
    CHECK_OK(ctx, hetcl_device_locate(ctx, topo, &cpu, &loc));
    CHECK_EQ_INT(loc.n_cores, 4);
    hetcl_topology_destroy(topo);
}

int main(void)
{
    CHECK_OK(ctx, hetcl_context_create(NULL, &ctx));
    if (!ctx)
        return 1;
    test_method_names();
    test_two_socket();
    test_biglittle();
    test_split_synthetic();
    hetcl_context_destroy(ctx);
    return hetcl_test_finish("test_devmap");
}
