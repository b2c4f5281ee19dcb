/*
 * Teams of host workers on one small-batch dense layer (the protocol is described in
 * infer_impl.h): the lead publishes a layer as a new phase, every participant claims slices of
 * its output units, its own part first, and the lead returns once every slice is computed.
 */
#include "infer_impl.h"
#include "ops/host/host_ops.h"
#include <hetcl_internal/base.h>

#include <sched.h>
#include <stdlib.h>
#include <string.h>

/* Spin iterations between yields while waiting: a participant preempted by the OS (a loaded
 * machine) then gets its core back instead of being starved by the spinning one. */
#define YIELD_EVERY 4096

static void relax(unsigned *spins)
{
    hetcl__cpu_relax();
    if (++*spins % YIELD_EVERY == 0)
        sched_yield();
}

static int64_t part_begin(const struct hetcl__infer_team *t, int part)
{
    return t->n_slices * part / t->n_part;
}

/* A claim word: the phase (low 32 bits of it), the part's end and its next slice. */
static uint64_t claim_word(uint64_t phase, int64_t end, int64_t next)
{
    return (phase & 0xffffffffu) << 32 | (uint64_t) end << 16 | (uint64_t) next;
}

/* Claims one slice of part q in phase `phase`: its index, or -1 when q has none left (or the
 * phase is over). Reads nothing but the claim word before a claim succeeds: until every slice
 * of the phase is computed, the lead does not touch the layer's fields, so a successful claim
 * (acquire) sees the fields of its own phase. */
static int64_t claim(struct hetcl__infer_team *t, int q, uint64_t phase)
{
    _Atomic uint64_t *word = &t->claim[q].word;
    uint64_t v = atomic_load_explicit(word, memory_order_acquire);
    for (;;) {
        uint64_t next = v & 0xffffu, end = v >> 16 & 0xffffu;
        if (v >> 32 != (phase & 0xffffffffu) || next >= end)
            return -1;
        if (atomic_compare_exchange_weak_explicit(word, &v, v + 1, memory_order_acq_rel,
                                                  memory_order_acquire))
            return (int64_t) next;
    }
}

/* Computes every slice participant `part` can claim in `phase`: its own part, then the
 * others' in turn; then counts them done, once (a shared counter bumped per slice cost each
 * participant a cache-line transfer per slice, about a third of a batch-1 MLP layer's
 * team overhead). */
static void work(struct hetcl__infer_team *t, int part, uint64_t phase)
{
    int64_t computed = 0;
    for (int i = 0; i < t->n_part; i++) {
        int q = (part + i) % t->n_part;
        int64_t slice;
        while ((slice = claim(t, q, phase)) >= 0) {
            /* a convolution's part fails only for its scratch: the lead reports it */
            if (t->is_conv) {
                const hetcl_status st =
                        t->conv_kern ? hetcl__conv2d_packed_fwd(NULL, t->conv_kern, t->conv, t->x,
                                                                t->w, t->bias, t->act, (int) slice,
                                                                (int) t->n_slices, t->y)
                                     : hetcl__conv2d_depthwise_fwd(NULL, t->conv, t->x, t->w,
                                                                   t->bias, t->act, (int) slice,
                                                                   (int) t->n_slices, t->y);
                if (st != HETCL_OK)
                    atomic_store_explicit(&t->failed, 1, memory_order_relaxed);
            } else {
                int64_t u0 = slice * t->slice_units;
                int64_t u1 = u0 + t->slice_units < t->n ? u0 + t->slice_units : t->n;
                if (t->wp)
                    hetcl__sgemm_packed_cols(t->kern, t->m, t->n, t->k, t->x, t->k, t->wp, u0, u1,
                                             t->y, t->n, t->bias, t->act, t->work[part]);
                else
                    hetcl__infer_gemv_nt_units(t->m, t->n, u0, u1, t->k, t->x, t->w, t->y);
            }
            computed++;
        }
    }
    if (computed == 0)
        return;
    atomic_fetch_add_explicit(&t->slices, (uint64_t) computed, memory_order_relaxed);
    if (part > 0)
        atomic_fetch_add_explicit(&t->helped, (uint64_t) computed, memory_order_relaxed);
    atomic_fetch_add_explicit(&t->done, computed, memory_order_release);
}

bool hetcl__infer_team_worth(const struct hetcl__infer_team *t, int64_t n, int64_t k)
{
    /* at most 0xffff slices: the claim word's fields */
    return t && t->n_part > 1 && n >= 2 * HETCL_INFER_TEAM_SLICE &&
           n <= 0xffff * (int64_t) HETCL_INFER_TEAM_SLICE &&
           n * k * (int64_t) sizeof(float) >= HETCL_INFER_TEAM_MIN_BYTES;
}

/* Publishes the layer the lead has written into t as a new phase (n_slices set), computes
 * its slices with the helpers and returns once all are computed. */
static void run_phase(struct hetcl__infer_team *t)
{
    uint64_t phase = atomic_load_explicit(&t->phase, memory_order_relaxed) + 1;
    atomic_store_explicit(&t->done, 0, memory_order_relaxed);
    for (int q = 0; q < t->n_part; q++)
        atomic_store_explicit(&t->claim[q].word,
                              claim_word(phase, part_begin(t, q + 1), part_begin(t, q)),
                              memory_order_release);
    atomic_store_explicit(&t->phase, phase, memory_order_release);
    work(t, 0, phase);
    /* What is left was claimed by helpers, which are computing it now. */
    unsigned spins = 0;
    while (atomic_load_explicit(&t->done, memory_order_acquire) < t->n_slices)
        relax(&spins);
}

/* Only the lead writes a layer's fields, and only between phases: no participant reads them
 * until it has seen the new phase (acquire), which is published after them (release). */
void hetcl__infer_team_gemv(struct hetcl__infer_team *t, int64_t m, int64_t n, int64_t k,
                            const float *x, const float *w, float *y)
{
    t->is_conv = false;
    t->m = m;
    t->n = n;
    t->k = k;
    t->x = x;
    t->w = w;
    t->wp = NULL;
    t->y = y;
    t->slice_units = HETCL_INFER_TEAM_SLICE;
    t->n_slices = (n + HETCL_INFER_TEAM_SLICE - 1) / HETCL_INFER_TEAM_SLICE;
    run_phase(t);
}

/* Parts per participant of a convolution: more than one, so that a helper that starts late
 * leaves the lead a part to take, not half of the layer. */
#define CONV_PARTS_EACH 2

hetcl_status hetcl__infer_team_conv(struct hetcl__infer_team *t, hetcl_context *ctx,
                                    const struct hetcl_gemm_kernel *kern,
                                    const struct hetcl_op_conv2d_args *a, const float *x,
                                    const float *wp, const float *bias, hetcl_act act, float *y)
{
    t->is_conv = true;
    t->conv = a;
    t->conv_kern = kern;
    t->x = x;
    t->w = wp;
    t->bias = bias;
    t->act = act;
    t->y = y;
    atomic_store_explicit(&t->failed, 0, memory_order_relaxed);
    t->n_slices = (int64_t) t->n_part * CONV_PARTS_EACH;
    run_phase(t);
    if (atomic_load_explicit(&t->failed, memory_order_relaxed))
        return hetcl__fail(ctx, HETCL_ERR_NO_MEMORY, "conv2d_fwd: scratch of a team's part");
    return HETCL_OK;
}

/* Units per GEMM slice: whole panels, about two slices a participant (one participant late
 * or descheduled then costs the others half its part, while each slice repacks A's rows). */
static int64_t gemm_slice_units(const struct hetcl__infer_team *t, int64_t n)
{
    const int64_t nr = t->kern->nr, per = (n + 2 * t->n_part - 1) / (2 * t->n_part);
    return (per + nr - 1) / nr * nr;
}

bool hetcl__infer_team_gemm_worth(const struct hetcl__infer_team *t, int64_t n, int64_t k)
{
    return t && t->n_part > 1 && t->kern && n >= 2 * (int64_t) t->kern->nr &&
           n / t->kern->nr <= 0xffff &&
           n * k * (int64_t) sizeof(float) >= HETCL_INFER_TEAM_MIN_BYTES;
}

void hetcl__infer_team_gemm(struct hetcl__infer_team *t, int64_t m, int64_t n, int64_t k,
                            const float *x, const float *wp, const float *bias, hetcl_act act,
                            float *y)
{
    t->is_conv = false;
    t->m = m;
    t->n = n;
    t->k = k;
    t->x = x;
    t->wp = wp;
    t->bias = bias;
    t->act = act;
    t->y = y;
    t->slice_units = gemm_slice_units(t, n);
    t->n_slices = (n + t->slice_units - 1) / t->slice_units;
    run_phase(t);
}

hetcl_status hetcl__infer_team_gemm_scratch(struct hetcl__infer_team *t,
                                            const struct hetcl_gemm_kernel *kern)
{
    const size_t len = hetcl__sgemm_packed_work_len(kern);
    for (int q = 0; q < t->n_part; q++)
        if (!(t->work[q] = hetcl__malloc(len * sizeof(float))))
            return HETCL_ERR_NO_MEMORY;
    t->kern = kern;
    return HETCL_OK;
}

struct hetcl__infer_team *hetcl__infer_team_new(void)
{
    /* its own cache lines (sizeof is a multiple of the alignment, as aligned_alloc wants) */
    struct hetcl__infer_team *t = aligned_alloc(alignof(struct hetcl__infer_team), sizeof *t);
    if (t)
        memset(t, 0, sizeof *t);
    return t;
}

void hetcl__infer_team_free(struct hetcl__infer_team *t)
{
    if (!t)
        return;
    for (int q = 0; q < HETCL_INFER_TEAM_MAX; q++)
        hetcl__free(t->work[q]);
    hetcl__free(t);
}

void hetcl__infer_team_finish(struct hetcl__infer_team *t, uint64_t req)
{
    uint64_t cur = atomic_load_explicit(&t->finished, memory_order_relaxed);
    while (cur < req &&
           !atomic_compare_exchange_weak_explicit(&t->finished, &cur, req, memory_order_release,
                                                  memory_order_relaxed)) {
    }
}

bool hetcl__infer_team_poll(struct hetcl__infer_team *t, int part, uint64_t req, uint64_t *seen,
                            unsigned *spins)
{
    if (atomic_load_explicit(&t->finished, memory_order_acquire) >= req)
        return false;
    uint64_t phase = atomic_load_explicit(&t->phase, memory_order_acquire);
    if (phase != *seen) {
        work(t, part, phase);
        *seen = phase;
        *spins = 0;
    } else {
        relax(spins);
    }
    return true;
}

void hetcl__infer_team_help(struct hetcl__infer_team *t, int part, uint64_t req)
{
    uint64_t seen = 0;
    unsigned spins = 0;
    while (hetcl__infer_team_poll(t, part, req, &seen, &spins)) {
    }
}
