/*
 * Recycled task structures (rt_impl.h: hetcl__rt_task_alloc and friends).
 *
 * Why: a task is allocated by the submitting thread and freed by a worker (the last reference
 * usually drops there), so every task crossed threads in glibc's allocator: the worker's frees
 * went back to the submitter's arena under its lock, with consolidation, while the submitter
 * allocated from it. For empty OpenCL tasks that was the largest user-space cost outside the
 * driver in the worker's profile (perf, `hetcl bench runtime`). Recycled here instead: the
 * freeing threads push onto a lock-free stack (pushes only: no ABA), and a submitter takes the
 * whole stack at once into a list of its own (pool_lock, taken by submitters only). A recycled
 * task keeps its successor array, which chains would otherwise reallocate per task.
 *
 * Only tasks without a caller's reference are recycled: their last reference drops inside the
 * runtime, before hetcl_runtime_destroy returns (a caller may release its reference after the
 * runtime is gone, when no pool is left to return to).
 *
 * Under AddressSanitizer a pooled task is poisoned but for its pool link, so a use after the
 * last reference dropped is still reported, as it was when every task was freed.
 */
#include "rt/rt_impl.h"

#include <string.h>

#if defined(__SANITIZE_ADDRESS__)
#define RT_POOL_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define RT_POOL_ASAN 1
#endif
#endif
#ifdef RT_POOL_ASAN
#include <sanitizer/asan_interface.h>
/* The pool link stays readable: the stack and the taken list walk it. */
static void poison(struct rt_task *t)
{
    ASAN_POISON_MEMORY_REGION(t, sizeof *t);
    ASAN_UNPOISON_MEMORY_REGION(&t->pool_next, sizeof t->pool_next);
}
static void unpoison(struct rt_task *t)
{
    ASAN_UNPOISON_MEMORY_REGION(t, sizeof *t);
}
#else
static void poison(struct rt_task *t)
{
    (void) t;
}
static void unpoison(struct rt_task *t)
{
    (void) t;
}
#endif

void hetcl__rt_task_pool_init(struct hetcl_runtime *rt)
{
    atomic_init(&rt->pool_shared, NULL);
    atomic_init(&rt->pool_n, 0);
    rt->pool_taken = NULL;
    pthread_mutex_init(&rt->pool_lock, NULL);
}

static void task_free_whole(struct rt_task *t)
{
    hetcl__free(t->successors);
    hetcl__free(t);
}

void hetcl__rt_task_pool_destroy(struct hetcl_runtime *rt)
{
    struct rt_task *lists[2] = {atomic_exchange(&rt->pool_shared, NULL), rt->pool_taken};
    rt->pool_taken = NULL;
    for (int i = 0; i < 2; i++)
        while (lists[i]) {
            struct rt_task *t = lists[i];
            lists[i] = t->pool_next;
            unpoison(t);
            task_free_whole(t);
        }
    pthread_mutex_destroy(&rt->pool_lock);
}

struct rt_task *hetcl__rt_task_alloc(struct hetcl_runtime *rt, bool recyclable)
{
    struct rt_task *t = NULL;
    if (recyclable && atomic_load_explicit(&rt->pool_n, memory_order_relaxed) > 0) {
        pthread_mutex_lock(&rt->pool_lock);
        if (!rt->pool_taken)
            rt->pool_taken = atomic_exchange(&rt->pool_shared, NULL);
        t = rt->pool_taken;
        if (t)
            rt->pool_taken = t->pool_next;
        pthread_mutex_unlock(&rt->pool_lock);
    }
    if (!t) {
        t = hetcl__calloc(1, sizeof *t);
        if (t)
            t->recyclable = recyclable;
        return t;
    }
    atomic_fetch_sub(&rt->pool_n, 1);
    unpoison(t);
    struct rt_task **succ = t->successors;
    size_t cap = t->cap_successors;
    memset(t, 0, sizeof *t);
    t->successors = succ;
    t->cap_successors = cap;
    t->recyclable = true;
    return t;
}

void hetcl__rt_task_recycle(struct rt_task *t)
{
    struct hetcl_runtime *rt = t->rt;
    /* Bounded: a burst of tasks leaves at most this many behind until the runtime goes. */
    if (!t->recyclable || atomic_fetch_add(&rt->pool_n, 1) >= RT_TASK_POOL_MAX) {
        if (t->recyclable)
            atomic_fetch_sub(&rt->pool_n, 1);
        task_free_whole(t);
        return;
    }
    poison(t);
    struct rt_task *head = atomic_load(&rt->pool_shared);
    do
        t->pool_next = head;
    while (!atomic_compare_exchange_weak(&rt->pool_shared, &head, t));
}
