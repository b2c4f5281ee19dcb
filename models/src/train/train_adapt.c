/* The Adaptive Hogbatch controller: the rule is documented at hetcl__adapt_decide
 * (train_impl.h) and in README.md. Pure logic; time comes from the caller. */
#include "train_impl.h"

#include <math.h>
#include <string.h>

void hetcl__adapt_init(struct hetcl__adapt *a, int n_dev, uint64_t period_ns, double dead_band,
                       uint64_t now_ns)
{
    memset(a, 0, sizeof *a);
    a->n_dev = n_dev < 0 ? 0 : n_dev > HETCL_TRAIN_MAX_DEVICES ? HETCL_TRAIN_MAX_DEVICES : n_dev;
    a->period_ns = period_ns ? period_ns : UINT64_C(50000000);
    a->dead_band = dead_band > 0 ? dead_band : 0.1;
    a->max_ratio = 2.0;
    a->alpha = 0.3;
    a->last_decision_ns = now_ns;
    for (int d = 0; d < a->n_dev; d++) {
        a->dev[d].batch = a->dev[d].b_min = a->dev[d].b_max = 1;
        a->dev[d].group = d;
    }
}

void hetcl__adapt_group(struct hetcl__adapt *a, int d, int g)
{
    if (d >= 0 && d < a->n_dev && g >= 0 && g < a->n_dev)
        a->dev[d].group = g;
}

static int64_t clamp64(int64_t v, int64_t lo, int64_t hi)
{
    return v < lo ? lo : v > hi ? hi : v;
}

void hetcl__adapt_set(struct hetcl__adapt *a, int d, int64_t batch, int64_t b_min, int64_t b_max,
                      bool adapt)
{
    if (d < 0 || d >= a->n_dev)
        return;
    struct hetcl__adapt_dev *v = &a->dev[d];
    v->b_min = b_min < 1 ? 1 : b_min;
    v->b_max = b_max < v->b_min ? v->b_min : b_max;
    v->batch = clamp64(batch, v->b_min, v->b_max);
    v->adapt = adapt;
    v->t_batch_ns = 0;
    v->samples = 0;
}

void hetcl__adapt_record(struct hetcl__adapt *a, int d, int64_t batch, uint64_t duration_ns)
{
    if (d < 0 || d >= a->n_dev || batch <= 0)
        return;
    struct hetcl__adapt_dev *v = &a->dev[d];
    /* A batch handed out before the last change: rescale its time to the current size. */
    double t = (double) duration_ns * (double) v->batch / (double) batch;
    v->t_batch_ns = v->samples ? (1 - a->alpha) * v->t_batch_ns + a->alpha * t : t;
    v->samples++;
}

void hetcl__adapt_drop(struct hetcl__adapt *a, int d)
{
    if (d >= 0 && d < a->n_dev)
        a->dev[d].gone = true;
}

bool hetcl__adapt_decide(struct hetcl__adapt *a, uint64_t now_ns)
{
    if (now_ns - a->last_decision_ns < a->period_ns)
        return false;
    /* Each group's rate: the sum of its live devices' rates. */
    double group_rate[HETCL_TRAIN_MAX_DEVICES] = {0}, sum = 0;
    bool live[HETCL_TRAIN_MAX_DEVICES] = {false}, adapts[HETCL_TRAIN_MAX_DEVICES] = {false};
    int n_live = 0;
    for (int d = 0; d < a->n_dev; d++) {
        const struct hetcl__adapt_dev *v = &a->dev[d];
        if (v->gone)
            continue;
        if (!v->samples || v->t_batch_ns <= 0)
            return false; /* every device needs a current rate */
        n_live += !live[v->group];
        live[v->group] = true;
        adapts[v->group] |= v->adapt;
        group_rate[v->group] += 1.0 / v->t_batch_ns;
        sum += 1.0 / v->t_batch_ns;
    }
    if (n_live < 2)
        return false;
    a->last_decision_ns = now_ns;
    a->n_decisions++;
    double mu = 1.0 / n_live, group_ratio[HETCL_TRAIN_MAX_DEVICES], log_sum = 0, worst = 0;
    int n_adapt = 0;
    for (int g = 0; g < a->n_dev; g++) {
        if (!live[g])
            continue;
        group_ratio[g] = group_rate[g] / sum / mu;
        worst = fmax(worst, fabs(group_ratio[g] - 1));
        if (adapts[g]) {
            n_adapt++;
            log_sum += log(group_ratio[g]);
        }
    }
    double ratio[HETCL_TRAIN_MAX_DEVICES];
    for (int d = 0; d < a->n_dev; d++)
        ratio[d] = a->dev[d].gone ? 1.0 : group_ratio[a->dev[d].group];
    if (worst <= a->dead_band || n_adapt == 0)
        return false;
    /* When every device adapts, nothing fixes the scale of the sizes (doubling them all keeps
     * the shares): divide the ratios by their geometric mean so that the product of the sizes
     * stays put (up to the bounds) and they meet in the middle. */
    double norm = n_adapt == n_live ? exp(log_sum / n_adapt) : 1.0;
    bool changed = false;
    for (int d = 0; d < a->n_dev; d++) {
        struct hetcl__adapt_dev *v = &a->dev[d];
        if (!v->adapt || v->gone)
            continue;
        double r = ratio[d] / norm;
        if (r > a->max_ratio)
            r = a->max_ratio;
        if (r < 1 / a->max_ratio)
            r = 1 / a->max_ratio;
        int64_t nb = clamp64((int64_t) llround((double) v->batch * r), v->b_min, v->b_max);
        if (nb != v->batch) {
            /* Expected time at the new size, so that the next decision does not act on the
             * old figure before a fresh sample arrives. */
            v->t_batch_ns *= (double) nb / (double) v->batch;
            v->batch = nb;
            v->samples = 0;
            v->changes++;
            changed = true;
        }
    }
    return changed;
}
