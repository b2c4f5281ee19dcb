/*
 * Tests the per-context extension slots of the internal seam (hetcl__context_ext,
 * <hetcl_internal/base.h>): one object per (context, type), created on first use, found
 * without creating, destroyed with the context (newest first), a failed creation retried, and
 * concurrent first uses creating exactly one object (run under ThreadSanitizer too).
 */
#include "harness.h"
#include <hetcl_internal/base.h>

#include <hetcl/context.h>
#include <pthread.h>
#include <stdatomic.h>

#define N_THREADS 8

/* What the test types saw: a test program's own counters. */
static atomic_int n_created, n_destroyed;
static int destroy_order[8];
static bool fail_next_create;

struct obj {
    hetcl_context *ctx; /* the context it was created for */
    int id;             /* which type */
};

static void *create_obj(hetcl_context *ctx, int id)
{
    if (fail_next_create) {
        fail_next_create = false;
        return NULL;
    }
    struct obj *o = hetcl__malloc(sizeof *o);
    if (o) {
        o->ctx = ctx;
        o->id = id;
        atomic_fetch_add(&n_created, 1);
    }
    return o;
}

static void destroy_obj(hetcl_context *ctx, void *p)
{
    struct obj *o = p;
    CHECK(o->ctx == ctx);
    const int i = atomic_fetch_add(&n_destroyed, 1);
    if (i < 8)
        destroy_order[i] = o->id;
    hetcl__free(o);
}

static void *create_a(hetcl_context *ctx)
{
    return create_obj(ctx, 1);
}

static void *create_b(hetcl_context *ctx)
{
    return create_obj(ctx, 2);
}

static const struct hetcl__context_ext_type type_a = {
        .name = "test a", .create = create_a, .destroy = destroy_obj};
static const struct hetcl__context_ext_type type_b = {
        .name = "test b", .create = create_b, .destroy = destroy_obj};

static void test_basic(void)
{
    hetcl_context *c1 = NULL, *c2 = NULL;
    CHECK_OK(c1, hetcl_context_create(NULL, &c1));
    CHECK_OK(c2, hetcl_context_create(NULL, &c2));
    atomic_store(&n_created, 0);
    atomic_store(&n_destroyed, 0);

    CHECK(hetcl__context_ext_find(c1, &type_a) == NULL); /* nothing before the first use */
    struct obj *a1 = hetcl__context_ext(c1, &type_a);
    CHECK(a1 != NULL && a1->ctx == c1 && a1->id == 1);
    CHECK(hetcl__context_ext(c1, &type_a) == a1); /* one per (context, type) */
    CHECK(hetcl__context_ext_find(c1, &type_a) == a1);
    struct obj *b1 = hetcl__context_ext(c1, &type_b);
    CHECK(b1 != NULL && b1 != (void *) a1 && b1->id == 2);
    struct obj *a2 = hetcl__context_ext(c2, &type_a); /* another context: its own */
    CHECK(a2 != NULL && a2 != a1 && a2->ctx == c2);
    CHECK(hetcl__context_ext_find(c2, &type_b) == NULL);
    CHECK_EQ_INT(atomic_load(&n_created), 3);

    /* a failed creation records nothing; the next use tries again */
    fail_next_create = true;
    CHECK(hetcl__context_ext(c2, &type_b) == NULL);
    CHECK(hetcl__context_ext_find(c2, &type_b) == NULL);
    CHECK(hetcl__context_ext(c2, &type_b) != NULL);

    CHECK(hetcl__context_ext(NULL, &type_a) == NULL);
    CHECK(hetcl__context_ext_find(NULL, &type_a) == NULL);
    CHECK(hetcl__context_ext(c1, NULL) == NULL);

    hetcl_context_destroy(c1);
    CHECK_EQ_INT(atomic_load(&n_destroyed), 2);
    CHECK_EQ_INT(destroy_order[0], 2); /* newest first */
    CHECK_EQ_INT(destroy_order[1], 1);
    hetcl_context_destroy(c2);
    CHECK_EQ_INT(atomic_load(&n_destroyed), 4);
}

struct racer {
    hetcl_context *ctx;
    atomic_int *go;
    void *seen;
};

static void *race(void *p)
{
    struct racer *r = p;
    while (!atomic_load(r->go))
        hetcl__cpu_relax();
    r->seen = hetcl__context_ext(r->ctx, &type_a);
    return NULL;
}

/* Threads meeting a context's extension for the first time together create it once. */
static void test_concurrent_first_use(void)
{
    for (int round = 0; round < 20; round++) {
        hetcl_context *ctx = NULL;
        CHECK_OK(ctx, hetcl_context_create(NULL, &ctx));
        atomic_store(&n_created, 0);
        atomic_int go = 0;
        struct racer r[N_THREADS];
        pthread_t th[N_THREADS];
        int started = 0;
        for (int i = 0; i < N_THREADS; i++) {
            r[i] = (struct racer){.ctx = ctx, .go = &go};
            if (pthread_create(&th[i], NULL, race, &r[i]) == 0)
                started++;
            else
                break;
        }
        atomic_store(&go, 1);
        for (int i = 0; i < started; i++)
            pthread_join(th[i], NULL);
        CHECK_EQ_INT(atomic_load(&n_created), 1);
        for (int i = 0; i < started; i++)
            CHECK(r[i].seen != NULL && r[i].seen == r[0].seen);
        hetcl_context_destroy(ctx);
    }
}

int main(void)
{
    test_basic();
    test_concurrent_first_use();
    return hetcl_test_finish("test_rt_context_ext");
}
