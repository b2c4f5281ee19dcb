/* The table of `hetcl bench model` (bench/result.h): one row per configuration (text or
 * Markdown), then the device breakdown's medians and each device's top-1 accuracy. */
#include "bench/result.h"

#include <hetcl/stats.h>

#include <math.h>
#include <stdio.h>
#include <string.h>

static const char *const header[] = {"model",   "devices",  "placement", "scenario", "batch",
                                     "p50 ms",  "p90 ms",   "p99 ms",    "dev p50",  "items/s",
                                     "warm-up", "diverged", "prec"};
#define N_COLS ((int) (sizeof header / sizeof header[0]))

static enum hetcl_bench_placement placed(const struct bench_result *x)
{
    return x->placement == HETCL_BENCH_AUTO ? HETCL_BENCH_SINGLE : x->placement;
}

/* "host0+p0d0" into buf[cap]. */
static void devices_cell(const struct bench_result *x, char *buf, size_t cap)
{
    buf[0] = '\0';
    for (size_t i = 0; i < x->n_devices; i++) {
        size_t len = strlen(buf);
        snprintf(buf + len, cap - len, "%s%s", i ? "+" : "", x->devices[i]);
    }
}

static void header_rows(struct sbuf *out, bool markdown, int dev_w)
{
    if (markdown) {
        for (int c = 0; c < N_COLS; c++)
            hetcl__sb_printf(out, "| %s ", header[c]);
        hetcl__sb_puts(out, "|\n");
        for (int c = 0; c < N_COLS; c++)
            hetcl__sb_printf(out, "| %s ", c >= 4 && c <= 9 ? "---:" : "---");
        hetcl__sb_puts(out, "|\n");
        return;
    }
    hetcl__sb_printf(out, "%-8s %-*s %-12s %-13s %5s %9s %9s %9s %9s %10s %-8s %-8s %s\n",
                     header[0], dev_w, header[1], header[2], header[3], header[4], header[5],
                     header[6], header[7], header[8], header[9], header[10], header[11],
                     header[12]);
}

/* The six measured cells of a row; sets *untrusted when a percentile carries the mark. */
static void measured_cells(const struct bench_result *x, char cells[6][32], bool *untrusted)
{
    struct hetcl_stats_summary s, d;
    bool have = x->ok && x->measured && x->loop.n_timed > 0 &&
                hetcl_stats_summarize(NULL, x->loop.timed, x->loop.n_timed, &s) == HETCL_OK;
    if (!have) {
        for (int c = 0; c < 5; c++)
            snprintf(cells[c], sizeof cells[c], "-");
        snprintf(cells[5], sizeof cells[5], "FAILED");
        return;
    }
    static const int idx[3] = {HETCL_STATS_P50, HETCL_STATS_P90, HETCL_STATS_P99};
    for (int c = 0; c < 3; c++) {
        bool trusted = s.pct[idx[c]].trusted;
        snprintf(cells[c], sizeof cells[c], "%.3f%s", s.pct[idx[c]].value / 1e6,
                 trusted ? "" : "*");
        *untrusted = *untrusted || !trusted;
    }
    bool have_dev = x->device_ns && x->n_device > 0 &&
                    hetcl_stats_summarize(NULL, x->device_ns, x->n_device, &d) == HETCL_OK;
    if (have_dev)
        snprintf(cells[3], sizeof cells[3], "%.3f", d.pct[HETCL_STATS_P50].value / 1e6);
    else
        snprintf(cells[3], sizeof cells[3], "-");
    snprintf(cells[4], sizeof cells[4], "%.1f", x->items_per_s);
    snprintf(cells[5], sizeof cells[5], "%s", x->loop.steady ? "steady" : "unsteady");
}

static void row(struct sbuf *out, const struct bench_result *x, bool markdown, int dev_w,
                bool *untrusted)
{
    char devs[HETCL_BENCH_MAX_DEVICES * (BENCH_NAME_MAX + 1)];
    devices_cell(x, devs, sizeof devs);
    char pl[32];
    snprintf(pl, sizeof pl, "%s%s", x->requested == HETCL_BENCH_AUTO ? "auto:" : "",
             hetcl_bench_placement_name(placed(x)));
    char cells[6][32];
    measured_cells(x, cells, untrusted);
    bool diverged = false;
    for (size_t i = 0; i < x->n_devices; i++)
        diverged = diverged || x->dev[i].diverged;
    const char *prec = hetcl_infer_precision_name((int) x->precision);
    if (markdown)
        hetcl__sb_printf(out,
                         "| %s | %s | %s | %s | %lld | %s | %s | %s | %s | %s | %s | %s | %s |\n",
                         x->model, devs, pl, hetcl_bench_scenario_name(x->scenario),
                         (long long) x->batch, cells[0], cells[1], cells[2], cells[3], cells[4],
                         cells[5], diverged ? "**yes**" : "no", prec);
    else
        hetcl__sb_printf(out, "%-8s %-*s %-12s %-13s %5lld %9s %9s %9s %9s %10s %-8s %-8s %s\n",
                         x->model, dev_w, devs, pl, hetcl_bench_scenario_name(x->scenario),
                         (long long) x->batch, cells[0], cells[1], cells[2], cells[3], cells[4],
                         cells[5], diverged ? "YES" : "no", prec);
    if (!x->ok)
        hetcl__sb_printf(out, markdown ? "\n> %s: %s\n\n" : "  error (%s): %s\n", devs, x->error);
}

/* The medians of the breakdown: where a request's time went between the runtime and the
 * device (the rest of end to end is the session's copies in and out, and waking up). */
static void breakdown_line(struct sbuf *out, const struct bench_result *x, bool markdown)
{
    double med[3];
    bool have = x->ok && x->n_breakdown > 0;
    for (int i = 0; have && i < 3; i++) {
        struct hetcl_stats_summary b;
        have = x->breakdown_ns[i] &&
               hetcl_stats_summarize(NULL, x->breakdown_ns[i], x->n_breakdown, &b) == HETCL_OK;
        med[i] = have ? b.pct[HETCL_STATS_P50].value / 1e3 : 0;
    }
    if (!have)
        return;
    char devs[HETCL_BENCH_MAX_DEVICES * (BENCH_NAME_MAX + 1)];
    devices_cell(x, devs, sizeof devs);
    hetcl__sb_printf(out,
                     "%sbreakdown p50: %s b%lld on %s, %s, %s: queued to submit %.1f us, submit "
                     "to start %.1f us, start to end %.1f us\n",
                     markdown ? "\n" : "", x->model, (long long) x->batch, devs,
                     hetcl_bench_placement_name(placed(x)), hetcl_bench_scenario_name(x->scenario),
                     med[0], med[1], med[2]);
}

/* Each device's top-1 with its configuration and the samples it evaluated: in a split, a
 * device sees only its rows of each batch. */
static void accuracy_lines(struct sbuf *out, const struct bench_result *x, bool markdown)
{
    for (size_t i = 0; x->ok && x->acc_evaluated && i < x->n_devices; i++)
        if (isfinite(x->dev[i].top1))
            hetcl__sb_printf(
                    out, "%saccuracy: %s b%lld %s %s on %s: top-1 %.2f%% of %lld %s samples\n",
                    markdown ? "\n" : "", x->model, (long long) x->batch,
                    hetcl_bench_placement_name(placed(x)), hetcl_bench_scenario_name(x->scenario),
                    x->dev[i].device, 100 * x->dev[i].top1, x->dev[i].top1_n,
                    x->acc_dataset ? x->acc_dataset : "");
}

/* Each fp16 configuration's outputs against the fp32 host reference: what its precision
 * costs (an fp32 configuration's differences are rounding noise, in the report). */
static void agreement_lines(struct sbuf *out, const struct bench_result *x, bool markdown)
{
    for (size_t i = 0; x->ok && x->precision == HETCL_INFER_FP16 && i < x->n_devices; i++)
        if (x->dev[i].n_compared > 0 && isfinite(x->dev[i].top1_agreement))
            hetcl__sb_printf(out,
                             "%sfp16 vs fp32 reference: %s b%lld %s %s on %s: max |dp| %.3g, "
                             "top-1 agreement %.2f%% of %lld rows\n",
                             markdown ? "\n" : "", x->model, (long long) x->batch,
                             hetcl_bench_placement_name(placed(x)),
                             hetcl_bench_scenario_name(x->scenario), x->dev[i].device,
                             x->dev[i].max_abs_diff, 100 * x->dev[i].top1_agreement,
                             x->dev[i].n_compared);
}

void hetcl__bench_table(struct sbuf *out, const struct bench_result *const *r, size_t n,
                        bool markdown)
{
    /* the devices column as wide as its longest entry ("p0d0.0+p0d0.1+host0") */
    int dev_w = 14;
    for (size_t k = 0; k < n; k++) {
        int w = -1;
        for (size_t i = 0; i < r[k]->n_devices; i++)
            w += 1 + (int) strlen(r[k]->devices[i]);
        dev_w = w > dev_w ? w : dev_w;
    }
    header_rows(out, markdown, dev_w);
    bool untrusted = false;
    for (size_t k = 0; k < n; k++)
        row(out, r[k], markdown, dev_w, &untrusted);
    for (size_t k = 0; k < n; k++)
        breakdown_line(out, r[k], markdown);
    for (size_t k = 0; k < n; k++)
        accuracy_lines(out, r[k], markdown);
    for (size_t k = 0; k < n; k++)
        agreement_lines(out, r[k], markdown);
    if (untrusted)
        hetcl__sb_puts(out, markdown ? "\n`*`: percentile not trusted (too few samples for its "
                                       "99% bound; see reports/README.md).\n"
                                     : "* percentile not trusted: too few samples for its 99% "
                                       "bound.\n");
}
