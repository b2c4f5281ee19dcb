/*
 * Renders `hetcl.train` reports (reports/schema/train.schema.json) for <hetcl/render.h>. With
 * more than one report, a table compares the runs and the loss and accuracy charts overlay
 * them; each run then gets its own sections (configuration, epochs, devices, and in HTML the
 * update shares and batch sizes over time).
 */
#include "render/report_render.h"
#include "render/svg_chart.h"

#include <hetcl_internal/base.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct run {
    struct report_doc *d;
    const cJSON *cfg, *epochs, *devices, *final, *share_points, *stop;
    const char *algo, *model, *dataset;
    char label[160];
};

static const char *base_name(const char *path)
{
    const char *s = strrchr(path, '/');
    return s ? s + 1 : path;
}

static void read_run(struct report_doc *d, struct run *r, bool several)
{
    memset(r, 0, sizeof *r);
    r->d = d;
    r->cfg = hetcl__rd_object(d, d->root, "$", "config");
    r->algo = hetcl__rd_string(d, r->cfg, "$.config", "algo");
    r->model = hetcl__rd_string(d, hetcl__rd_object(d, r->cfg, "$.config", "model"),
                                "$.config.model", "name");
    r->dataset = hetcl__rd_string(d, hetcl__rd_object(d, r->cfg, "$.config", "dataset"),
                                  "$.config.dataset", "name");
    r->stop = hetcl__rd_object(d, r->cfg, "$.config", "stop");
    r->epochs = hetcl__rd_array(d, d->root, "$", "epochs");
    r->devices = hetcl__rd_array(d, d->root, "$", "devices");
    r->final = hetcl__rd_object(d, d->root, "$", "final");
    r->share_points = hetcl__rd_array(d, hetcl__rd_object(d, d->root, "$", "share_over_time"),
                                      "$.share_over_time", "points");
    if (several)
        snprintf(r->label, sizeof r->label, "%s (%s)", r->algo, base_name(d->path));
    else
        snprintf(r->label, sizeof r->label, "%s", r->algo);
}

static const char *num(char *buf, size_t cap, double v, int digits)
{
    hetcl__rw_num(buf, cap, v, digits);
    return buf;
}

/* "3.2 MB" style, decimal units as the rest of the reports. */
static const char *bytes(char *buf, size_t cap, double v)
{
    static const char *const units[] = {"B", "kB", "MB", "GB", "TB"};
    int u = 0;
    while (fabs(v) >= 1000 && u < 4) {
        v /= 1000;
        u++;
    }
    snprintf(buf, cap, u ? "%.3g %s" : "%.0f %s", v, units[u]);
    return buf;
}

static const char *pct(char *buf, size_t cap, double v)
{
    if (isnan(v))
        snprintf(buf, cap, "n/a");
    else
        snprintf(buf, cap, "%.1f%%", v * 100);
    return buf;
}

/* Joins an object's members as "k=v, k=v" (numbers, strings, booleans, null, arrays). */
static void join_members(struct sbuf *s, const cJSON *o)
{
    const cJSON *m;
    bool first = true;
    cJSON_ArrayForEach(m, o)
    {
        hetcl__sb_printf(s, "%s%s=", first ? "" : ", ", m->string ? m->string : "?");
        first = false;
        if (cJSON_IsString(m)) {
            hetcl__sb_puts(s, m->valuestring);
        } else {
            char *t = cJSON_PrintUnformatted(m);
            hetcl__sb_puts(s, t ? t : "?");
            cJSON_free(t);
        }
    }
    if (first)
        hetcl__sb_puts(s, "none");
}

static void slowdown_warnings(struct rw *w, struct run *r)
{
    const cJSON *sl = hetcl__rd_array(r->d, r->cfg, "$.config", "slowdowns"), *s;
    size_t i = 0;
    cJSON_ArrayForEach(s, sl)
    {
        char at[64], n[32];
        hetcl__rd_index_path(at, sizeof at, "$.config.slowdowns", i++);
        hetcl__rw_warning(w,
                          "run %s: device %s was slowed down on purpose (%s, factor %s): %s. Its "
                          "figures do not describe the hardware.",
                          r->label, hetcl__rd_string(r->d, s, at, "device"),
                          hetcl__rd_string(r->d, s, at, "knob"),
                          num(n, sizeof n, hetcl__rd_number(r->d, s, at, "factor", false), 3),
                          hetcl__rd_string(r->d, s, at, "note"));
    }
}

static void runs_table(struct rw *w, struct run *runs, size_t n)
{
    static const char *const h[] = {
            "run",       "model",           "algorithm",          "devices",
            "final acc", "final test loss", "time to target (s)", "examples/s",
            "wall (s)",  "stopped by"};
    hetcl__rw_table(w, h, sizeof h / sizeof h[0]);
    for (size_t i = 0; i < n; i++) {
        struct run *r = &runs[i];
        struct report_doc *d = r->d;
        char a[32], b[32], c[32], e[32], f[32];
        hetcl__rw_row(w);
        hetcl__rw_cell(w, "%s", d->path);
        hetcl__rw_cell(w, "%s", r->model);
        hetcl__rw_cell(w, "%s", r->algo);
        hetcl__rw_cell(w, "%d", r->devices ? cJSON_GetArraySize(r->devices) : 0);
        hetcl__rw_cell(
                w, "%s",
                pct(a, sizeof a, hetcl__rd_number(d, r->final, "$.final", "test_acc", true)));
        hetcl__rw_cell(
                w, "%s",
                num(b, sizeof b, hetcl__rd_number(d, r->final, "$.final", "test_loss", true), 4));
        double tt = hetcl__rd_number(d, d->root, "$", "time_to_target_s", true);
        hetcl__rw_cell(w, "%s", isnan(tt) ? "not reached" : num(c, sizeof c, tt, 4));
        hetcl__rw_cell(w, "%s",
                       num(e, sizeof e,
                           hetcl__rd_number(d, r->final, "$.final", "examples_per_s", false), 4));
        hetcl__rw_cell(
                w, "%s",
                num(f, sizeof f, hetcl__rd_number(d, r->final, "$.final", "wall_s", false), 4));
        hetcl__rw_cell(w, "%s", hetcl__rd_string(d, r->final, "$.final", "stopped_by"));
    }
    hetcl__rw_table_end(w);
}

static void config_table(struct rw *w, struct run *r)
{
    struct report_doc *d = r->d;
    const cJSON *cfg = r->cfg;
    const cJSON *model = hetcl__rd_object(d, cfg, "$.config", "model");
    const cJSON *ds = hetcl__rd_object(d, cfg, "$.config", "dataset");
    const cJSON *ck = hetcl__rd_object(d, ds, "$.config.dataset", "checksum");
    const cJSON *op = hetcl__rd_object(d, cfg, "$.config", "optimizer");
    const cJSON *ls = hetcl__rd_object(d, op, "$.config.optimizer", "lr_schedule");
    const cJSON *bs = hetcl__rd_object(d, op, "$.config.optimizer", "lr_batch_scaling");
    const cJSON *prov = hetcl__rd_object(d, d->root, "$", "provenance");
    const cJSON *host = hetcl__rd_object(d, prov, "$.provenance", "host");
    char a[32], b[32], c[32];
    hetcl__rw_kv(
            w, "model", "%s (%s, %s parameters)",
            hetcl__rd_string(d, model, "$.config.model", "name"),
            hetcl__rd_string(d, model, "$.config.model", "spec"),
            num(a, sizeof a, hetcl__rd_number(d, model, "$.config.model", "parameters", false), 9));
    char e1[32];
    hetcl__rw_kv(
            w, "dataset", "%s: %s training and %s test examples, %s features, %s classes%s",
            r->dataset,
            num(a, sizeof a, hetcl__rd_number(d, ds, "$.config.dataset", "n_train", false), 9),
            num(b, sizeof b, hetcl__rd_number(d, ds, "$.config.dataset", "n_test", false), 9),
            num(c, sizeof c, hetcl__rd_number(d, ds, "$.config.dataset", "n_features", false), 9),
            num(e1, sizeof e1, hetcl__rd_number(d, ds, "$.config.dataset", "n_classes", false), 9),
            cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(ds, "standardize")) ? ", standardized"
                                                                              : "");
    hetcl__rw_kv(w, "dataset checksum", "%s %s",
                 hetcl__rd_string(d, ck, "$.config.dataset.checksum", "algorithm"),
                 hetcl__rd_string(d, ck, "$.config.dataset.checksum", "value"));
    hetcl__rw_kv(w, "algorithm", "%s", r->algo);
    struct sbuf s = {0};
    join_members(&s, hetcl__rd_object(d, cfg, "$.config", "algo_params"));
    hetcl__rw_kv(w, "algorithm parameters", "%s", s.p ? s.p : "");
    hetcl__sb_free(&s);
    const char *kind = hetcl__rd_string(d, ls, "$.config.optimizer.lr_schedule", "kind");
    hetcl__rw_kv(
            w, "optimizer",
            "SGD, learning rate %s (at batch %s, %s scaling), momentum %s, weight decay %s, %s "
            "schedule",
            num(a, sizeof a, hetcl__rd_number(d, op, "$.config.optimizer", "learning_rate", false),
                4),
            num(b, sizeof b,
                hetcl__rd_number(d, bs, "$.config.optimizer.lr_batch_scaling", "reference_batch",
                                 false),
                6),
            hetcl__rd_string(d, bs, "$.config.optimizer.lr_batch_scaling", "rule"),
            num(c, sizeof c, hetcl__rd_number(d, op, "$.config.optimizer", "momentum", false), 4),
            num(e1, sizeof e1, hetcl__rd_number(d, op, "$.config.optimizer", "weight_decay", false),
                4),
            kind);
    /* Per-device batch sizes and bounds. */
    s = (struct sbuf){0};
    const cJSON *bt, *batches = hetcl__rd_array(d, cfg, "$.config", "batches");
    size_t i = 0;
    cJSON_ArrayForEach(bt, batches)
    {
        char at[64];
        hetcl__rd_index_path(at, sizeof at, "$.config.batches", i);
        hetcl__sb_printf(&s, "%s%s: %.0f (%.0f..%.0f)", i++ ? ", " : "",
                         hetcl__rd_string(d, bt, at, "device"),
                         hetcl__rd_number(d, bt, at, "initial", false),
                         hetcl__rd_number(d, bt, at, "min", false),
                         hetcl__rd_number(d, bt, at, "max", false));
    }
    hetcl__rw_kv(w, "batch sizes (bounds)", "%s", s.p ? s.p : "");
    hetcl__sb_free(&s);
    hetcl__rw_kv(w, "seed", "%s",
                 num(a, sizeof a, hetcl__rd_number(d, cfg, "$.config", "seed", false), 16));
    double ep = hetcl__rd_number(d, r->stop, "$.config.stop", "epochs", true);
    double ts = hetcl__rd_number(d, r->stop, "$.config.stop", "time_s", true);
    double ta = hetcl__rd_number(d, r->stop, "$.config.stop", "target_acc", true);
    char e2[32], e3[32];
    hetcl__rw_kv(w, "stop rule", "epochs: %s; time: %s%s; target accuracy: %s",
                 isnan(ep) ? "not set" : num(e1, sizeof e1, ep, 6),
                 isnan(ts) ? "not set" : num(e2, sizeof e2, ts, 6), isnan(ts) ? "" : " s",
                 isnan(ta) ? "not set" : pct(e3, sizeof e3, ta));
    const cJSON *h = hetcl__rd_object(d, d->root, "$", "hetcl");
    hetcl__rw_kv(w, "hetcl", "%s (commit %s), report written %s",
                 hetcl__rd_string(d, h, "$.hetcl", "version"),
                 hetcl__rd_string(d, h, "$.hetcl", "commit"), d->generated_at);
    hetcl__rw_kv(w, "host", "%s, %s, %s",
                 hetcl__rd_string(d, host, "$.provenance.host", "hostname"),
                 hetcl__rd_string(d, host, "$.provenance.host", "os"),
                 hetcl__rd_string(d, host, "$.provenance.host", "cpu_model"));
    s = (struct sbuf){0};
    join_members(&s, hetcl__rd_object(d, host, "$.provenance.host", "environment"));
    hetcl__rw_kv(w, "environment", "%s", s.p ? s.p : "");
    hetcl__sb_free(&s);
    s = (struct sbuf){0};
    const cJSON *arg;
    cJSON_ArrayForEach(arg, hetcl__rd_array(d, prov, "$.provenance", "command_line"))
    {
        hetcl__sb_printf(&s, "%s%s", s.len ? " " : "",
                         cJSON_IsString(arg) ? arg->valuestring : "?");
    }
    hetcl__rw_kv(w, "command line", "%s", s.p ? s.p : "");
    hetcl__sb_free(&s);
    hetcl__rw_table_end(w);
}

static void result_table(struct rw *w, struct run *r)
{
    struct report_doc *d = r->d;
    const cJSON *st = hetcl__rd_object(d, d->root, "$", "staleness");
    char a[32], b[32], c[32], e[32], f[32];
    double tt = hetcl__rd_number(d, d->root, "$", "time_to_target_s", true);
    double ta = hetcl__rd_number(d, r->stop, "$.config.stop", "target_acc", true);
    hetcl__rw_kv(w, "final test accuracy", "%s",
                 pct(a, sizeof a, hetcl__rd_number(d, r->final, "$.final", "test_acc", true)));
    hetcl__rw_kv(w, "final loss (train / test)", "%s / %s",
                 num(a, sizeof a, hetcl__rd_number(d, r->final, "$.final", "train_loss", true), 4),
                 num(b, sizeof b, hetcl__rd_number(d, r->final, "$.final", "test_loss", true), 4));
    if (isnan(ta))
        hetcl__rw_kv(w, "time to target", "no target set");
    else if (isnan(tt))
        hetcl__rw_kv(w, "time to target", "%s not reached", pct(a, sizeof a, ta));
    else
        hetcl__rw_kv(w, "time to target", "%s s to %s", num(a, sizeof a, tt, 4),
                     pct(b, sizeof b, ta));
    hetcl__rw_kv(w, "training time", "%s s, %s epochs, stopped by %s",
                 num(a, sizeof a, hetcl__rd_number(d, r->final, "$.final", "wall_s", false), 4),
                 num(b, sizeof b, hetcl__rd_number(d, r->final, "$.final", "epochs", false), 6),
                 hetcl__rd_string(d, r->final, "$.final", "stopped_by"));
    hetcl__rw_kv(
            w, "throughput", "%s examples/s",
            num(a, sizeof a, hetcl__rd_number(d, r->final, "$.final", "examples_per_s", false), 4));
    hetcl__rw_kv(w, "staleness (updates)", "mean %s, p50 %s, p99 %s, max %s (%s updates)",
                 num(a, sizeof a, hetcl__rd_number(d, st, "$.staleness", "mean", true), 3),
                 num(b, sizeof b, hetcl__rd_number(d, st, "$.staleness", "p50", true), 3),
                 num(c, sizeof c, hetcl__rd_number(d, st, "$.staleness", "p99", true), 3),
                 num(e, sizeof e, hetcl__rd_number(d, st, "$.staleness", "max", true), 3),
                 num(f, sizeof f, hetcl__rd_number(d, st, "$.staleness", "n", false), 12));
    const cJSON *hash = cJSON_GetObjectItemCaseSensitive(r->final, "model_hash");
    if (cJSON_IsString(hash))
        hetcl__rw_kv(w, "final model hash", "%s", hash->valuestring);
    hetcl__rw_table_end(w);
}

static void epochs_table(struct rw *w, struct run *r)
{
    static const char *const h[] = {"epoch",     "wall (s)", "train loss",
                                    "test loss", "test acc", "examples/s"};
    hetcl__rw_table(w, h, sizeof h / sizeof h[0]);
    const cJSON *e;
    size_t i = 0;
    cJSON_ArrayForEach(e, r->epochs)
    {
        char at[64], a[32], b[32], c[32], f[32], g[32];
        hetcl__rd_index_path(at, sizeof at, "$.epochs", i++);
        hetcl__rw_row(w);
        hetcl__rw_cell(w, "%.0f", hetcl__rd_number(r->d, e, at, "epoch", false));
        hetcl__rw_cell(w, "%s",
                       num(a, sizeof a, hetcl__rd_number(r->d, e, at, "wall_s", false), 4));
        hetcl__rw_cell(w, "%s",
                       num(b, sizeof b, hetcl__rd_number(r->d, e, at, "train_loss", false), 4));
        hetcl__rw_cell(w, "%s",
                       num(c, sizeof c, hetcl__rd_number(r->d, e, at, "test_loss", false), 4));
        hetcl__rw_cell(w, "%s", pct(f, sizeof f, hetcl__rd_number(r->d, e, at, "test_acc", false)));
        hetcl__rw_cell(w, "%s",
                       num(g, sizeof g, hetcl__rd_number(r->d, e, at, "examples_per_s", false), 4));
    }
    hetcl__rw_table_end(w);
}

static void devices_table(struct rw *w, struct run *r)
{
    static const char *const h[] = {"device",
                                    "name",
                                    "kind",
                                    "updates",
                                    "share",
                                    "examples",
                                    "batch (first → last, range)",
                                    "busy (s)",
                                    "utilisation",
                                    "bytes in",
                                    "bytes out"};
    hetcl__rw_table(w, h, sizeof h / sizeof h[0]);
    const cJSON *dv;
    size_t i = 0;
    cJSON_ArrayForEach(dv, r->devices)
    {
        struct report_doc *d = r->d;
        char at[64], tat[96], a[32], b[32], c[32], e[32], f[32], g[32];
        hetcl__rd_index_path(at, sizeof at, "$.devices", i++);
        hetcl__rw_row(w);
        hetcl__rw_cell(w, "%s", hetcl__rd_string(d, dv, at, "id"));
        hetcl__rw_cell(w, "%s", hetcl__rd_string(d, dv, at, "name"));
        hetcl__rw_cell(w, "%s", hetcl__rd_string(d, dv, at, "kind"));
        hetcl__rw_cell(w, "%s",
                       num(a, sizeof a, hetcl__rd_number(d, dv, at, "updates", false), 12));
        hetcl__rw_cell(w, "%s",
                       pct(b, sizeof b, hetcl__rd_number(d, dv, at, "update_share", false)));
        hetcl__rw_cell(w, "%s",
                       num(c, sizeof c, hetcl__rd_number(d, dv, at, "examples", false), 12));
        const cJSON *traj = hetcl__rd_array(d, dv, at, "batch_trajectory"), *p;
        double first = NAN, last = NAN, lo = INFINITY, hi = -INFINITY;
        size_t k = 0;
        hetcl__rd_member_path(tat, sizeof tat, at, "batch_trajectory");
        cJSON_ArrayForEach(p, traj)
        {
            char pat[128];
            hetcl__rd_index_path(pat, sizeof pat, tat, k++);
            double bsz = hetcl__rd_number(d, p, pat, "batch", false);
            if (isnan(first))
                first = bsz;
            last = bsz;
            lo = fmin(lo, bsz);
            hi = fmax(hi, bsz);
        }
        if (k)
            hetcl__rw_cell(w, "%.0f → %.0f (%.0f..%.0f)", first, last, lo, hi);
        else
            hetcl__rw_cell(w, "n/a");
        hetcl__rw_cell(w, "%s", num(e, sizeof e, hetcl__rd_number(d, dv, at, "busy_s", false), 4));
        hetcl__rw_cell(w, "%s",
                       pct(f, sizeof f, hetcl__rd_number(d, dv, at, "utilisation", false)));
        hetcl__rw_cell(w, "%s", bytes(g, sizeof g, hetcl__rd_number(d, dv, at, "bytes_in", false)));
        hetcl__rw_cell(w, "%s",
                       bytes(a, sizeof a, hetcl__rd_number(d, dv, at, "bytes_out", false)));
    }
    hetcl__rw_table_end(w);
}

/* x = epochs[].wall_s, y = epochs[].<field>; the arrays are owned by the caller. */
static size_t epoch_series(struct run *r, const char *field, double scale, double **x, double **y)
{
    size_t n = (size_t) cJSON_GetArraySize(r->epochs), i = 0;
    *x = hetcl__calloc(n ? n : 1, sizeof **x);
    *y = hetcl__calloc(n ? n : 1, sizeof **y);
    if (!*x || !*y)
        return 0;
    const cJSON *e;
    cJSON_ArrayForEach(e, r->epochs)
    {
        char at[64];
        hetcl__rd_index_path(at, sizeof at, "$.epochs", i);
        (*x)[i] = hetcl__rd_number(r->d, e, at, "wall_s", false);
        (*y)[i] = hetcl__rd_number(r->d, e, at, field, false) * scale;
        i++;
    }
    return n;
}

static void curves_charts(struct rw *w, struct run *runs, size_t n)
{
    /* Loss: train and test per run; accuracy: test per run, and the target. */
    struct svg_series *ls = hetcl__calloc(2 * n, sizeof *ls),
                      *as = hetcl__calloc(n + 1, sizeof *as);
    char(*names)[200] = hetcl__calloc(3 * n, sizeof *names);
    double **bufs = hetcl__calloc(6 * n, sizeof *bufs);
    if (!ls || !as || !names || !bufs) {
        w->b->failed = true;
        goto done;
    }
    double tmax = 0, target = NAN;
    for (size_t i = 0; i < n; i++) {
        struct run *r = &runs[i];
        const char *pre = n > 1 ? r->label : "";
        const char *sep = n > 1 ? ": " : "";
        snprintf(names[3 * i], sizeof names[0], "%s%strain loss", pre, sep);
        snprintf(names[3 * i + 1], sizeof names[0], "%s%stest loss", pre, sep);
        snprintf(names[3 * i + 2], sizeof names[0], "%s%stest accuracy (%%)", pre, sep);
        size_t m = epoch_series(r, "train_loss", 1, &bufs[6 * i], &bufs[6 * i + 1]);
        ls[2 * i] =
                (struct svg_series){names[3 * i], bufs[6 * i], bufs[6 * i + 1], m, false, false};
        m = epoch_series(r, "test_loss", 1, &bufs[6 * i + 2], &bufs[6 * i + 3]);
        ls[2 * i + 1] = (struct svg_series){
                names[3 * i + 1], bufs[6 * i + 2], bufs[6 * i + 3], m, false, false};
        m = epoch_series(r, "test_acc", 100, &bufs[6 * i + 4], &bufs[6 * i + 5]);
        as[i] = (struct svg_series){
                names[3 * i + 2], bufs[6 * i + 4], bufs[6 * i + 5], m, false, false};
        for (size_t k = 0; k < m; k++)
            tmax = fmax(tmax, bufs[6 * i][k]);
        double ta = hetcl__rd_number(r->d, r->stop, "$.config.stop", "target_acc", true);
        if (!isnan(ta))
            target = ta;
    }
    struct svg_line_chart lc = {.title = "Loss against wall time",
                                .x_label = "wall time (s)",
                                .y_label = "loss",
                                .series = ls,
                                .n_series = 2 * n,
                                .y_min = NAN,
                                .y_max = NAN,
                                .y_zero = true};
    hetcl__svg_line_chart(hetcl__rw_chart_buf(w), &lc);
    double tx[2] = {0, tmax}, ty[2] = {target * 100, target * 100};
    size_t n_acc = n;
    if (!isnan(target) && tmax > 0)
        as[n_acc++] = (struct svg_series){"target accuracy", tx, ty, 2, true, false};
    struct svg_line_chart ac = {.title = "Test accuracy against wall time",
                                .x_label = "wall time (s)",
                                .y_label = "test accuracy (%)",
                                .series = as,
                                .n_series = n_acc,
                                .y_min = NAN,
                                .y_max = NAN};
    hetcl__svg_line_chart(hetcl__rw_chart_buf(w), &ac);
done:
    for (size_t i = 0; bufs && i < 6 * n; i++)
        hetcl__free(bufs[i]);
    hetcl__free(bufs);
    hetcl__free(names);
    hetcl__free(ls);
    hetcl__free(as);
}

/* Each device's update share over time and its batch size over time, for one run. */
static void device_charts(struct rw *w, struct run *r)
{
    struct report_doc *d = r->d;
    size_t nd = (size_t) cJSON_GetArraySize(r->devices);
    size_t np = (size_t) cJSON_GetArraySize(r->share_points);
    struct svg_series *ss = hetcl__calloc(nd ? nd : 1, sizeof *ss),
                      *bs = hetcl__calloc(nd ? nd : 1, sizeof *bs);
    double *t = hetcl__calloc(np ? np : 1, sizeof *t), *sh = hetcl__calloc(nd * np + 1, sizeof *sh);
    double **traj = hetcl__calloc(2 * nd + 1, sizeof *traj);
    if (!ss || !bs || !t || !sh || !traj) {
        w->b->failed = true;
        goto done;
    }
    const cJSON *p;
    size_t k = 0;
    cJSON_ArrayForEach(p, r->share_points)
    {
        char at[80];
        hetcl__rd_index_path(at, sizeof at, "$.share_over_time.points", k);
        t[k] = hetcl__rd_number(d, p, at, "t_s", false);
        const cJSON *shares = hetcl__rd_array(d, p, at, "shares");
        if (shares && (size_t) cJSON_GetArraySize(shares) != nd) {
            char f[96];
            hetcl__rd_member_path(f, sizeof f, at, "shares");
            hetcl__report_doc_error(d, f, "expected %zu shares (one per device), got %d", nd,
                                    cJSON_GetArraySize(shares));
        }
        for (size_t j = 0; j < nd; j++) {
            const cJSON *v = cJSON_GetArrayItem(shares, (int) j);
            sh[j * np + k] = cJSON_IsNumber(v) ? v->valuedouble * 100 : (double) NAN;
        }
        k++;
    }
    const cJSON *dv;
    size_t j = 0;
    cJSON_ArrayForEach(dv, r->devices)
    {
        char at[64], tat[96];
        hetcl__rd_index_path(at, sizeof at, "$.devices", j);
        const char *id = hetcl__rd_string(d, dv, at, "id");
        ss[j] = (struct svg_series){id, t, sh + j * np, np, false, false};
        const cJSON *tr = hetcl__rd_array(d, dv, at, "batch_trajectory"), *q;
        size_t m = (size_t) cJSON_GetArraySize(tr), i = 0;
        traj[2 * j] = hetcl__calloc(m ? m : 1, sizeof **traj);
        traj[2 * j + 1] = hetcl__calloc(m ? m : 1, sizeof **traj);
        if (!traj[2 * j] || !traj[2 * j + 1]) {
            w->b->failed = true;
            goto done;
        }
        hetcl__rd_member_path(tat, sizeof tat, at, "batch_trajectory");
        cJSON_ArrayForEach(q, tr)
        {
            char pat[128];
            hetcl__rd_index_path(pat, sizeof pat, tat, i);
            traj[2 * j][i] = hetcl__rd_number(d, q, pat, "t_s", false);
            traj[2 * j + 1][i] = hetcl__rd_number(d, q, pat, "batch", false);
            i++;
        }
        bs[j] = (struct svg_series){id, traj[2 * j], traj[2 * j + 1], m, true, true};
        j++;
    }
    char title[256];
    snprintf(title, sizeof title, "Update share per device over time: %s", r->label);
    struct svg_line_chart sc = {.title = title,
                                .x_label = "wall time (s)",
                                .y_label = "share of updates in the window (%)",
                                .series = ss,
                                .n_series = nd,
                                .y_min = 0,
                                .y_max = 100};
    hetcl__svg_line_chart(hetcl__rw_chart_buf(w), &sc);
    snprintf(title, sizeof title, "Batch size per device over time: %s", r->label);
    struct svg_line_chart bc = {.title = title,
                                .x_label = "wall time (s)",
                                .y_label = "batch size (examples)",
                                .series = bs,
                                .n_series = nd,
                                .y_min = NAN,
                                .y_max = NAN,
                                .y_zero = true};
    hetcl__svg_line_chart(hetcl__rw_chart_buf(w), &bc);
done:
    for (size_t i = 0; traj && i < 2 * nd; i++)
        hetcl__free(traj[i]);
    hetcl__free(traj);
    hetcl__free(ss);
    hetcl__free(bs);
    hetcl__free(t);
    hetcl__free(sh);
}

void hetcl__render_train(struct rw *w, struct report_doc *docs, size_t n)
{
    struct run *runs = hetcl__calloc(n, sizeof *runs);
    if (!runs) {
        w->b->failed = true;
        return;
    }
    for (size_t i = 0; i < n; i++)
        read_run(&docs[i], &runs[i], n > 1);
    for (size_t i = 0; i < n; i++)
        if (docs[i].failed)
            goto done;
    if (n == 1)
        hetcl__rw_heading(w, 1, "hetcl train: %s on %s, %s", runs[0].model, runs[0].dataset,
                          runs[0].algo);
    else
        hetcl__rw_heading(w, 1, "hetcl train: %zu runs", n);
    for (size_t i = 0; i < n; i++)
        hetcl__rw_para(w, "Report %s (%s, schema version %d), written %s by hetcl %s.",
                       docs[i].path, docs[i].kind, docs[i].schema_version, docs[i].generated_at,
                       docs[i].hetcl_version);
    for (size_t i = 0; i < n; i++)
        slowdown_warnings(w, &runs[i]);
    if (n > 1) {
        hetcl__rw_heading(w, 2, "Runs");
        runs_table(w, runs, n);
    }
    if (hetcl__rw_charts(w)) {
        hetcl__rw_heading(w, 2, "Learning curves");
        curves_charts(w, runs, n);
    }
    for (size_t i = 0; i < n; i++) {
        struct run *r = &runs[i];
        if (n > 1)
            hetcl__rw_heading(w, 2, "Run %s", r->label);
        hetcl__rw_heading(w, n > 1 ? 3 : 2, "Result");
        result_table(w, r);
        hetcl__rw_heading(w, n > 1 ? 3 : 2, "Configuration and provenance");
        config_table(w, r);
        hetcl__rw_heading(w, n > 1 ? 3 : 2, "Epochs");
        epochs_table(w, r);
        hetcl__rw_heading(w, n > 1 ? 3 : 2, "Devices");
        devices_table(w, r);
        if (hetcl__rw_charts(w))
            device_charts(w, r);
    }
done:
    hetcl__free(runs);
}
