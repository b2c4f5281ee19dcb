/* OpenCL device and platform queries into the plain-data structs of device.h. */
/* ocl-icd exposes its loader-information query only through the OpenCL 1.1 lookup. */
#define CL_USE_DEPRECATED_OPENCL_1_1_APIS
#include "device/cl_query.h"

#include <hetcl_internal/base.h>
#include <hetcl_internal/cl_error.h>

#include <stddef.h>
#include <stdio.h>
#include <string.h>

/* Vendor queries that hwloc also uses; defined here so that no vendor cl_ext.h is needed. */
#define HETCL_CL_DEVICE_PCI_BUS_INFO_KHR 0x410F
#define HETCL_CL_DEVICE_TOPOLOGY_AMD     0x4037
#define HETCL_CL_DEVICE_PCI_BUS_ID_NV    0x4008
#define HETCL_CL_DEVICE_PCI_SLOT_ID_NV   0x4009
#define HETCL_CL_DEVICE_PCI_DOMAIN_ID_NV 0x400A
#define HETCL_CL_TOPOLOGY_TYPE_PCIE_AMD  1

struct pci_bus_info_khr {
    cl_uint domain, bus, device, function;
};

union topology_amd {
    struct {
        cl_uint type;
        cl_uint data[5];
    } raw;
    struct {
        cl_uint type;
        cl_char unused[17];
        cl_char bus, device, function;
    } pcie;
};

/* The extensions hetcl cares about; the device's full list is long and mostly irrelevant. */
static const char *const interesting_extensions[] = {
        "cl_khr_fp16",
        "cl_khr_fp64",
        "cl_khr_pci_bus_info",
        "cl_khr_device_uuid",
        "cl_khr_subgroups",
        "cl_intel_subgroups",
        "cl_khr_int64_base_atomics",
        "cl_khr_global_int32_base_atomics",
        "cl_khr_il_program",
        "cl_khr_spir",
        "cl_amd_device_attribute_query",
        "cl_nv_device_attribute_query",
        "cl_arm_integer_dot_product_int8",
        "cl_qcom_ext_host_ptr",
        "cl_intel_unified_shared_memory",
        "cl_ext_float_atomics",
};

static bool has_word(const char *list, const char *word)
{
    size_t n = strlen(word);
    for (const char *p = strstr(list, word); p; p = strstr(p + 1, word))
        if ((p == list || p[-1] == ' ') && (p[n] == ' ' || p[n] == '\0'))
            return true;
    return false;
}

#define QUERY(param, var)                                                                    \
    do {                                                                                     \
        cl_int e_ = clGetDeviceInfo(dev, param, sizeof(var), &(var), NULL);                  \
        if (e_ != CL_SUCCESS) {                                                              \
            snprintf(err, cap, "clGetDeviceInfo(%s): %s", #param, hetcl__cl_error_name(e_)); \
            return HETCL_ERR_OPENCL;                                                         \
        }                                                                                    \
    } while (0)

#define QUERY_STR(param, buf)                                                                \
    do {                                                                                     \
        cl_int e_ = clGetDeviceInfo(dev, param, sizeof(buf), (buf), NULL);                   \
        if (e_ != CL_SUCCESS) {                                                              \
            snprintf(err, cap, "clGetDeviceInfo(%s): %s", #param, hetcl__cl_error_name(e_)); \
            return HETCL_ERR_OPENCL;                                                         \
        }                                                                                    \
        (buf)[sizeof(buf) - 1] = '\0';                                                       \
    } while (0)

/* An optional query: a failure leaves the default. */
#define QUERY_OPT(param, var) (void) clGetDeviceInfo(dev, param, sizeof(var), &(var), NULL)

static void query_pci(cl_device_id dev, const char *exts, struct hetcl_pci_address *pci)
{
    memset(pci, 0, sizeof *pci);
    if (has_word(exts, "cl_khr_pci_bus_info")) {
        struct pci_bus_info_khr info;
        if (clGetDeviceInfo(dev, HETCL_CL_DEVICE_PCI_BUS_INFO_KHR, sizeof info, &info, NULL) ==
            CL_SUCCESS) {
            *pci = (struct hetcl_pci_address){true,        info.domain,   info.bus,
                                              info.device, info.function, "cl_khr_pci_bus_info"};
            return;
        }
    }
    if (has_word(exts, "cl_amd_device_attribute_query")) {
        union topology_amd t;
        if (clGetDeviceInfo(dev, HETCL_CL_DEVICE_TOPOLOGY_AMD, sizeof t, &t, NULL) == CL_SUCCESS &&
            t.raw.type == HETCL_CL_TOPOLOGY_TYPE_PCIE_AMD) {
            /* AMD reports bus, device and function as signed chars and no domain. */
            *pci = (struct hetcl_pci_address){true,
                                              0,
                                              (unsigned char) t.pcie.bus,
                                              (unsigned char) t.pcie.device,
                                              (unsigned char) t.pcie.function,
                                              "cl_amd_device_attribute_query"};
            return;
        }
    }
    if (has_word(exts, "cl_nv_device_attribute_query")) {
        cl_uint bus = 0, slot = 0, domain = 0;
        if (clGetDeviceInfo(dev, HETCL_CL_DEVICE_PCI_BUS_ID_NV, sizeof bus, &bus, NULL) ==
                    CL_SUCCESS &&
            clGetDeviceInfo(dev, HETCL_CL_DEVICE_PCI_SLOT_ID_NV, sizeof slot, &slot, NULL) ==
                    CL_SUCCESS) {
            /* The domain query exists only since CUDA 10.2; without it, domain 0. */
            (void) clGetDeviceInfo(dev, HETCL_CL_DEVICE_PCI_DOMAIN_ID_NV, sizeof domain, &domain,
                                   NULL);
            *pci = (struct hetcl_pci_address){true,      domain,   bus,
                                              slot >> 3, slot & 7, "cl_nv_device_attribute_query"};
        }
    }
}

hetcl_status hetcl__cl_describe_device(cl_device_id dev, struct hetcl_device_desc *out, char *err,
                                       size_t cap)
{
    cl_device_type type = 0;
    cl_uint cu = 0, clock = 0, vendor_id = 0;
    cl_ulong global = 0, cache = 0, local = 0, max_alloc = 0;
    size_t wg = 0, items[3] = {0, 0, 0};
    cl_bool unified = CL_FALSE;
    cl_device_local_mem_type local_type = CL_GLOBAL;
    cl_command_queue_properties qprops = 0;
    cl_platform_id platform = NULL;

    QUERY_STR(CL_DEVICE_NAME, out->name);
    QUERY(CL_DEVICE_TYPE, type);
    QUERY_STR(CL_DEVICE_VENDOR, out->vendor);
    QUERY_STR(CL_DEVICE_VERSION, out->device_version);
    QUERY_STR(CL_DRIVER_VERSION, out->driver_version);
    QUERY(CL_DEVICE_MAX_COMPUTE_UNITS, cu);
    QUERY(CL_DEVICE_GLOBAL_MEM_SIZE, global);
    QUERY(CL_DEVICE_MAX_MEM_ALLOC_SIZE, max_alloc);
    QUERY(CL_DEVICE_MAX_WORK_GROUP_SIZE, wg);
    QUERY(CL_DEVICE_PLATFORM, platform);
    QUERY_OPT(CL_DEVICE_OPENCL_C_VERSION, out->opencl_c_version);
    out->opencl_c_version[sizeof out->opencl_c_version - 1] = '\0';
    QUERY_OPT(CL_DEVICE_VENDOR_ID, vendor_id);
    QUERY_OPT(CL_DEVICE_MAX_CLOCK_FREQUENCY, clock);
    QUERY_OPT(CL_DEVICE_GLOBAL_MEM_CACHE_SIZE, cache);
    QUERY_OPT(CL_DEVICE_LOCAL_MEM_SIZE, local);
    QUERY_OPT(CL_DEVICE_LOCAL_MEM_TYPE, local_type);
    QUERY_OPT(CL_DEVICE_MAX_WORK_ITEM_SIZES, items);
    QUERY_OPT(CL_DEVICE_HOST_UNIFIED_MEMORY, unified);
    QUERY_OPT(CL_DEVICE_QUEUE_PROPERTIES, qprops);

    out->type = (type & CL_DEVICE_TYPE_GPU)           ? HETCL_DEVICE_GPU
                : (type & CL_DEVICE_TYPE_ACCELERATOR) ? HETCL_DEVICE_ACCELERATOR
                : (type & CL_DEVICE_TYPE_CPU)         ? HETCL_DEVICE_CPU
                                                      : HETCL_DEVICE_CUSTOM;
    out->vendor_id = vendor_id;
    out->compute_units = cu;
    out->clock_mhz = clock;
    out->global_mem_bytes = global;
    out->global_mem_cache_bytes = cache;
    out->local_mem_bytes = local;
    out->local_mem_dedicated = local_type == CL_LOCAL;
    out->max_alloc_bytes = max_alloc;
    out->max_work_group_size = wg;
    for (int i = 0; i < 3; i++)
        out->max_work_item_sizes[i] = items[i];
    out->host_unified = unified == CL_TRUE;
    out->profiling = (qprops & CL_QUEUE_PROFILING_ENABLE) != 0;

    /* Extensions: the full string can be several KB; keep only the ones hetcl uses. */
    size_t ext_len = 0;
    out->extensions[0] = '\0';
    char *exts = NULL;
    if (clGetDeviceInfo(dev, CL_DEVICE_EXTENSIONS, 0, NULL, &ext_len) == CL_SUCCESS &&
        (exts = hetcl__malloc(ext_len + 1)) != NULL) {
        if (clGetDeviceInfo(dev, CL_DEVICE_EXTENSIONS, ext_len, exts, NULL) != CL_SUCCESS)
            ext_len = 0;
        exts[ext_len] = '\0';
        size_t used = 0;
        for (size_t i = 0; i < sizeof interesting_extensions / sizeof *interesting_extensions;
             i++) {
            const char *e = interesting_extensions[i];
            if (!has_word(exts, e) || used + strlen(e) + 2 > sizeof out->extensions)
                continue;
            used += (size_t) snprintf(out->extensions + used, sizeof out->extensions - used, "%s%s",
                                      used ? " " : "", e);
        }
        out->fp16 = has_word(exts, "cl_khr_fp16");
        out->fp64 = has_word(exts, "cl_khr_fp64");
        query_pci(dev, exts, &out->pci);
        hetcl__free(exts);
    }

    /* Partition support: which kinds, and how many sub-devices at most. */
    cl_device_partition_property parts[8] = {0};
    size_t parts_size = 0;
    QUERY_OPT(CL_DEVICE_PARTITION_MAX_SUB_DEVICES, out->partition_max_sub_devices);
    if (clGetDeviceInfo(dev, CL_DEVICE_PARTITION_PROPERTIES, sizeof parts, parts, &parts_size) ==
        CL_SUCCESS) {
        for (size_t i = 0; i < parts_size / sizeof parts[0]; i++) {
            out->partition_equally |= parts[i] == CL_DEVICE_PARTITION_EQUALLY;
            out->partition_by_counts |= parts[i] == CL_DEVICE_PARTITION_BY_COUNTS;
            out->partition_by_affinity_domain |= parts[i] == CL_DEVICE_PARTITION_BY_AFFINITY_DOMAIN;
        }
    }

    struct hetcl_platform_desc pd;
    if (hetcl__cl_describe_platform(platform, &pd, err, cap) != HETCL_OK)
        return HETCL_ERR_OPENCL;
    hetcl__strlcpy(out->platform_name, pd.name, sizeof out->platform_name);
    hetcl__strlcpy(out->platform_vendor, pd.vendor, sizeof out->platform_vendor);
    hetcl__strlcpy(out->platform_version, pd.version, sizeof out->platform_version);
    return HETCL_OK;
}

hetcl_status hetcl__cl_describe_platform(cl_platform_id p, struct hetcl_platform_desc *out,
                                         char *err, size_t cap)
{
    static const struct {
        cl_platform_info param;
        const char *name;
        size_t offset;
    } fields[] = {
            {CL_PLATFORM_NAME, "CL_PLATFORM_NAME", offsetof(struct hetcl_platform_desc, name)},
            {CL_PLATFORM_VENDOR, "CL_PLATFORM_VENDOR",
             offsetof(struct hetcl_platform_desc, vendor)},
            {CL_PLATFORM_VERSION, "CL_PLATFORM_VERSION",
             offsetof(struct hetcl_platform_desc, version)},
    };
    for (size_t i = 0; i < sizeof fields / sizeof fields[0]; i++) {
        char *dst = (char *) out + fields[i].offset;
        cl_int e = clGetPlatformInfo(p, fields[i].param, HETCL_STR_MAX, dst, NULL);
        if (e != CL_SUCCESS) {
            snprintf(err, cap, "clGetPlatformInfo(%s): %s", fields[i].name,
                     hetcl__cl_error_name(e));
            return HETCL_ERR_OPENCL;
        }
        dst[HETCL_STR_MAX - 1] = '\0';
    }
    return HETCL_OK;
}

static void set_call(char *stage, size_t cap, const char *call)
{
    if (stage)
        hetcl__strlcpy(stage, call, cap);
}

/* The first line of the build log, into out[cap] ("" when there is none). */
static void build_log_line(cl_program prog, cl_device_id dev, char *out, size_t cap)
{
    char log[1024] = "";
    out[0] = '\0';
    if (clGetProgramBuildInfo(prog, dev, CL_PROGRAM_BUILD_LOG, sizeof log, log, NULL) != CL_SUCCESS)
        return;
    log[sizeof log - 1] = '\0';
    const char *p = log;
    while (*p == '\n' || *p == ' ')
        p++;
    size_t n = strcspn(p, "\n");
    snprintf(out, cap, "%.*s", (int) n, p);
}

hetcl_status hetcl__cl_check_device(cl_device_id dev, bool profiling, char *stage, size_t stage_cap,
                                    char *err, size_t cap)
{
    const char *source = "__kernel void hetcl_check(void) {}\n";
    cl_platform_id platform = NULL;
    cl_context ctx = NULL;
    cl_command_queue queue = NULL;
    cl_program prog = NULL;
    cl_kernel kernel = NULL;
    const char *call = "clGetDeviceInfo(CL_DEVICE_PLATFORM)";
    cl_int e = clGetDeviceInfo(dev, CL_DEVICE_PLATFORM, sizeof platform, &platform, NULL);
    if (e != CL_SUCCESS)
        goto fail;
    cl_context_properties props[] = {CL_CONTEXT_PLATFORM, (cl_context_properties) platform, 0};
    set_call(stage, stage_cap, call = "clCreateContext");
    ctx = clCreateContext(props, 1, &dev, NULL, NULL, &e);
    if (e != CL_SUCCESS || !ctx)
        goto fail;
    set_call(stage, stage_cap, call = "clCreateCommandQueue");
    queue = clCreateCommandQueue(ctx, dev, profiling ? CL_QUEUE_PROFILING_ENABLE : 0, &e);
    if (e != CL_SUCCESS || !queue)
        goto fail;
    set_call(stage, stage_cap, call = "clCreateProgramWithSource");
    prog = clCreateProgramWithSource(ctx, 1, &source, NULL, &e);
    if (e != CL_SUCCESS || !prog)
        goto fail;
    set_call(stage, stage_cap, call = "clBuildProgram");
    e = clBuildProgram(prog, 1, &dev, "", NULL, NULL);
    if (e != CL_SUCCESS) {
        char line[HETCL_STR_MAX];
        build_log_line(prog, dev, line, sizeof line);
        snprintf(err, cap, "clBuildProgram of a one-line kernel: %s%s%s", hetcl__cl_error_name(e),
                 line[0] ? ": " : "", line);
        goto release;
    }
    set_call(stage, stage_cap, call = "clCreateKernel");
    kernel = clCreateKernel(prog, "hetcl_check", &e);
    if (e != CL_SUCCESS || !kernel)
        goto fail;
    set_call(stage, stage_cap, call = "clEnqueueNDRangeKernel");
    size_t one = 1;
    e = clEnqueueNDRangeKernel(queue, kernel, 1, NULL, &one, NULL, 0, NULL, NULL);
    if (e != CL_SUCCESS)
        goto fail;
    set_call(stage, stage_cap, call = "clFinish");
    e = clFinish(queue);
    if (e != CL_SUCCESS)
        goto fail;
    set_call(stage, stage_cap, "releasing the check's objects");
    clReleaseKernel(kernel);
    clReleaseProgram(prog);
    clReleaseCommandQueue(queue);
    clReleaseContext(ctx);
    set_call(stage, stage_cap, "");
    return HETCL_OK;
fail:
    snprintf(err, cap, "%s: %s", call,
             e != CL_SUCCESS ? hetcl__cl_error_name(e) : "returned NULL with CL_SUCCESS");
release:
    if (kernel)
        clReleaseKernel(kernel);
    if (prog)
        clReleaseProgram(prog);
    if (queue)
        clReleaseCommandQueue(queue);
    if (ctx)
        clReleaseContext(ctx);
    return HETCL_ERR_OPENCL;
}

/* ocl-icd's loader-information extension. */
typedef cl_int (*icd_loader_info_fn)(cl_uint, size_t, void *, size_t *);
#define HETCL_CL_ICDL_OCL_VERSION 1
#define HETCL_CL_ICDL_VERSION     2
#define HETCL_CL_ICDL_NAME        3

void hetcl__cl_icd_loader(char *out, size_t cap)
{
    out[0] = '\0';
    void *fp = clGetExtensionFunctionAddress("clGetICDLoaderInfoOCLICD");
    if (!fp)
        return;
    icd_loader_info_fn info;
    memcpy(&info, &fp, sizeof info); /* object pointer to function pointer, portably */
    char name[128] = "", version[64] = "", ocl[64] = "";
    if (info(HETCL_CL_ICDL_NAME, sizeof name, name, NULL) != CL_SUCCESS)
        return;
    (void) info(HETCL_CL_ICDL_VERSION, sizeof version, version, NULL);
    (void) info(HETCL_CL_ICDL_OCL_VERSION, sizeof ocl, ocl, NULL);
    name[sizeof name - 1] = version[sizeof version - 1] = ocl[sizeof ocl - 1] = '\0';
    snprintf(out, cap, "%s %s (%s)", name, version, ocl);
}
