/*
 * The task-graph runtime's internal structures, shared by its modules. Internal.
 *
 * Modules (one job each):
 *   rt_create.c    runtime create/destroy: devices opened in-process, contexts, workers
 *   rt_task.c      submission, dependency inference, completion, waiting
 *   rt_task_pool.c recycled task structures
 *   rt_worker.c    worker threads: host loop, OpenCL loop (in-flight tasks, event callbacks)
 *   rt_data.c      handles, memory nodes, coherence and transfers
 *   rt_kernels.c   the per-worker kernel cache behind hetcl_cl_kernel, and hetcl_cl_scratch
 *   rt_info.c      read-only accessors (worker info, scheduler name, context)
 *   sched.c        policy registry; sched_eager.c, sched_ws.c, sched_dmda.c the policies
 *   perfmodel.c    online performance models (median, outlier rejection), persisted as JSON
 *   rt_trace.c     trace records and the Chrome Trace Event writer
 *
 * Locks (always taken in this order, never two of the same level):
 *   1. rt->graph_lock  dependency bookkeeping: handle->last_writer/readers, task->successors,
 *                      rt->n_pending, rt->first_error
 *   2. handle->lock    a handle's copies (validity, cl_mem, ready events)
 *   3. policy locks    inside the scheduler policies (never held while calling out of them,
 *                      except rt_wake_worker, which takes only worker->lock)
 *   4. worker->lock    a worker's mailbox and sleep state
 *   5. perfmodel/trace locks, rt->pool_lock (leaves)
 */
#ifndef HETCL_RT_IMPL_H
#define HETCL_RT_IMPL_H

#include "rt/rt_depth.h"
#include <hetcl_internal/base.h>

#include <hetcl/runtime.h>
#include <hetcl/topology.h>

#include <pthread.h>
#include <stdatomic.h>

#define RT_MAX_WORKERS   128
#define RT_MAX_NODES     32 /* memory nodes: 0 = host */
#define RT_MAX_PLATFORMS 16
#define RT_ARGS_INLINE   64   /* argument blobs up to this size live inside the task */
#define RT_TASK_POOL_MAX 4096 /* recycled task structures kept (rt_task_pool.c) */

struct rt_sched_policy;
struct rt_perfmodel;
struct rt_trace;
struct rt_kernel_cache;

/* ---------------------------------------------------------------- tasks */

typedef enum rt_task_state {
    RT_TASK_SUBMITTED = 0, /* waiting for dependencies */
    RT_TASK_READY = 1,     /* given to the scheduler */
    RT_TASK_RUNNING = 2,   /* popped by a worker */
    RT_TASK_DONE = 3,      /* completed, failed or cancelled: status says which */
} rt_task_state;

struct rt_task {
    struct hetcl_runtime *rt;
    uint64_t id;     /* submission sequence number, from 1 */
    atomic_int refs; /* the runtime's reference (until done) + the caller's (until release) */

    /* The description, copied at submission. */
    const struct hetcl_codelet *codelet;
    unsigned n_buffers;
    struct rt_handle *handles[HETCL_TASK_MAX_BUFFERS];
    hetcl_access modes[HETCL_TASK_MAX_BUFFERS];
    void *args; /* points at args_inline or a heap copy */
    size_t args_size;
    unsigned char args_inline[RT_ARGS_INLINE];
    int priority;
    uint32_t footprint;
    uint64_t cost_hint_ns;
    int pinned_worker; /* -1: any */
    int restrict_kind; /* -1: any, else a hetcl_worker_kind */
    char label[48];

    /* Dependencies (graph_lock). */
    atomic_int n_unfinished_deps; /* + 1 while submission is in progress */
    bool cancel; /* a predecessor failed: the task will not run (HETCL_ERR_CANCELLED) */
    struct rt_task **successors;
    size_t n_successors, cap_successors;
    uint64_t dep_ids[HETCL_TASK_MAX_DEPS * 2]; /* first predecessors, for trace flow arrows */
    unsigned n_dep_ids;

    /* Lifecycle. state and status are written by the completing thread under graph_lock and
     * read with acquire semantics by waiters. */
    _Atomic rt_task_state state;
    hetcl_status status;
    int worker; /* the worker that ran it, -1 before */

    /* Scheduler scratch: the policy owns these while the task is READY. */
    struct rt_task *sched_next;
    int sched_worker;    /* the worker dmda/ws queued it for, -1 none */
    double predicted_ns; /* dmda's predicted execution time, 0 when none */

    /* Early chaining (graph_lock): a task whose unfinished predecessors are all enqueued on one
     * OpenCL worker's in-order queue may be enqueued right behind them (rt_worker.c). */
    int enq_worker;   /* the OpenCL worker whose queue holds it, -1 none */
    int chain_worker; /* the one worker that holds its enqueued predecessors; -1 none, -2 several */
    int n_chained;    /* unfinished predecessors enqueued on chain_worker */
    bool chained;     /* claimed by early chaining: never pushed to the policy */

    /* OpenCL execution (worker-owned while RUNNING). */
    cl_event done_event;
    bool cl_complete;  /* its completion callback came (worker thread only) */
    bool cl_armed;     /* a completion callback was set on done_event (worker thread only) */
    bool enq_unmarked; /* enqueued; recorded as such at the batch's flush (worker thread) */
    bool fault_hung;   /* injected: the worker never sees it complete (rt_fault.c) */
    unsigned n_transfers;
    struct rt_task *mail_next; /* completion mailbox link */
    /* Recycling (rt_task_pool.c): whether the structure returns to the runtime's pool when
     * its last reference drops (no caller's reference was given), and the pool's link. */
    bool recyclable;
    struct rt_task *pool_next;

    /* Times, host monotonic ns (hetcl__now_ns). Device times are converted to host time. */
    uint64_t t_submit_ns, t_ready_ns, t_start_ns, t_enqueued_ns, t_dev_start_ns, t_dev_end_ns,
            t_end_ns;
};

/* ---------------------------------------------------------------- data */

/* One copy of a handle on one memory node. */
struct rt_copy {
    bool valid;
    cl_mem mem;           /* the device buffer (nodes > 0); NULL until allocated */
    cl_event ready;       /* completes when the copy's contents are in place; NULL: already */
    cl_context ready_ctx; /* the context `ready` belongs to */
};

struct rt_handle {
    struct hetcl_runtime *rt;
    uint64_t id;
    size_t bytes;
    void *host_ptr;
    bool host_owned; /* allocated by the runtime */
    void *host_base; /* the allocation host_ptr was aligned within (host_owned) */
    struct rt_handle *reg_prev, *reg_next; /* rt->handles, under graph_lock */
    pthread_mutex_t lock;
    struct rt_copy copies[RT_MAX_NODES]; /* copies[0] is the host copy */
    /* CL_MEM_USE_HOST_PTR buffers over host_ptr, one per OpenCL platform context, used by
     * host-unified devices (node 0). */
    cl_mem host_mems[RT_MAX_PLATFORMS];
    /* The platform whose node-0 device wrote it last through host_mems and has not been
     * synchronised with the host (map/unmap) since; -1 none. */
    int host_dirty_platform;
    /* Platforms (bit p) whose host_mems[p] has not seen the host's latest writes: a driver
     * may keep its own copy of a CL_MEM_USE_HOST_PTR buffer (PoCL does when the pointer is
     * less aligned than it wants), refreshed only by map/unmap. */
    unsigned host_mems_stale;
    /* A task that wrote it was abandoned on a hung device (rt_hang.c): its contents are lost
     * until a task writes it whole; lost_on names the device. Under lock. */
    bool lost;
    char lost_on[64];

    /* Dependency tracking (graph_lock). */
    struct rt_task *last_writer; /* a reference is held while set */
    struct rt_task **readers;    /* readers since last_writer, references held */
    size_t n_readers, cap_readers;
    struct rt_task **concurrent; /* RW_CONCURRENT tasks since last_writer */
    size_t n_concurrent, cap_concurrent;
    /* The readers that the current group of RW_CONCURRENT tasks follows: every member of the
     * group depends on them (the members do not depend on each other). */
    struct rt_task **conc_preds;
    size_t n_conc_preds, cap_conc_preds;
};

/* ---------------------------------------------------------------- workers */

struct rt_worker {
    struct hetcl_runtime *rt;
    int index;
    hetcl_worker_kind kind;
    char name[64];
    int node;                      /* memory node */
    char model_key[HETCL_STR_MAX]; /* performance-model key: device name, CUs, driver */
    struct hetcl_device_desc desc; /* zeroed for host workers */
    int platform;                  /* index into rt->platforms; -1 for host */
    cl_context clctx;              /* borrowed from rt->platforms */
    cl_device_id device;           /* owned reference (sub-devices are released) */
    cl_command_queue queue;
    struct rt_kernel_cache *kernels;
    /* hetcl_cl_scratch's buffers (worker thread only) and their sizes. */
    cl_mem scratch[HETCL_CL_SCRATCH_SLOTS];
    size_t scratch_bytes[HETCL_CL_SCRATCH_SLOTS];

    pthread_t thread;
    bool thread_started;
    char cpuset[HETCL_CPUSET_MAX];
    bool pinned;

    /* Sleep and mailbox (lock). */
    pthread_mutex_t lock;
    pthread_cond_t cond;
    bool wake; /* a wake-up is pending */
    bool stop;
    struct rt_task *mail_head, *mail_tail; /* OpenCL tasks whose done_event completed */
    atomic_bool idle;  /* set before the worker's last pop attempt before sleeping */
    unsigned inflight; /* OpenCL tasks enqueued and not yet completed (worker thread only) */
    /* In enqueue order, chain_cap() of them (rt_worker.c; worker thread only). */
    struct rt_task **inflight_tasks;
    /* Whether a task may be chainable behind this worker's queue (rt_worker.c, claim_chainable):
     * set under graph_lock by whatever can make one so, cleared under graph_lock by a search that
     * found none; read without the lock, so that independent work skips the search. */
    atomic_bool chain_hint;
    /* Set by an OpenCL worker from just before its last look at chain_hint until it wakes from
     * sleep: a submitter that made a task chainable here wakes it only then (rt_task.c). */
    atomic_bool sleepy;
    /* Host clock minus device clock, estimated from completion callbacks (worker thread). */
    int64_t dev_offset_ns;
    bool have_dev_offset;
    /* Device end time of the last task completed on the queue (worker thread): the in-order
     * queue starts the next task's first command after it. */
    uint64_t last_dev_end;
    bool have_last_dev_end;
    /* The same end on the host clock (0 before the first): device_times() keeps the tasks'
     * device intervals in queue order on the host clock although the offset estimate shrinks
     * as better completions are seen. */
    uint64_t last_dev_end_host;
    /* Adaptive in-flight depth and completion polling (rt_depth.h; worker thread only):
     * callbacks set and not yet read from the mailbox (the worker may not exit before they
     * all came: they touch its lock), and the period of the timed wake-ups that poll the
     * queue's events while tasks are in flight. */
    struct rt_depth depth;
    unsigned cb_pending;
    uint64_t poll_ns;

    /* Detail of the last device failure in rt_data.c or hetcl_cl_scratch (worker thread). */
    char fail_detail[HETCL_STR_MAX];
    atomic_bool excluded;
    char excluded_reason[HETCL_STR_MAX];
    /* The last device failure in rt_data.c was an allocation refused (worker thread). */
    bool fail_alloc;
    /* Allocation failures left that fail their task without excluding the worker
     * (hetcl_runtime_defer_alloc_exclusion), and those seen so far. */
    atomic_uint alloc_defer;
    atomic_uint_fast64_t alloc_failures;
    atomic_uint fault_alloc; /* injected faults left */
    atomic_uint fault_task;
    /* Injected mid-run failures (rt_fault.c): every N-th enqueue (0: none) and the enqueues
     * since the injection; the completions left until the one that fails (0: none). */
    atomic_uint fault_enqueue_every, n_enqueues, fault_complete_left;
    /* Injected hang (rt_fault.c): the enqueues left until the one that never completes (0:
     * none); whether such a task is in flight (worker thread). */
    atomic_uint fault_hang_left;
    bool hang_in_flight;
    /* Hang detection (rt_hang.c; worker thread): when the queue last made progress (a
     * completion, or work arriving on an empty queue); whether the worker gave its device up as
     * hung, and whether the hang was a real one (not injected): its queue is then never
     * released, nor the worker freed, since releasing may wait for the hung commands and a
     * completion that comes after all must land on live memory. */
    uint64_t progress_ns;
    bool hung, hung_real;

    /* Counters. */
    atomic_uint_fast64_t tasks_done, busy_ns, bytes_in, transfers_in;

    /* Policy scratch, owned by the scheduler. */
    void *sched_data;
};

/* ---------------------------------------------------------------- the runtime */

struct rt_platform {
    cl_platform_id id;
    cl_context clctx; /* all selected devices of the platform */
    /* A queue on the platform's first selected device, for the blocking transfers and
     * map/unmap synchronisations done on behalf of host threads (thread-safe per OpenCL). */
    cl_command_queue aux_queue;
};

struct hetcl_runtime {
    hetcl_context *ctx;
    struct hetcl_runtime_options opts; /* strings not kept: see below */
    char scheduler_name[32];
    hetcl_topology *topo;
    struct hetcl_device_list *own_list; /* when enumerated here */
    uint64_t t0_ns;                     /* creation time: trace origin */

    struct rt_platform platforms[RT_MAX_PLATFORMS];
    size_t n_platforms;
    struct rt_worker *workers[RT_MAX_WORKERS];
    size_t n_workers;
    int n_nodes;
    int node_platform[RT_MAX_NODES]; /* the platform whose context holds a node's copies; -1 */
    /* Link figures per memory node (to and from host), from probe ceilings or defaults. */
    double node_h2d_gbs[RT_MAX_NODES], node_d2h_gbs[RT_MAX_NODES];
    double node_latency_ns[RT_MAX_NODES];

    const struct rt_sched_policy *policy;
    void *sched_state;
    struct rt_perfmodel *perf;
    struct rt_trace *trace; /* NULL when tracing is off */

    pthread_mutex_t graph_lock;
    pthread_cond_t done_cond; /* broadcast when a task finishes */
    uint64_t next_task_id;
    uint64_t next_handle_id;
    size_t n_pending;          /* submitted, not yet done */
    size_t n_waiters;          /* threads sleeping on done_cond (no broadcast when none) */
    size_t n_task_waiters;     /* those waiting for one task (OpenCL workers then notify early) */
    struct rt_handle *handles; /* registered handles, freed at destroy if still there */
    hetcl_status first_error;  /* since the last wait_all */
    unsigned calibrate_min;
    unsigned cl_inflight;
    uint64_t spin_ns;           /* options.spin_us, in ns */
    uint64_t device_timeout_ns; /* options.device_timeout_ms, resolved; UINT64_MAX: never */
    int n_pus; /* processing units the runtime may use (hwloc's allowed cpuset); 0 when
                  no host workers were made */

    /* Recycled tasks (rt_task_pool.c): pushed by the threads that free them, taken by
     * submitters a whole stack at a time into pool_taken (pool_lock). */
    _Atomic(struct rt_task *) pool_shared;
    atomic_uint pool_n;
    pthread_mutex_t pool_lock;
    struct rt_task *pool_taken;
};

/* ---------------------------------------------------------------- cross-module calls */

/* Injected mid-run failures (rt_fault.c), from the worker's own thread: whether this enqueue
 * fails as a device failure, whether this completion reports an error. */
bool hetcl__rt_fault_enqueue(struct rt_worker *w);
bool hetcl__rt_fault_complete(struct rt_worker *w);
/* Whether the task being enqueued is the injected hang (HETCL_FAULT_HANG). */
bool hetcl__rt_fault_hang(struct rt_worker *w);
/* Hang detection (rt_hang.c, worker thread): whether w's device made no progress for the
 * device timeout with tasks in flight; and giving it up: w excluded, every task in flight
 * failed with HETCL_ERR_TIMEOUT, the data they were writing marked lost. */
bool hetcl__rt_hang_detected(const struct rt_worker *w, uint64_t now_ns);
void hetcl__rt_hang_abandon(struct rt_worker *w, uint64_t now_ns);
/* Applies HETCL_INJECT_FAULTS to the workers (rt_create.c, before they start). */
hetcl_status hetcl__rt_faults_from_env(struct hetcl_runtime *rt);

/* Can worker w run task t: an implementation for its kind, not excluded, pinning and kind
 * restrictions, every buffer within the device's max allocation, RW_CONCURRENT only on node 0.
 * (rt_task.c) */
bool hetcl__rt_can_run(const struct rt_worker *w, const struct rt_task *t);

/* Wakes worker w (sets its wake flag and signals it). Takes w->lock only. (rt_worker.c) */
void hetcl__rt_wake(struct rt_worker *w);
/* Wakes one idle worker able to run t, if any (eager-style policies). (rt_worker.c) */
void hetcl__rt_wake_idle_for(struct hetcl_runtime *rt, const struct rt_task *t);
/* Worker threads (rt_worker.c): start, stop (join; waits for the tasks in flight), and
 * exclusion after a device failure (from the worker's own thread: the policy's excluded hook
 * then re-places what was queued for it). */
hetcl_status hetcl__rt_worker_start(struct rt_worker *w);
void hetcl__rt_worker_stop(struct rt_worker *w);
void hetcl__rt_worker_exclude(struct rt_worker *w, const char *reason);
/* Is there a worker, not excluded, able to run t. (rt_task.c) */
bool hetcl__rt_any_can_run(const struct hetcl_runtime *rt, const struct rt_task *t);
/* Fails a READY task that no worker can run any more (every capable worker was excluded)
 * with HETCL_ERR_NO_DEVICE. For policies: call it without holding the policy lock, on a task
 * the policy has removed from its queues. (rt_task.c) */
void hetcl__rt_task_fail_unrunnable(struct hetcl_runtime *rt, struct rt_task *t);

/* Called by the worker that finished t (status set in t->status), after data validity was
 * updated: releases successors, records the perf sample and trace, wakes waiters. (rt_task.c) */
void hetcl__rt_task_finished(struct rt_worker *w, struct rt_task *t);
/* The same for n tasks that w finished together, in that order, under one hold of graph_lock
 * (an OpenCL worker's completed prefix of its queue). */
void hetcl__rt_tasks_finished(struct rt_worker *w, struct rt_task **ts, unsigned n);
void hetcl__rt_task_unref(struct rt_task *t);
/* Task structures (rt_task_pool.c): a zeroed one, recycled when `recyclable` (no caller's
 * reference will be given) and the pool has one; NULL when out of memory. recycle: frees t
 * (args and event already released), into the pool when it may. pool_init/destroy: at runtime
 * create (before any task) and destroy (after the workers stopped). */
struct rt_task *hetcl__rt_task_alloc(struct hetcl_runtime *rt, bool recyclable);
void hetcl__rt_task_recycle(struct rt_task *t);
void hetcl__rt_task_pool_init(struct hetcl_runtime *rt);
void hetcl__rt_task_pool_destroy(struct hetcl_runtime *rt);
/* The tasks tracked on h that a host access must wait for: the last writer and the
 * RW_CONCURRENT tasks, plus the readers unless writers_only. References are taken; the caller
 * releases them and frees *out (hetcl__free). Returns how many. (rt_task.c) */
size_t hetcl__rt_handle_tasks(struct hetcl_runtime *rt, struct rt_handle *h, bool writers_only,
                              struct rt_task ***out);
/* Forgets h's tracked tasks if they are all done (after a writing sync_host). (rt_task.c) */
void hetcl__rt_handle_forget_done(struct hetcl_runtime *rt, struct rt_handle *h);
/* Forgets h's tracked tasks and frees the tracking lists (unregister, destroy). (rt_task.c) */
void hetcl__rt_handle_tracking_free(struct hetcl_runtime *rt, struct rt_handle *h);

/* Data (rt_data.c). */
/* Bytes of t's inputs that are not valid on `node` (what a run there would transfer). */
size_t hetcl__rt_data_missing_bytes(const struct hetcl_runtime *rt, const struct rt_task *t,
                                    int node);
/* Predicted time to bring t's missing inputs to `node`, from the link figures. */
double hetcl__rt_data_transfer_estimate_ns(const struct hetcl_runtime *rt, const struct rt_task *t,
                                           int node);
/* Before running t on OpenCL worker w: allocates w's copies and enqueues the transfers for
 * every read buffer that is invalid on w->node. Fills mems[] and adds the events the task must
 * wait for to wait[] (*n_wait in/out, capacity HETCL_TASK_MAX_BUFFERS * 2). Blocking only when
 * a source copy lives in another OpenCL context. HETCL_ERR_NO_MEMORY-class failures of the
 * device are returned as HETCL_ERR_NO_DEVICE with the detail (so that the worker can be
 * excluded). */
hetcl_status hetcl__rt_data_acquire_cl(struct rt_worker *w, struct rt_task *t, cl_mem *mems,
                                       cl_event *wait, cl_uint *n_wait);
/* Before running t on host worker w: makes every read buffer's host copy valid (blocking
 * reads from devices) and fills ptrs[]. */
hetcl_status hetcl__rt_data_acquire_host(struct rt_worker *w, struct rt_task *t, void **ptrs);
/* After t ran successfully on host worker w, or was enqueued successfully on OpenCL worker w:
 * written buffers become valid on w->node only (for OpenCL, ready when t->done_event
 * completes). */
void hetcl__rt_data_release(struct rt_worker *w, struct rt_task *t);
/* Frees a handle entirely: copies, host copy if the runtime allocated it, tracking (no
 * waiting: the caller made sure nothing is pending). Unlinks it from rt->handles. */
void hetcl__rt_data_handle_free(struct hetcl_runtime *rt, struct rt_handle *h);
/* After t failed on OpenCL worker w part way (commands may have written its buffers there):
 * w's copies of the buffers t writes stop counting as valid where another copy is, so that a
 * re-run elsewhere starts from clean data. */
void hetcl__rt_data_abandon(struct rt_worker *w, struct rt_task *t);
/* After t was abandoned on hung worker w (rt_hang.c): the buffers t writes are lost (reading
 * them fails with HETCL_ERR_TIMEOUT naming w, until a task writes them anew), and no copy waits
 * for t's event any more. */
void hetcl__rt_data_lost(struct rt_worker *w, struct rt_task *t);
/* Frees a handle's device copies (no waiting: the caller made sure nothing is pending). */
void hetcl__rt_data_free_copies(struct hetcl_runtime *rt, struct rt_handle *h);
/* Makes h's host copy valid (blocking); with `invalidate_devices`, marks every other copy
 * invalid. */
hetcl_status hetcl__rt_data_to_host(struct hetcl_runtime *rt, struct rt_handle *h,
                                    bool invalidate_devices);

/* Frees a worker's kernel cache (rt_kernels.c); NULL is a no-op. */
void hetcl__rt_kernels_destroy(struct rt_kernel_cache *kc);

/* Trace (rt_trace.c); all no-ops when rt->trace is NULL. */
hetcl_status hetcl__rt_trace_create(struct rt_trace **out);
void hetcl__rt_trace_destroy(struct rt_trace *tr);
/* Records a finished task (copies what it needs from t). */
void hetcl__rt_trace_task(struct hetcl_runtime *rt, const struct rt_task *t);
/* Records a transfer of `bytes` of handle `handle_id` from node src to node dst, done by
 * worker `worker` for task `task_id` between host times start and end. */
void hetcl__rt_trace_transfer(struct hetcl_runtime *rt, int worker, uint64_t task_id,
                              uint64_t handle_id, size_t bytes, int src, int dst, uint64_t start_ns,
                              uint64_t end_ns);

#endif /* HETCL_RT_IMPL_H */
