/*
 * A fake OpenCL vendor driver (ICD) for the isolation tests of `hetcl devices` and of the
 * commands that open devices (train, bench).
 *
 * ocl-icd loads it like any vendor listed in an OCL_ICD_VENDORS directory. It offers one platform
 * ("hetcl fake ICD") with at most one GPU device ("fake gpu"); HETCL_FAKE_ICD_MODE chooses how it
 * misbehaves, so that a test can inject each fault a broken edge-board driver shows:
 *
 *   ok             one working GPU device
 *   crash-devices  clGetDeviceIDs raises SIGSEGV
 *   hang-devices   clGetDeviceIDs never returns (SIGTERM and SIGINT blocked: only SIGKILL ends it)
 *   fail-devices   clGetDeviceIDs returns CL_OUT_OF_HOST_MEMORY
 *   crash-info     clGetDeviceIDs works; clGetDeviceInfo(CL_DEVICE_NAME) raises SIGSEGV
 *   crash-load     clIcdGetPlatformIDsKHR raises SIGSEGV (the loader dies inside clGetPlatformIDs)
 *   hang-load      clIcdGetPlatformIDsKHR never returns (as hang-devices)
 *   crash-context  clCreateContext raises SIGSEGV (listing and queries work)
 *   fail-context   clCreateContext returns CL_DEVICE_NOT_AVAILABLE
 *   fail-queue     clCreateCommandQueue returns CL_OUT_OF_RESOURCES
 *   fail-build     clBuildProgram returns CL_BUILD_PROGRAM_FAILURE, with a one-line log
 *
 * In the other modes the device opens: a context, queues, programs (any source "builds") and
 * kernels exist, and an enqueued kernel completes at once without running anything, which is
 * what a check that a device opens needs. Nothing else (buffers, events) is offered.
 *
 * An unset mode means "ok"; an unknown one makes the driver offer no platform and say why on
 * stderr, so that a typo in a test shows up instead of silently testing the healthy path.
 *
 * What ocl-icd 2.3 needs from a vendor, and what this file provides:
 *   - the exported symbol clGetExtensionFunctionAddress, which must resolve
 *     "clIcdGetPlatformIDsKHR" and "clGetPlatformInfo" (the loader skips a vendor whose
 *     clGetPlatformInfo it cannot find, unless OCL_ICD_ASSUME_ICD_EXTENSION is set);
 *   - objects (platform, device, context, queue, program, kernel) whose first member points to a
 *     struct _cl_icd_dispatch: every call on an object goes through that table, so slots this
 *     file leaves NULL make ocl-icd call a NULL pointer (it does not check them). Only what
 *     `hetcl devices` (its check that a device opens included) and `clinfo` use is filled;
 *   - CL_PLATFORM_EXTENSIONS containing "cl_khr_icd" and CL_PLATFORM_ICD_SUFFIX_KHR, both queried
 *     while the loader initializes.
 * Only clGetExtensionFunctionAddress and clIcdGetPlatformIDsKHR are exported; the rest is static so
 * that no call inside this library binds to the loader's functions of the same name.
 *
 * This is test code standing in for a third-party driver: it keeps no state beyond its static
 * objects and is not instrumented by the sanitizers (see CMakeLists.txt).
 */
#define CL_TARGET_OPENCL_VERSION 120
#define CL_USE_DEPRECATED_OPENCL_1_1_APIS

#include <CL/cl.h>
#include <CL/cl_ext.h>
#include <CL/cl_icd.h>

#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The ICD objects: the dispatch pointer must come first (cl_khr_icd). */
struct _cl_platform_id {
    const struct _cl_icd_dispatch *dispatch;
};

struct _cl_device_id {
    const struct _cl_icd_dispatch *dispatch;
};

struct _cl_context {
    const struct _cl_icd_dispatch *dispatch;
};

struct _cl_command_queue {
    const struct _cl_icd_dispatch *dispatch;
};

struct _cl_program {
    const struct _cl_icd_dispatch *dispatch;
};

struct _cl_kernel {
    const struct _cl_icd_dispatch *dispatch;
};

enum fake_mode {
    FAKE_MODE_OK,
    FAKE_MODE_CRASH_DEVICES,
    FAKE_MODE_HANG_DEVICES,
    FAKE_MODE_FAIL_DEVICES,
    FAKE_MODE_CRASH_INFO,
    FAKE_MODE_CRASH_LOAD,
    FAKE_MODE_HANG_LOAD,
    FAKE_MODE_CRASH_CONTEXT,
    FAKE_MODE_FAIL_CONTEXT,
    FAKE_MODE_FAIL_QUEUE,
    FAKE_MODE_FAIL_BUILD,
    FAKE_MODE_UNKNOWN,
};

static const struct {
    const char *name;
    enum fake_mode mode;
} mode_names[] = {
        {"ok", FAKE_MODE_OK},
        {"crash-devices", FAKE_MODE_CRASH_DEVICES},
        {"hang-devices", FAKE_MODE_HANG_DEVICES},
        {"fail-devices", FAKE_MODE_FAIL_DEVICES},
        {"crash-info", FAKE_MODE_CRASH_INFO},
        {"crash-load", FAKE_MODE_CRASH_LOAD},
        {"hang-load", FAKE_MODE_HANG_LOAD},
        {"crash-context", FAKE_MODE_CRASH_CONTEXT},
        {"fail-context", FAKE_MODE_FAIL_CONTEXT},
        {"fail-queue", FAKE_MODE_FAIL_QUEUE},
        {"fail-build", FAKE_MODE_FAIL_BUILD},
};

/* Read on every call: cheap, and a test may change the variable between child processes. */
static enum fake_mode fake_mode(void)
{
    const char *s = getenv("HETCL_FAKE_ICD_MODE");
    if (s == NULL || s[0] == '\0') {
        return FAKE_MODE_OK;
    }
    for (size_t i = 0; i < sizeof mode_names / sizeof mode_names[0]; i++) {
        if (strcmp(s, mode_names[i].name) == 0) {
            return mode_names[i].mode;
        }
    }
    return FAKE_MODE_UNKNOWN;
}

/*
 * Crash the way a broken driver does: SIGSEGV goes to whatever handler the host installed (a
 * sanitizer's, or the host's own crash reporter), exactly as a real NULL dereference would. If a
 * handler returns, or the signal is ignored, die by the default action.
 */
static _Noreturn void fake_crash(const char *where)
{
    fprintf(stderr, "hetcl fake ICD: crashing in %s (HETCL_FAKE_ICD_MODE)\n", where);
    fflush(stderr);
    raise(SIGSEGV);
    signal(SIGSEGV, SIG_DFL);
    raise(SIGSEGV);
    abort();
}

/*
 * Hang the way a wedged driver does. SIGTERM and SIGINT are blocked, as they often are in effect
 * for a thread stuck in a driver, so the caller has to escalate to SIGKILL.
 */
static _Noreturn void fake_hang(const char *where)
{
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGINT);
    sigprocmask(SIG_BLOCK, &set, NULL);
    fprintf(stderr, "hetcl fake ICD: hanging in %s (HETCL_FAKE_ICD_MODE)\n", where);
    fflush(stderr);
    for (;;) {
        sleep(1);
    }
}

static const struct _cl_icd_dispatch fake_dispatch; /* defined below the functions */

static struct _cl_platform_id fake_platform = {&fake_dispatch};
static struct _cl_device_id fake_device = {&fake_dispatch};
static struct _cl_context fake_context = {&fake_dispatch};
static struct _cl_command_queue fake_queue = {&fake_dispatch};
static struct _cl_program fake_program = {&fake_dispatch};
static struct _cl_kernel fake_kernel = {&fake_dispatch};

/* The clGetXxxInfo convention: size query, too-small buffer, copy. */
static cl_int copy_info(const void *src, size_t size, size_t param_value_size, void *param_value,
                        size_t *param_value_size_ret)
{
    if (param_value != NULL) {
        if (param_value_size < size) {
            return CL_INVALID_VALUE;
        }
        memcpy(param_value, src, size);
    }
    if (param_value_size_ret != NULL) {
        *param_value_size_ret = size;
    }
    return CL_SUCCESS;
}

#define INFO_STR(s) copy_info((s), sizeof(s), param_value_size, param_value, param_value_size_ret)
#define INFO_VAL(type, v)                                                                          \
    do {                                                                                           \
        type val_ = (v);                                                                           \
        return copy_info(&val_, sizeof val_, param_value_size, param_value, param_value_size_ret); \
    } while (0)

static cl_int CL_API_CALL fake_get_platform_info(cl_platform_id platform,
                                                 cl_platform_info param_name,
                                                 size_t param_value_size, void *param_value,
                                                 size_t *param_value_size_ret)
{
    if (platform != NULL && platform != &fake_platform) {
        return CL_INVALID_PLATFORM;
    }
    switch (param_name) {
    case CL_PLATFORM_PROFILE:
        return INFO_STR("FULL_PROFILE");
    case CL_PLATFORM_VERSION:
        return INFO_STR("OpenCL 1.2 fake");
    case CL_PLATFORM_NAME:
        return INFO_STR("hetcl fake ICD");
    case CL_PLATFORM_VENDOR:
        return INFO_STR("hetcl tests");
    case CL_PLATFORM_EXTENSIONS:
        return INFO_STR("cl_khr_icd");
    case CL_PLATFORM_ICD_SUFFIX_KHR:
        return INFO_STR("FAKE");
    default:
        return CL_INVALID_VALUE;
    }
}

static cl_int CL_API_CALL fake_get_device_ids(cl_platform_id platform, cl_device_type device_type,
                                              cl_uint num_entries, cl_device_id *devices,
                                              cl_uint *num_devices)
{
    switch (fake_mode()) {
    case FAKE_MODE_CRASH_DEVICES:
        fake_crash("clGetDeviceIDs");
    case FAKE_MODE_HANG_DEVICES:
        fake_hang("clGetDeviceIDs");
    case FAKE_MODE_FAIL_DEVICES:
        return CL_OUT_OF_HOST_MEMORY;
    default:
        break;
    }
    if (platform != NULL && platform != &fake_platform) {
        return CL_INVALID_PLATFORM;
    }
    if ((num_entries == 0 && devices != NULL) || (devices == NULL && num_devices == NULL)) {
        return CL_INVALID_VALUE;
    }
    const cl_device_type known = CL_DEVICE_TYPE_DEFAULT | CL_DEVICE_TYPE_CPU | CL_DEVICE_TYPE_GPU |
                                 CL_DEVICE_TYPE_ACCELERATOR | CL_DEVICE_TYPE_CUSTOM;
    if (device_type != CL_DEVICE_TYPE_ALL && (device_type & ~known) != 0) {
        return CL_INVALID_DEVICE_TYPE;
    }
    if ((device_type & (CL_DEVICE_TYPE_GPU | CL_DEVICE_TYPE_DEFAULT)) == 0) {
        if (num_devices != NULL) {
            *num_devices = 0;
        }
        return CL_DEVICE_NOT_FOUND;
    }
    if (devices != NULL) {
        devices[0] = &fake_device;
    }
    if (num_devices != NULL) {
        *num_devices = 1;
    }
    return CL_SUCCESS;
}

static cl_int CL_API_CALL fake_get_device_info(cl_device_id device, cl_device_info param_name,
                                               size_t param_value_size, void *param_value,
                                               size_t *param_value_size_ret)
{
    if (device != &fake_device) {
        return CL_INVALID_DEVICE;
    }
    switch (param_name) {
    case CL_DEVICE_NAME:
        if (fake_mode() == FAKE_MODE_CRASH_INFO) {
            fake_crash("clGetDeviceInfo(CL_DEVICE_NAME)");
        }
        return INFO_STR("fake gpu");
    case CL_DEVICE_VENDOR:
        return INFO_STR("hetcl tests");
    case CL_DEVICE_VERSION:
        return INFO_STR("OpenCL 1.2 fake");
    case CL_DRIVER_VERSION:
        return INFO_STR("0.1");
    case CL_DEVICE_OPENCL_C_VERSION:
        return INFO_STR("OpenCL C 1.2 ");
    case CL_DEVICE_PROFILE:
        return INFO_STR("FULL_PROFILE");
    case CL_DEVICE_EXTENSIONS:
        return INFO_STR("");
    case CL_DEVICE_BUILT_IN_KERNELS:
        return INFO_STR("");
    case CL_DEVICE_TYPE:
        INFO_VAL(cl_device_type, CL_DEVICE_TYPE_GPU);
    case CL_DEVICE_VENDOR_ID:
        INFO_VAL(cl_uint, 0xfa4eu);
    case CL_DEVICE_PLATFORM:
        INFO_VAL(cl_platform_id, &fake_platform);
    case CL_DEVICE_MAX_COMPUTE_UNITS:
        INFO_VAL(cl_uint, 4);
    case CL_DEVICE_MAX_CLOCK_FREQUENCY:
        INFO_VAL(cl_uint, 500);
    case CL_DEVICE_MAX_WORK_ITEM_DIMENSIONS:
        INFO_VAL(cl_uint, 3);
    case CL_DEVICE_MAX_WORK_ITEM_SIZES: {
        const size_t sizes[3] = {256, 256, 256};
        return copy_info(sizes, sizeof sizes, param_value_size, param_value, param_value_size_ret);
    }
    case CL_DEVICE_MAX_WORK_GROUP_SIZE:
        INFO_VAL(size_t, 256);
    case CL_DEVICE_ADDRESS_BITS:
        INFO_VAL(cl_uint, 64);
    case CL_DEVICE_GLOBAL_MEM_SIZE:
        INFO_VAL(cl_ulong, 1024ull * 1024 * 1024);
    case CL_DEVICE_MAX_MEM_ALLOC_SIZE:
        INFO_VAL(cl_ulong, 256ull * 1024 * 1024);
    case CL_DEVICE_LOCAL_MEM_SIZE:
        INFO_VAL(cl_ulong, 32 * 1024);
    case CL_DEVICE_LOCAL_MEM_TYPE:
        INFO_VAL(cl_device_local_mem_type, CL_LOCAL);
    case CL_DEVICE_GLOBAL_MEM_CACHE_TYPE:
        INFO_VAL(cl_device_mem_cache_type, CL_READ_WRITE_CACHE);
    case CL_DEVICE_GLOBAL_MEM_CACHE_SIZE:
        INFO_VAL(cl_ulong, 256 * 1024);
    case CL_DEVICE_GLOBAL_MEM_CACHELINE_SIZE:
        INFO_VAL(cl_uint, 64);
    case CL_DEVICE_MAX_CONSTANT_BUFFER_SIZE:
        INFO_VAL(cl_ulong, 64 * 1024);
    case CL_DEVICE_MAX_CONSTANT_ARGS:
        INFO_VAL(cl_uint, 8);
    case CL_DEVICE_MAX_PARAMETER_SIZE:
        INFO_VAL(size_t, 1024);
    case CL_DEVICE_MEM_BASE_ADDR_ALIGN:
        INFO_VAL(cl_uint, 1024);
    case CL_DEVICE_MIN_DATA_TYPE_ALIGN_SIZE:
        INFO_VAL(cl_uint, 128);
    case CL_DEVICE_PRINTF_BUFFER_SIZE:
        INFO_VAL(size_t, 64 * 1024);
    case CL_DEVICE_PROFILING_TIMER_RESOLUTION:
        INFO_VAL(size_t, 1);
    case CL_DEVICE_AVAILABLE:
    case CL_DEVICE_COMPILER_AVAILABLE:
    case CL_DEVICE_LINKER_AVAILABLE:
    case CL_DEVICE_ENDIAN_LITTLE:
    case CL_DEVICE_PREFERRED_INTEROP_USER_SYNC:
        INFO_VAL(cl_bool, CL_TRUE);
    case CL_DEVICE_ERROR_CORRECTION_SUPPORT:
    case CL_DEVICE_HOST_UNIFIED_MEMORY:
    case CL_DEVICE_IMAGE_SUPPORT:
        INFO_VAL(cl_bool, CL_FALSE);
    case CL_DEVICE_QUEUE_PROPERTIES:
        INFO_VAL(cl_command_queue_properties, CL_QUEUE_PROFILING_ENABLE);
    case CL_DEVICE_EXECUTION_CAPABILITIES:
        INFO_VAL(cl_device_exec_capabilities, CL_EXEC_KERNEL);
    case CL_DEVICE_SINGLE_FP_CONFIG:
        INFO_VAL(cl_device_fp_config, CL_FP_INF_NAN | CL_FP_ROUND_TO_NEAREST | CL_FP_FMA);
    case CL_DEVICE_DOUBLE_FP_CONFIG:
    case CL_DEVICE_HALF_FP_CONFIG:
        INFO_VAL(cl_device_fp_config, 0);
    case CL_DEVICE_PREFERRED_VECTOR_WIDTH_CHAR:
    case CL_DEVICE_NATIVE_VECTOR_WIDTH_CHAR:
        INFO_VAL(cl_uint, 16);
    case CL_DEVICE_PREFERRED_VECTOR_WIDTH_SHORT:
    case CL_DEVICE_NATIVE_VECTOR_WIDTH_SHORT:
        INFO_VAL(cl_uint, 8);
    case CL_DEVICE_PREFERRED_VECTOR_WIDTH_INT:
    case CL_DEVICE_NATIVE_VECTOR_WIDTH_INT:
    case CL_DEVICE_PREFERRED_VECTOR_WIDTH_FLOAT:
    case CL_DEVICE_NATIVE_VECTOR_WIDTH_FLOAT:
        INFO_VAL(cl_uint, 4);
    case CL_DEVICE_PREFERRED_VECTOR_WIDTH_LONG:
    case CL_DEVICE_NATIVE_VECTOR_WIDTH_LONG:
        INFO_VAL(cl_uint, 2);
    case CL_DEVICE_PREFERRED_VECTOR_WIDTH_DOUBLE:
    case CL_DEVICE_NATIVE_VECTOR_WIDTH_DOUBLE:
    case CL_DEVICE_PREFERRED_VECTOR_WIDTH_HALF:
    case CL_DEVICE_NATIVE_VECTOR_WIDTH_HALF:
    case CL_DEVICE_MAX_READ_IMAGE_ARGS:
    case CL_DEVICE_MAX_WRITE_IMAGE_ARGS:
    case CL_DEVICE_MAX_SAMPLERS:
    case CL_DEVICE_PARTITION_MAX_SUB_DEVICES:
        INFO_VAL(cl_uint, 0);
    case CL_DEVICE_IMAGE2D_MAX_WIDTH:
    case CL_DEVICE_IMAGE2D_MAX_HEIGHT:
    case CL_DEVICE_IMAGE3D_MAX_WIDTH:
    case CL_DEVICE_IMAGE3D_MAX_HEIGHT:
    case CL_DEVICE_IMAGE3D_MAX_DEPTH:
    case CL_DEVICE_IMAGE_MAX_BUFFER_SIZE:
    case CL_DEVICE_IMAGE_MAX_ARRAY_SIZE:
        INFO_VAL(size_t, 0);
    case CL_DEVICE_PARENT_DEVICE:
        INFO_VAL(cl_device_id, NULL);
    case CL_DEVICE_PARTITION_PROPERTIES:
    case CL_DEVICE_PARTITION_TYPE:
        INFO_VAL(cl_device_partition_property, 0);
    case CL_DEVICE_PARTITION_AFFINITY_DOMAIN:
        INFO_VAL(cl_device_affinity_domain, 0);
    case CL_DEVICE_REFERENCE_COUNT:
        INFO_VAL(cl_uint, 1);
    default:
        return CL_INVALID_VALUE;
    }
}

/* The one device is a root device: retain and release only check the handle (OpenCL 1.2). */
static cl_int CL_API_CALL fake_retain_device(cl_device_id device)
{
    return device == &fake_device ? CL_SUCCESS : CL_INVALID_DEVICE;
}

static cl_int CL_API_CALL fake_release_device(cl_device_id device)
{
    return device == &fake_device ? CL_SUCCESS : CL_INVALID_DEVICE;
}

/* The objects below are static singletons: retain and release only check the handle. */
static cl_int set_error(cl_int *errcode_ret, cl_int e)
{
    if (errcode_ret != NULL) {
        *errcode_ret = e;
    }
    return e;
}

static cl_context CL_API_CALL fake_create_context(
        const cl_context_properties *properties, cl_uint num_devices, const cl_device_id *devices,
        void(CL_CALLBACK *pfn_notify)(const char *, const void *, size_t, void *), void *user_data,
        cl_int *errcode_ret)
{
    (void) properties;
    (void) pfn_notify;
    (void) user_data;
    switch (fake_mode()) {
    case FAKE_MODE_CRASH_CONTEXT:
        fake_crash("clCreateContext");
    case FAKE_MODE_FAIL_CONTEXT:
        set_error(errcode_ret, CL_DEVICE_NOT_AVAILABLE);
        return NULL;
    default:
        break;
    }
    for (cl_uint i = 0; devices != NULL && i < num_devices; i++) {
        if (devices[i] != &fake_device) {
            set_error(errcode_ret, CL_INVALID_DEVICE);
            return NULL;
        }
    }
    set_error(errcode_ret, CL_SUCCESS);
    return &fake_context;
}

static cl_int CL_API_CALL fake_retain_context(cl_context context)
{
    return context == &fake_context ? CL_SUCCESS : CL_INVALID_CONTEXT;
}

static cl_int CL_API_CALL fake_release_context(cl_context context)
{
    return context == &fake_context ? CL_SUCCESS : CL_INVALID_CONTEXT;
}

static cl_command_queue CL_API_CALL fake_create_command_queue(cl_context context,
                                                              cl_device_id device,
                                                              cl_command_queue_properties props,
                                                              cl_int *errcode_ret)
{
    (void) props;
    if (fake_mode() == FAKE_MODE_FAIL_QUEUE) {
        set_error(errcode_ret, CL_OUT_OF_RESOURCES);
        return NULL;
    }
    if (context != &fake_context || device != &fake_device) {
        set_error(errcode_ret, context != &fake_context ? CL_INVALID_CONTEXT : CL_INVALID_DEVICE);
        return NULL;
    }
    set_error(errcode_ret, CL_SUCCESS);
    return &fake_queue;
}

static cl_int CL_API_CALL fake_retain_command_queue(cl_command_queue queue)
{
    return queue == &fake_queue ? CL_SUCCESS : CL_INVALID_COMMAND_QUEUE;
}

static cl_int CL_API_CALL fake_release_command_queue(cl_command_queue queue)
{
    return queue == &fake_queue ? CL_SUCCESS : CL_INVALID_COMMAND_QUEUE;
}

static cl_program CL_API_CALL fake_create_program_with_source(cl_context context, cl_uint count,
                                                              const char **strings,
                                                              const size_t *lengths,
                                                              cl_int *errcode_ret)
{
    (void) lengths;
    if (context != &fake_context || count == 0 || strings == NULL) {
        set_error(errcode_ret, context != &fake_context ? CL_INVALID_CONTEXT : CL_INVALID_VALUE);
        return NULL;
    }
    set_error(errcode_ret, CL_SUCCESS);
    return &fake_program;
}

static cl_int CL_API_CALL fake_build_program(cl_program program, cl_uint num_devices,
                                             const cl_device_id *device_list, const char *options,
                                             void(CL_CALLBACK *pfn_notify)(cl_program, void *),
                                             void *user_data)
{
    (void) num_devices;
    (void) device_list;
    (void) options;
    if (program != &fake_program) {
        return CL_INVALID_PROGRAM;
    }
    if (pfn_notify != NULL) {
        pfn_notify(program, user_data);
    }
    return fake_mode() == FAKE_MODE_FAIL_BUILD ? CL_BUILD_PROGRAM_FAILURE : CL_SUCCESS;
}

static cl_int CL_API_CALL fake_get_program_build_info(cl_program program, cl_device_id device,
                                                      cl_program_build_info param_name,
                                                      size_t param_value_size, void *param_value,
                                                      size_t *param_value_size_ret)
{
    if (program != &fake_program || device != &fake_device) {
        return program != &fake_program ? CL_INVALID_PROGRAM : CL_INVALID_DEVICE;
    }
    bool failed = fake_mode() == FAKE_MODE_FAIL_BUILD;
    switch (param_name) {
    case CL_PROGRAM_BUILD_STATUS:
        INFO_VAL(cl_build_status, failed ? CL_BUILD_ERROR : CL_BUILD_SUCCESS);
    case CL_PROGRAM_BUILD_OPTIONS:
        return INFO_STR("");
    case CL_PROGRAM_BUILD_LOG:
        if (failed) {
            return INFO_STR("fake compiler: error: this driver cannot compile anything "
                            "(HETCL_FAKE_ICD_MODE=fail-build)\n");
        }
        return INFO_STR("");
    default:
        return CL_INVALID_VALUE;
    }
}

static cl_int CL_API_CALL fake_retain_program(cl_program program)
{
    return program == &fake_program ? CL_SUCCESS : CL_INVALID_PROGRAM;
}

static cl_int CL_API_CALL fake_release_program(cl_program program)
{
    return program == &fake_program ? CL_SUCCESS : CL_INVALID_PROGRAM;
}

static cl_kernel CL_API_CALL fake_create_kernel(cl_program program, const char *kernel_name,
                                                cl_int *errcode_ret)
{
    if (program != &fake_program || kernel_name == NULL) {
        set_error(errcode_ret, program != &fake_program ? CL_INVALID_PROGRAM : CL_INVALID_VALUE);
        return NULL;
    }
    set_error(errcode_ret, CL_SUCCESS);
    return &fake_kernel;
}

static cl_int CL_API_CALL fake_retain_kernel(cl_kernel kernel)
{
    return kernel == &fake_kernel ? CL_SUCCESS : CL_INVALID_KERNEL;
}

static cl_int CL_API_CALL fake_release_kernel(cl_kernel kernel)
{
    return kernel == &fake_kernel ? CL_SUCCESS : CL_INVALID_KERNEL;
}

/* Completes at once: the kernel does nothing. Events are not offered. */
static cl_int CL_API_CALL fake_enqueue_nd_range_kernel(cl_command_queue queue, cl_kernel kernel,
                                                       cl_uint work_dim, const size_t *offset,
                                                       const size_t *global_size,
                                                       const size_t *local_size, cl_uint num_events,
                                                       const cl_event *wait_list, cl_event *event)
{
    (void) offset;
    (void) local_size;
    (void) wait_list;
    if (queue != &fake_queue || kernel != &fake_kernel) {
        return queue != &fake_queue ? CL_INVALID_COMMAND_QUEUE : CL_INVALID_KERNEL;
    }
    if (work_dim < 1 || work_dim > 3 || global_size == NULL || num_events != 0 || event != NULL) {
        return CL_INVALID_VALUE;
    }
    return CL_SUCCESS;
}

static cl_int CL_API_CALL fake_flush_or_finish(cl_command_queue queue)
{
    return queue == &fake_queue ? CL_SUCCESS : CL_INVALID_COMMAND_QUEUE;
}

static cl_context CL_API_CALL fake_create_context_from_type(
        const cl_context_properties *properties, cl_device_type device_type,
        void(CL_CALLBACK *pfn_notify)(const char *, const void *, size_t, void *), void *user_data,
        cl_int *errcode_ret)
{
    (void) device_type;
    return fake_create_context(properties, 0, NULL, pfn_notify, user_data, errcode_ret);
}

static cl_int CL_API_CALL fake_icd_get_platform_ids(cl_uint num_entries, cl_platform_id *platforms,
                                                    cl_uint *num_platforms);

static void *CL_API_CALL fake_get_extension_function_address_for_platform(cl_platform_id platform,
                                                                          const char *func_name);

static const struct _cl_icd_dispatch fake_dispatch = {
        .clGetPlatformIDs = fake_icd_get_platform_ids,
        .clGetPlatformInfo = fake_get_platform_info,
        .clGetDeviceIDs = fake_get_device_ids,
        .clGetDeviceInfo = fake_get_device_info,
        .clCreateContext = fake_create_context,
        .clCreateContextFromType = fake_create_context_from_type,
        .clRetainContext = fake_retain_context,
        .clReleaseContext = fake_release_context,
        .clCreateCommandQueue = fake_create_command_queue,
        .clRetainCommandQueue = fake_retain_command_queue,
        .clReleaseCommandQueue = fake_release_command_queue,
        .clCreateProgramWithSource = fake_create_program_with_source,
        .clBuildProgram = fake_build_program,
        .clGetProgramBuildInfo = fake_get_program_build_info,
        .clRetainProgram = fake_retain_program,
        .clReleaseProgram = fake_release_program,
        .clCreateKernel = fake_create_kernel,
        .clRetainKernel = fake_retain_kernel,
        .clReleaseKernel = fake_release_kernel,
        .clEnqueueNDRangeKernel = fake_enqueue_nd_range_kernel,
        .clFlush = fake_flush_or_finish,
        .clFinish = fake_flush_or_finish,
        .clGetExtensionFunctionAddress = clGetExtensionFunctionAddress,
        .clRetainDevice = fake_retain_device,
        .clReleaseDevice = fake_release_device,
        .clGetExtensionFunctionAddressForPlatform =
                fake_get_extension_function_address_for_platform,
};

static cl_int CL_API_CALL fake_icd_get_platform_ids(cl_uint num_entries, cl_platform_id *platforms,
                                                    cl_uint *num_platforms)
{
    switch (fake_mode()) {
    case FAKE_MODE_CRASH_LOAD:
        fake_crash("clIcdGetPlatformIDsKHR");
    case FAKE_MODE_HANG_LOAD:
        fake_hang("clIcdGetPlatformIDsKHR");
    case FAKE_MODE_UNKNOWN:
        fprintf(stderr, "hetcl fake ICD: unknown HETCL_FAKE_ICD_MODE \"%s\"; no platform\n",
                getenv("HETCL_FAKE_ICD_MODE"));
        if (num_platforms != NULL) {
            *num_platforms = 0;
        }
        return CL_PLATFORM_NOT_FOUND_KHR;
    default:
        break;
    }
    if ((num_entries == 0 && platforms != NULL) || (platforms == NULL && num_platforms == NULL)) {
        return CL_INVALID_VALUE;
    }
    if (platforms != NULL) {
        platforms[0] = &fake_platform;
    }
    if (num_platforms != NULL) {
        *num_platforms = 1;
    }
    return CL_SUCCESS;
}

static void *CL_API_CALL fake_get_extension_function_address_for_platform(cl_platform_id platform,
                                                                          const char *func_name)
{
    (void) platform;
    return clGetExtensionFunctionAddress(func_name);
}

/*
 * Exported. ISO C forbids converting a function pointer to void *; POSIX (dlsym) and the OpenCL
 * API require it, so the conversion goes through memcpy, which -Wpedantic accepts.
 */
CL_API_ENTRY void *CL_API_CALL clGetExtensionFunctionAddress(const char *func_name)
{
    void (*fn)(void) = NULL;
    if (func_name == NULL) {
        return NULL;
    }
    if (strcmp(func_name, "clIcdGetPlatformIDsKHR") == 0) {
        fn = (void (*)(void)) fake_icd_get_platform_ids;
    } else if (strcmp(func_name, "clGetPlatformInfo") == 0) {
        fn = (void (*)(void)) fake_get_platform_info;
    } else {
        return NULL;
    }
    void *p;
    memcpy(&p, &fn, sizeof p);
    return p;
}

/* Exported for loaders that dlsym it directly instead of asking clGetExtensionFunctionAddress. */
CL_API_ENTRY cl_int CL_API_CALL clIcdGetPlatformIDsKHR(cl_uint num_entries,
                                                       cl_platform_id *platforms,
                                                       cl_uint *num_platforms)
{
    return fake_icd_get_platform_ids(num_entries, platforms, num_platforms);
}
