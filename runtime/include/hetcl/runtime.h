/*
 * The task-graph runtime: tasks over data handles, run asynchronously on every device.
 *
 *     hetcl_runtime *rt = NULL;
 *     struct hetcl_runtime_options o = {.scheduler = "dmda", .devices = "all"};
 *     if (hetcl_runtime_create(ctx, &o, &rt) != HETCL_OK) ...
 *
 *     hetcl_handle *x = NULL, *y = NULL;
 *     hetcl_handle_register(rt, xs, n * sizeof(float), &x);     // host copy: the caller's array
 *     hetcl_handle_register(rt, NULL, n * sizeof(float), &y);   // host copy allocated, zeroed
 *
 *     static const struct hetcl_codelet axpy = {.name = "axpy", .host = axpy_host,
 *                                               .opencl = axpy_cl};
 *     struct hetcl_task_desc t = {.codelet = &axpy, .n_buffers = 2,
 *                                 .handles = {x, y}, .modes = {HETCL_R, HETCL_RW},
 *                                 .args = &alpha, .args_size = sizeof alpha};
 *     hetcl_task_submit(rt, &t, NULL);        // returns at once; runs when x and y are ready
 *     ...
 *     hetcl_status s = hetcl_runtime_wait_all(rt);      // first failure since the last wait
 *     hetcl_handle_sync_host(rt, y, HETCL_R);           // y's host copy is now up to date
 *     hetcl_handle_unregister(rt, y);
 *     hetcl_runtime_destroy(rt);
 *
 * Model (StarPU's, lighter):
 *  - A handle is one contiguous byte range with a host copy and at most one copy per memory
 *    node. Memory nodes: node 0 is host memory, shared by the host workers and by every OpenCL
 *    device with CL_DEVICE_HOST_UNIFIED_MEMORY (those use the host copy through
 *    CL_MEM_USE_HOST_PTR buffers: no transfer at all); every other device has its own node.
 *    Each copy is valid or not; a task reading a handle on a node whose copy is invalid first
 *    transfers it from a valid copy; a task writing it invalidates the other copies.
 *  - A task is a codelet (one implementation per worker kind), the handles it accesses with
 *    their modes, an argument blob (copied), a priority and an optional cost hint. Dependencies
 *    are inferred in submission order: read-after-write, write-after-read and write-after-write
 *    on each handle, plus the explicit ones in the desc.
 *  - Workers: one per OpenCL device or sub-device (its own in-order command queue, several
 *    tasks in flight, completion through event callbacks), and host workers running native C
 *    functions, pinned to cores that no OpenCL CPU device uses. Idle workers sleep; nothing
 *    spins.
 *  - A scheduler policy (eager, ws, dmda) chooses the worker of each ready task.
 *
 * Thread-safety: every function may be called from any thread, including from inside a task's
 * implementation (a task may submit tasks; it must not wait for them).
 */
#ifndef HETCL_RUNTIME_H
#define HETCL_RUNTIME_H

#include <CL/cl.h>
#include <hetcl/context.h>
#include <hetcl/device.h>
#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct hetcl_runtime hetcl_runtime;
typedef struct hetcl_handle hetcl_handle;
typedef struct hetcl_task hetcl_task;

/* How a task accesses a handle. */
typedef enum hetcl_access {
    HETCL_R = 1,
    HETCL_W = 2, /* the task overwrites everything: no transfer in, the old contents are lost */
    HETCL_RW = 3,
    /* Read-write without mutual exclusion: tasks in this mode on the same handle may run
     * concurrently (HOGWILD!-style lock-free updates of a shared model). Ordered like RW
     * against R, W and RW tasks. Runs only on workers of memory node 0 (host memory). */
    HETCL_RW_CONCURRENT = 7,
    /* Read in parts: nothing is transferred before the task runs; its host implementation
     * copies the byte ranges it needs with hetcl_host_read_range (a device's result whose
     * useful size another buffer tells, such as a packed replica: only that much crosses
     * the bus). Ordered like R. Host workers only; the task's pointer for it is NULL. */
    HETCL_R_RANGE = 9,
} hetcl_access;

typedef enum hetcl_worker_kind {
    HETCL_WORKER_HOST = 0,   /* native C on a host thread */
    HETCL_WORKER_OPENCL = 1, /* an OpenCL device or sub-device */
} hetcl_worker_kind;

/* "host", "opencl"; static string. */
HETCL_API const char *hetcl_worker_kind_name(hetcl_worker_kind k);

/* What a host implementation receives. Everything is borrowed for the duration of the call. */
struct hetcl_host_call {
    hetcl_runtime *rt;
    int worker;          /* index of the worker running it */
    void *const *ptrs;   /* host pointer of each buffer, in the task's order */
    const size_t *sizes; /* bytes of each buffer */
    const void *args;    /* the task's argument blob (NULL when args_size is 0) */
    size_t args_size;
    hetcl_task *task; /* the task being run (for hetcl_host_read_range) */
};
/* Runs the task to completion. A non-OK status fails the task (see hetcl_task_status). */
typedef hetcl_status (*hetcl_host_fn)(const struct hetcl_host_call *call);

/* What an OpenCL implementation receives. Everything is borrowed for the duration of the call;
 * the cl_mem objects stay valid until the task completes. */
struct hetcl_cl_call {
    hetcl_runtime *rt;
    int worker;
    cl_context context;
    cl_device_id device;
    cl_command_queue queue; /* in-order, profiling enabled; the worker's own */
    const struct hetcl_device_desc *desc;
    const cl_mem *mems;  /* one per buffer, in the task's order */
    const size_t *sizes; /* bytes of each buffer */
    const void *args;
    size_t args_size;
    /* Events the first command must wait for (transfers into this device). */
    cl_uint n_wait;
    const cl_event *wait;
};
/* Enqueues the task's commands on call->queue, non-blocking, and returns in *done an event
 * (owned by the runtime from then on) whose completion means the task's work is finished: the
 * event of its last command. Never blocks on the device. A non-OK status fails the task; it
 * must then not return an event (*done stays NULL), and commands already enqueued are waited
 * for by the runtime. Return HETCL_ERR_NO_DEVICE for a failure of the device itself (an
 * enqueue or allocation answering CL_OUT_OF_RESOURCES or CL_MEM_OBJECT_ALLOCATION_FAILURE):
 * the worker is then excluded and the task runs elsewhere (see keep_failed_devices). */
typedef hetcl_status (*hetcl_cl_fn)(const struct hetcl_cl_call *call, cl_event *done);

/* For OpenCL implementations: the kernel `kernel_name` of the clkernels/ source `source`
 * built with `options` for the calling worker, from a per-worker cache (built through the
 * on-disk program cache on first use). The kernel belongs to the worker: set its arguments and
 * enqueue it from the implementation only. Errors: HETCL_ERR_BUILD (the log is on the
 * context), HETCL_ERR_OPENCL, HETCL_ERR_INVALID_ARG (no such source or kernel). */
HETCL_API HETCL_NODISCARD hetcl_status hetcl_cl_kernel(const struct hetcl_cl_call *call,
                                                       const char *source, const char *options,
                                                       const char *kernel_name, cl_kernel *out);

/* For OpenCL implementations: a scratch buffer of at least `bytes` bytes on the calling
 * worker's device (im2col columns, partial sums, packed GEMM panels), from one of
 * HETCL_CL_SCRATCH_SLOTS slots per
 * worker. A slot's buffer is reused by every later task of the worker that asks for the same
 * slot: safe because a worker's commands run in order on one queue, so a task's commands finish
 * before the next task's start. Contents are undefined on entry. The buffer belongs to the
 * worker (do not release it); it grows when a larger size is asked and is freed at destroy.
 * Errors: HETCL_ERR_INVALID_ARG (slot out of range), HETCL_ERR_NO_DEVICE (allocation failed on
 * the device: like any device allocation failure, the worker may then be excluded). */
#define HETCL_CL_SCRATCH_SLOTS 5
HETCL_API HETCL_NODISCARD hetcl_status hetcl_cl_scratch(const struct hetcl_cl_call *call,
                                                        unsigned slot, size_t bytes, cl_mem *out);

/* For OpenCL implementations: the status to return when the OpenCL call `what` of the task
 * failed with err, the detail ("<op>: <what> on <worker>: <CL error>") on the context. A
 * failure of the device itself (CL_OUT_OF_RESOURCES, CL_MEM_OBJECT_ALLOCATION_FAILURE,
 * CL_DEVICE_NOT_AVAILABLE: drivers that allocate lazily report a full device at the kernel's
 * enqueue) gives HETCL_ERR_NO_DEVICE, recorded as the exclusion's reason and, for an
 * allocation, counted as one (hetcl_runtime_defer_alloc_exclusion applies); anything else
 * HETCL_ERR_OPENCL (always, for a call that no runtime worker made). */
HETCL_API HETCL_NODISCARD hetcl_status hetcl_cl_call_failed(const struct hetcl_cl_call *call,
                                                            const char *op, const char *what,
                                                            cl_int err);

/* For host implementations: copies bytes [offset, offset + bytes) of the running task's buffer
 * `buffer`, which it accesses in mode HETCL_R_RANGE, into dst: from the host copy where that
 * is valid, otherwise a blocking read of just that range from a device copy (counted as a
 * transfer into the host worker's node, of `bytes`). The host copy is left as it was (not
 * made valid). Errors: HETCL_ERR_INVALID_ARG (no such buffer, not in HETCL_R_RANGE, the range
 * past the end), HETCL_ERR_OPENCL (the read failed), HETCL_ERR_TIMEOUT (its contents were
 * lost on a device that stopped responding). */
HETCL_API HETCL_NODISCARD hetcl_status hetcl_host_read_range(const struct hetcl_host_call *call,
                                                             unsigned buffer, size_t offset,
                                                             size_t bytes, void *dst);

/* A codelet: what a kind of task does, with one implementation per worker kind (NULL: cannot
 * run there). Codelets are usually static const; the runtime keeps the pointer, so the codelet
 * must outlive every task that uses it. */
struct hetcl_codelet {
    const char *name; /* names performance models and trace slices: "gemm_f32_nn" */
    hetcl_host_fn host;
    hetcl_cl_fn opencl;
    /* Optional: floating-point operations of one task from its args (for GFLOP/s in reports). */
    double (*flops)(const void *args, size_t args_size);
};

#define HETCL_TASK_MAX_BUFFERS 16
#define HETCL_TASK_MAX_DEPS    16

/* A task to submit. Zero means default for every optional field. */
struct hetcl_task_desc {
    const struct hetcl_codelet *codelet;
    unsigned n_buffers;
    hetcl_handle *handles[HETCL_TASK_MAX_BUFFERS];
    hetcl_access modes[HETCL_TASK_MAX_BUFFERS];
    const void *args; /* copied at submission */
    size_t args_size;
    int priority; /* higher runs first among ready tasks (eager, ws, dmda all honour it) */
    /* Performance-model footprint: tasks with the same codelet and footprint are expected to
     * take the same time. 0: a hash of the buffer sizes. */
    uint32_t footprint;
    /* Optional expected duration on any device, used by dmda until a model is calibrated;
     * 0: none. */
    uint64_t cost_hint_ns;
    /* Explicit dependencies (borrowed: the caller keeps its references). */
    unsigned n_deps;
    hetcl_task *deps[HETCL_TASK_MAX_DEPS];
    /* Run only on this worker (index), or -1 for any. 0 is a valid index: set -1 explicitly or
     * use restrict_kind. */
    int worker;
    bool pin_worker; /* must be true for `worker` to be honoured (so that 0 means "any") */
    /* Run only on workers of this kind; ignored unless restrict_kind is true. */
    bool restrict_kind;
    hetcl_worker_kind kind;
    /* A label for traces ("layer2.fwd"); copied; NULL: the codelet's name. */
    const char *label;
};

/* Submits a task. It runs once its dependencies have completed successfully; if one failed, it
 * is not run and its status is HETCL_ERR_CANCELLED (so is a task submitted later that depends on
 * a failed one, until hetcl_runtime_wait_all reports the failure). A task that fails or is
 * cancelled leaves the contents of the handles it writes undefined. out (optional): a reference to
 * the task for hetcl_task_wait/status, which the caller releases with hetcl_task_release. Errors
 * (the task is then not submitted): HETCL_ERR_INVALID_ARG (NULL codelet, too many buffers, a handle
 * of another runtime, a handle twice, no worker able to run it: the detail says which),
 * HETCL_ERR_NO_MEMORY. */
HETCL_API HETCL_NODISCARD hetcl_status hetcl_task_submit(hetcl_runtime *rt,
                                                         const struct hetcl_task_desc *desc,
                                                         hetcl_task **out);
/* Waits until the task has completed, failed or been cancelled; returns its status. Must not be
 * called from inside a task implementation. */
HETCL_API hetcl_status hetcl_task_wait(hetcl_task *t);
/* The task's status: HETCL_OK once it completed (HETCL_ERR_BUSY while pending or running). */
HETCL_API hetcl_status hetcl_task_status(const hetcl_task *t);
/* The worker that ran it, or -1 if it has not run. */
HETCL_API int hetcl_task_worker(const hetcl_task *t);
/* When a task went through each stage of its life, host ns on CLOCK_MONOTONIC; 0 = not known.
 * Device times are OpenCL event profiling times moved onto the host clock through the worker's
 * estimated clock offset (an upper bound of the offset, so they never read earlier than they
 * happened on the host's clock). */
struct hetcl_task_times {
    uint64_t submitted;    /* hetcl_task_submit */
    uint64_t ready;        /* its dependencies were done: given to the scheduler */
    uint64_t started;      /* a worker took it (host: its input data were in place) */
    uint64_t enqueued;     /* OpenCL: its commands were enqueued; 0 for host tasks */
    uint64_t device_start; /* OpenCL: its first command could start; 0 for host tasks */
    uint64_t device_end;   /* OpenCL: its last command ended; 0 for host tasks */
    uint64_t ended;        /* the runtime saw it finish */
};
/* Fills *out with t's times once t is done (completed, failed or cancelled: a cancelled task
 * has only submitted and ended). HETCL_ERR_BUSY (and *out zeroed) while it is pending or
 * running; HETCL_ERR_INVALID_ARG for NULL arguments. */
HETCL_API HETCL_NODISCARD hetcl_status hetcl_task_times(const hetcl_task *t,
                                                        struct hetcl_task_times *out);
/* Drops the caller's reference; NULL is a no-op. */
HETCL_API void hetcl_task_release(hetcl_task *t);

/* Registers a handle of `bytes` bytes. host_ptr: the host copy, borrowed (it must stay valid
 * until unregister, and must not be accessed while tasks on the handle are pending except
 * through hetcl_handle_sync_host); NULL: the runtime allocates one, zeroed, 64-byte aligned.
 * The host copy starts valid. */
HETCL_API HETCL_NODISCARD hetcl_status hetcl_handle_register(hetcl_runtime *rt, void *host_ptr,
                                                             size_t bytes, hetcl_handle **out);
/* Waits for every submitted task that accesses h (all of them for HETCL_W or HETCL_RW, the
 * writers for HETCL_R), then makes the host copy valid. With HETCL_W or HETCL_RW the device
 * copies are invalidated (the caller may modify the host copy until it submits the next task
 * on h). Returns the first failure of those tasks, or a transfer failure. */
HETCL_API HETCL_NODISCARD hetcl_status hetcl_handle_sync_host(hetcl_runtime *rt, hetcl_handle *h,
                                                              hetcl_access mode);
/* The host copy (valid only after hetcl_handle_sync_host). */
HETCL_API void *hetcl_handle_host_ptr(const hetcl_handle *h);
HETCL_API size_t hetcl_handle_size(const hetcl_handle *h);
/* Waits for the tasks on h, brings the host copy up to date, frees the device copies and the
 * handle (and the host copy if the runtime allocated it). NULL is a no-op. */
HETCL_API hetcl_status hetcl_handle_unregister(hetcl_runtime *rt, hetcl_handle *h);

/* Options for hetcl_runtime_create(); zero means default for every field. */
struct hetcl_runtime_options {
    /* "eager" (default), "ws" or "dmda". */
    const char *scheduler;
    /* Which devices get workers: "all" (default: every OpenCL device plus host workers), "host"
     * (host workers only), "opencl" (OpenCL devices only), or a comma-separated list of device
     * ids ("p0d0.1"), "host" and "opencl" ("opencl,host" is "all"). */
    const char *devices;
    /* CPU sub-device split for OpenCL CPU devices, as `hetcl devices --split-cpu` ("2", "1,1",
     * "kinds"); NULL: none. The sub-devices replace their root device. */
    const char *split_cpu;
    /* Host workers: 0 = automatic (one per core that no OpenCL CPU device uses; when every core
     * is used, one unpinned worker); a positive number = that many; -1 = none. */
    int host_workers;
    /* Tasks in flight per OpenCL worker, fixed; 0 (default): adaptive, from 8 within 2 to 256,
     * deeper while the device runs its queue dry before the worker refills it, shallower while
     * another worker able to run the tasks sits idle. Tasks enqueued right behind their
     * predecessors on the same in-order queue (a dependency chain on one device) may take the
     * queue up to four times a fixed depth (256 when adaptive). */
    unsigned cl_inflight;
    /* Treat host-unified OpenCL devices as having their own memory node: every access then
     * transfers. For tests of the transfer paths on CPU-only machines. */
    bool no_zero_copy;
    /* Record a trace of every task and transfer (for hetcl_runtime_write_trace). */
    bool trace;
    /* Where performance models are read and written: NULL = <cache_dir>/perfmodels; "" = kept
     * in memory only. */
    const char *perfmodel_dir;
    /* Samples per (codelet, worker, footprint) before dmda trusts a model (default 5). */
    unsigned calibrate_min;
    /* Exclude an OpenCL worker after a device failure (allocation failure, lost device) and run
     * its pending tasks elsewhere (default true; set keep_failed_devices to disable). */
    bool keep_failed_devices;
    /* Spin before sleeping, in microseconds (default 0: sleep at once). A host worker that runs
     * out of work polls its scheduler for this long before it sleeps, and a thread in
     * hetcl_task_wait (or hetcl_handle_sync_host) polls the task before it sleeps. Waking a
     * sleeping thread costs 2 us on a busy CPU but 20-35 us on an idle one (measured on a VM:
     * the CPU has to leave its idle state), which dominates batch-1 inference latency; a
     * short spin trades CPU time for that latency. Bounded, so idle workers still sleep. */
    unsigned spin_us;
    /* Devices already enumerated (borrowed; must outlive the runtime); NULL: enumerate here.
     * Creating runtimes one after the other in a process? Enumerate once and pass the list:
     * an enumeration after a runtime opened devices cannot check that they open (see
     * hetcl_device_enumerate), and a hanging driver costs its time limit each time. */
    const struct hetcl_device_list *device_list;
    /* The enumeration's time limit for each isolated driver query, in milliseconds, when the
     * runtime enumerates (hetcl_enum_options.timeout_ms; 0: its default, 20000). */
    unsigned enum_timeout_ms;
    /* A device that makes no progress for this long, in milliseconds, with tasks queued (no
     * task completes) counts as hung: its worker is excluded (the reason says so), its tasks in
     * flight fail with HETCL_ERR_TIMEOUT (their successors are cancelled; the data they were
     * writing is lost: reading it fails with HETCL_ERR_NO_DEVICE naming the device) and it gets
     * no more work. A completion that comes later is ignored. 0: HETCL_DEVICE_TIMEOUT_DEFAULT_MS;
     * HETCL_DEVICE_TIMEOUT_NEVER: never. */
    unsigned device_timeout_ms;
};
#define HETCL_DEVICE_TIMEOUT_DEFAULT_MS 60000u
#define HETCL_DEVICE_TIMEOUT_NEVER      UINT_MAX

/* Creates a runtime: enumerates devices (isolated, then opened in this process), creates one
 * worker per selected device and the host workers, loads performance models and link figures
 * (from `hetcl devices --probe`'s cache when present). Devices the enumeration found broken
 * (hetcl_device_list.broken, and the devices of broken platforms) are left out: "all" and
 * "opencl" take the working ones, and naming a broken one is an error that says why it is
 * broken (hetcl_runtime_device_list has them, for a warning). Errors: HETCL_ERR_INVALID_ARG
 * (unknown scheduler or device id: the detail lists the valid ones), HETCL_ERR_NO_DEVICE
 * (nothing to run on), HETCL_ERR_OPENCL, HETCL_ERR_NO_MEMORY. */
HETCL_API HETCL_NODISCARD hetcl_status hetcl_runtime_create(
        hetcl_context *ctx, const struct hetcl_runtime_options *opts, hetcl_runtime **out);
/* Waits for every task, saves performance models, stops the workers and frees everything,
 * including handles still registered (their host copies are brought up to date first).
 * NULL is a no-op. */
HETCL_API void hetcl_runtime_destroy(hetcl_runtime *rt);
/* Waits until every submitted task has completed, failed or been cancelled. Returns the first
 * failure status since the previous call (HETCL_OK if none). Not from inside a task. */
HETCL_API hetcl_status hetcl_runtime_wait_all(hetcl_runtime *rt);
HETCL_API hetcl_context *hetcl_runtime_context(const hetcl_runtime *rt);
/* The device list the runtime was created from: the one it enumerated, or options.device_list;
 * NULL when it enumerated none (host workers only). Its broken platforms and devices are those
 * left out. Borrowed: valid until the runtime is destroyed (or, when it was given, as long as
 * the caller keeps it). */
HETCL_API const struct hetcl_device_list *hetcl_runtime_device_list(const hetcl_runtime *rt);
HETCL_API const char *hetcl_runtime_scheduler(const hetcl_runtime *rt);

/* One worker, as plain data. */
struct hetcl_worker_info {
    int index;
    hetcl_worker_kind kind;
    char name[64];                 /* "host0", "p0d0.1" */
    int memory_node;               /* 0: host memory */
    char cpuset[HETCL_CPUSET_MAX]; /* PUs it runs on ("" unknown); for host workers, pinned PUs */
    bool pinned;
    bool excluded; /* removed after a device failure */
    char excluded_reason[HETCL_STR_MAX];
    const struct hetcl_device_desc *desc; /* NULL for host workers; borrowed from the runtime */
    /* Performance models are shared by workers with the same key (same device model, compute
     * units and driver; or "host:<CPU model>"). */
    char model_key[HETCL_STR_MAX];
    /* Counters since creation. */
    uint64_t tasks_done;
    uint64_t busy_ns;  /* sum of task execution times */
    uint64_t bytes_in; /* transferred into its memory node for its tasks */
    uint64_t transfers_in;
    /* Device allocations refused for its tasks (injected ones included), whether or not they
     * excluded it (see hetcl_runtime_defer_alloc_exclusion). */
    uint64_t alloc_failures;
};
HETCL_API size_t hetcl_runtime_n_workers(const hetcl_runtime *rt);
/* Fills *out for worker i; HETCL_ERR_INVALID_ARG if out of range. */
HETCL_API HETCL_NODISCARD hetcl_status hetcl_runtime_worker_info(const hetcl_runtime *rt, size_t i,
                                                                 struct hetcl_worker_info *out);

/* Fault injection, for tests: make worker i's next `count` device allocations fail as if the
 * device were out of memory (OpenCL workers only; counted per task: the data acquisition of
 * each of its next `count` tasks with buffers fails, whether or not it would have allocated, so
 * that tests are deterministic), or its next `count` tasks fail with HETCL_ERR_OPENCL.
 * Mid-run device failures (OpenCL workers only; count is N, 0 turns it off; counted from the
 * call): every N-th enqueue of a task fails as an enqueue answering CL_OUT_OF_RESOURCES would (a
 * device failure: the worker is excluded and the task runs elsewhere, unless keep_failed_devices),
 * or the N-th completion event the worker processes reports CL_OUT_OF_RESOURCES as its status (the
 * task fails and the worker is excluded alike). The environment variable HETCL_INJECT_FAULTS sets
 * the last two for a whole command when a runtime is created: WORKER:enqueue-every=N or
 * WORKER:complete=N (and WORKER:hang=N: HETCL_FAULT_HANG), comma-separated, WORKER a worker's
 * name or "opencl" (README.md). */
typedef enum hetcl_fault {
    HETCL_FAULT_ALLOC = 0,
    HETCL_FAULT_TASK = 1,
    HETCL_FAULT_ENQUEUE_EVERY = 2,
    HETCL_FAULT_COMPLETION = 3,
    /* The count-th task enqueued from now never completes as far as the worker can tell (its
     * commands run; the worker ignores their completion, and so that of the tasks queued behind
     * it): the device looks hung, for tests of device_timeout_ms. OpenCL workers only. */
    HETCL_FAULT_HANG = 4,
} hetcl_fault;
HETCL_API HETCL_NODISCARD hetcl_status hetcl_runtime_inject_fault(hetcl_runtime *rt, size_t worker,
                                                                  hetcl_fault fault,
                                                                  unsigned count);

/* Leaves to the caller the decision on worker i's next `count` device allocation failures: an
 * allocation refused while its buffers are acquired for a task (injected ones included:
 * HETCL_FAULT_ALLOC), or a completion event that reports CL_MEM_OBJECT_ALLOCATION_FAILURE. The
 * task then fails with HETCL_ERR_NO_DEVICE (its successors are cancelled) and the worker is
 * not excluded; each is counted in hetcl_worker_info.alloc_failures, so that the caller can
 * tell it from other failures and retry with smaller buffers. Later failures exclude the
 * worker as usual (unless keep_failed_devices). OpenCL workers only (HETCL_ERR_INVALID_ARG);
 * count 0 turns it off. Any thread. */
HETCL_API HETCL_NODISCARD hetcl_status hetcl_runtime_defer_alloc_exclusion(hetcl_runtime *rt,
                                                                           size_t worker,
                                                                           unsigned count);

/* Writes the recorded trace (options.trace) as Chrome Trace Event JSON, atomically: one track
 * per worker queue, a slice per task and transfer, flow arrows for dependencies and transfers.
 * Opens in Perfetto (ui.perfetto.dev) and chrome://tracing. HETCL_ERR_INVALID_ARG when tracing
 * was off; HETCL_ERR_IO. Call after hetcl_runtime_wait_all. */
HETCL_API HETCL_NODISCARD hetcl_status hetcl_runtime_write_trace(hetcl_runtime *rt,
                                                                 const char *path);

/* Per codelet and worker: tasks run, measured mean and median time, and the mean time dmda
 * predicted for them (0 when uncalibrated), for reports. */
struct hetcl_kind_stats {
    char codelet[64];
    int worker;
    uint32_t footprint;
    uint64_t n_tasks;
    double measured_mean_ns;
    double measured_median_ns;
    double predicted_mean_ns; /* mean of dmda's predictions for these tasks; 0: none made */
    uint64_t n_predicted;
};
/* Copies up to cap entries into out and sets *n to the number available. */
HETCL_API void hetcl_runtime_kind_stats(const hetcl_runtime *rt, struct hetcl_kind_stats *out,
                                        size_t cap, size_t *n);

#ifdef __cplusplus
}
#endif

#endif /* HETCL_RUNTIME_H */
