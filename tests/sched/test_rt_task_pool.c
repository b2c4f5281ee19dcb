/*
 * Tests the recycled task structures (runtime/src/rt/rt_task_pool.c) on a runtime struct built
 * here: a recyclable task comes back zeroed but for its successor array, which it keeps; a task
 * that is not recyclable is freed, never pooled; the pool keeps at most RT_TASK_POOL_MAX; tasks
 * recycled from other threads are all taken back; destroy frees what is left (the ASan stage's
 * leak check). Under AddressSanitizer a pooled task is poisoned but for its pool link, so a use
 * after its last reference dropped is still reported.
 */
#include "harness.h"
#include "rt/rt_impl.h"

#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#if defined(__SANITIZE_ADDRESS__)
#define TEST_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define TEST_ASAN 1
#endif
#endif
#ifdef TEST_ASAN
#include <sanitizer/asan_interface.h>
#endif

static struct rt_task *new_task(struct hetcl_runtime *rt, bool recyclable)
{
    struct rt_task *t = hetcl__rt_task_alloc(rt, recyclable);
    CHECK(t != NULL);
    t->rt = rt;
    return t;
}

static void test_reuse(void)
{
    static struct hetcl_runtime rt;
    memset(&rt, 0, sizeof rt);
    hetcl__rt_task_pool_init(&rt);
    struct rt_task *a = new_task(&rt, true);
    a->successors = malloc(4 * sizeof *a->successors);
    CHECK(a->successors != NULL);
    a->cap_successors = 4;
    a->n_successors = 3;
    a->priority = 7;
    hetcl__rt_task_recycle(a);
    CHECK(atomic_load(&rt.pool_n) == 1);
#ifdef TEST_ASAN
    CHECK(__asan_address_is_poisoned(&a->priority));
    CHECK(__asan_address_is_poisoned(&a->successors));
    CHECK(!__asan_address_is_poisoned(&a->pool_next));
#endif
    struct rt_task *b = new_task(&rt, true);
    CHECK(b == a);                                   /* taken back from the pool */
    CHECK(b->n_successors == 0 && b->priority == 0); /* zeroed */
    CHECK(b->successors != NULL && b->cap_successors == 4);
    CHECK(b->recyclable);
    CHECK(atomic_load(&rt.pool_n) == 0);

    struct rt_task *c = new_task(&rt, false); /* a caller holds it: freed, never pooled */
    CHECK(!c->recyclable);
    hetcl__rt_task_recycle(c);
    CHECK(atomic_load(&rt.pool_n) == 0);
    hetcl__rt_task_recycle(b);
    hetcl__rt_task_pool_destroy(&rt); /* frees b and its successor array */
}

static void test_bound(void)
{
    static struct hetcl_runtime rt;
    memset(&rt, 0, sizeof rt);
    hetcl__rt_task_pool_init(&rt);
    enum { N = RT_TASK_POOL_MAX + 100 };
    struct rt_task **ts = malloc(N * sizeof *ts);
    CHECK(ts != NULL);
    for (int i = 0; i < N; i++)
        ts[i] = new_task(&rt, true);
    for (int i = 0; i < N; i++)
        hetcl__rt_task_recycle(ts[i]);
    CHECK(atomic_load(&rt.pool_n) == RT_TASK_POOL_MAX);
    free(ts);
    hetcl__rt_task_pool_destroy(&rt);
}

/* Tasks recycled by several threads at once while the main thread takes them back. */
struct recycler {
    struct hetcl_runtime *rt;
    struct rt_task **ts;
    int n;
};

static void *recycle_all(void *arg)
{
    struct recycler *r = arg;
    for (int i = 0; i < r->n; i++)
        hetcl__rt_task_recycle(r->ts[i]);
    return NULL;
}

static int by_address(const void *a, const void *b)
{
    uintptr_t x = (uintptr_t) * (struct rt_task *const *) a;
    uintptr_t y = (uintptr_t) * (struct rt_task *const *) b;
    return (x > y) - (x < y);
}

static void test_threads(void)
{
    static struct hetcl_runtime rt;
    memset(&rt, 0, sizeof rt);
    hetcl__rt_task_pool_init(&rt);
    enum { THREADS = 3, PER = 500 };
    static struct rt_task *ts[THREADS][PER];
    for (int k = 0; k < THREADS; k++)
        for (int i = 0; i < PER; i++)
            ts[k][i] = new_task(&rt, true);
    pthread_t th[THREADS];
    struct recycler r[THREADS];
    for (int k = 0; k < THREADS; k++) {
        r[k] = (struct recycler){&rt, ts[k], PER};
        CHECK(pthread_create(&th[k], NULL, recycle_all, &r[k]) == 0);
    }
    /* pool_n counts a push before the push lands, so a take may find the stack still empty
     * and allocate a fresh task: up to one extra per take, hence the room */
    const int cap = 2 * THREADS * PER;
    int taken = 0;
    struct rt_task **back = malloc((size_t) cap * sizeof *back);
    CHECK(back != NULL);
    while (taken < THREADS * PER / 2) /* takes while the others push */
        if (atomic_load(&rt.pool_n) > 0)
            back[taken++] = new_task(&rt, true);
    for (int k = 0; k < THREADS; k++)
        pthread_join(th[k], NULL);
    while (atomic_load(&rt.pool_n) > 0 && taken < cap)
        back[taken++] = new_task(&rt, true);
    CHECK(atomic_load(&rt.pool_n) == 0);
    qsort(back, (size_t) taken, sizeof *back, by_address);
    for (int i = 1; i < taken; i++)
        CHECK(back[i - 1] != back[i]); /* none handed out twice */
    for (int k = 0; k < THREADS; k++)  /* and every recycled one came back */
        for (int i = 0; i < PER; i++)
            CHECK(bsearch(&ts[k][i], back, (size_t) taken, sizeof *back, by_address) != NULL);
    for (int i = 0; i < taken; i++)
        hetcl__rt_task_recycle(back[i]);
    free(back);
    hetcl__rt_task_pool_destroy(&rt);
}

int main(void)
{
    test_reuse();
    test_bound();
    test_threads();
    return hetcl_test_finish("test_rt_task_pool");
}
