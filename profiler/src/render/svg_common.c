/* The frame, axes and number formats that the SVG charts share (svg_common.h, svg_chart.h). */
#include "render/svg_common.h"

#include <hetcl_internal/base.h>

#include <math.h>
#include <stdio.h>
#include <string.h>

/* Tableau 10: distinct, and readable by most colour-blind viewers. */
const char *const hetcl__svg_palette[SVG_PALETTE_SIZE] = {
        "#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f",
        "#edc948", "#b07aa1", "#ff9da7", "#9c755f", "#bab0ac"};
const char *const hetcl__svg_dashes[3] = {"", " stroke-dasharray=\"6 3\"",
                                          " stroke-dasharray=\"2 2\""};

/* Drops the trailing zeros of a decimal fraction ("12.50" -> "12.5", "3.000" -> "3"). */
static void strip_zeros(char *s)
{
    char *dot = strchr(s, '.');
    if (!dot)
        return;
    char *end = s + strlen(s);
    while (end > dot + 1 && end[-1] == '0')
        *--end = '\0';
    if (end == dot + 1)
        *dot = '\0';
}

/* v with 4 significant digits, in plain decimals. */
static void four_digits(char *out, size_t cap, double v)
{
    double a = fabs(v);
    int decimals = a == 0 ? 0 : 3 - (int) floor(log10(a));
    decimals = decimals < 0 ? 0 : decimals > 12 ? 12 : decimals;
    snprintf(out, cap, "%.*f", decimals, v);
    strip_zeros(out);
    if (!strcmp(out, "-0"))
        snprintf(out, cap, "0");
}

/* The SI prefix for magnitude a (at least 10^4; below that numbers read well as they are). */
static double si_unit(double a, const char **prefix)
{
    static const struct {
        double unit;
        const char *prefix;
    } si[] = {{1e12, "T"}, {1e9, "G"}, {1e6, "M"}, {1e3, "k"}};
    *prefix = "";
    if (a < 1e4)
        return 1;
    for (size_t i = 0; i < sizeof si / sizeof si[0]; i++)
        if (a >= si[i].unit) {
            *prefix = si[i].prefix;
            return si[i].unit;
        }
    return 1;
}

void hetcl__svg_num(char *out, size_t cap, double v)
{
    if (isnan(v)) {
        snprintf(out, cap, "n/a");
        return;
    }
    if (isinf(v)) {
        snprintf(out, cap, "%s", v > 0 ? "inf" : "-inf");
        return;
    }
    const char *prefix;
    double unit = si_unit(fabs(v), &prefix);
    char digits[48];
    four_digits(digits, sizeof digits, v / unit);
    snprintf(out, cap, "%s%s", digits, prefix);
}

void hetcl__svg_num_full(char *out, size_t cap, double v)
{
    if (!(fabs(v) >= 1000) || fabs(v) >= 1e18) {
        hetcl__svg_num(out, cap, v);
        return;
    }
    char digits[32], grouped[48];
    snprintf(digits, sizeof digits, "%.0f", fabs(v));
    size_t n = strlen(digits), k = 0;
    if (v < 0)
        grouped[k++] = '-';
    for (size_t i = 0; i < n; i++) {
        if (i > 0 && (n - i) % 3 == 0)
            grouped[k++] = ',';
        grouped[k++] = digits[i];
    }
    grouped[k] = '\0';
    snprintf(out, cap, "%s", grouped);
}

/* A tick step of 1, 2 or 5 times a power of ten giving about `target` intervals. */
static double nice_step(double range, int target)
{
    if (!(range > 0))
        return 1;
    double raw = range / target, p = pow(10, floor(log10(raw))), f = raw / p;
    return (f < 1.5 ? 1 : f < 3.5 ? 2 : f < 7.5 ? 5 : 10) * p;
}

void hetcl__svg_axis_linear(struct svg_axis *a, double lo, double hi, int target)
{
    memset(a, 0, sizeof *a);
    if (!(hi > lo)) {
        double pad = lo != 0 ? fabs(lo) * 0.1 : 1;
        lo -= pad;
        hi += pad;
    }
    double step = nice_step(hi - lo, target);
    a->lo = floor(lo / step) * step;
    a->hi = ceil(hi / step) * step;
    if (a->hi - a->lo < step * 0.5)
        a->hi = a->lo + step;
    for (size_t k = 0; a->n_ticks < SVG_MAX_TICKS; k++) {
        double t = a->lo + (double) k * step;
        if (t > a->hi + step * 1e-6)
            break;
        a->ticks[a->n_ticks++] = fabs(t) < step * 1e-9 ? 0 : t;
    }
    /* One prefix and one number of decimals for the whole axis, from its largest value and
     * its step: "0 50k 100k 150k", "0 0.25 0.5" -> "0.00 0.25 0.50" trimmed per label. */
    a->unit = si_unit(fmax(fabs(a->lo), fabs(a->hi)), &a->prefix);
    double rel = step / a->unit;
    a->decimals = rel >= 1 ? 0 : (int) ceil(-log10(rel) - 1e-9);
    if (a->decimals > 12)
        a->decimals = 12;
}

void hetcl__svg_axis_log(struct svg_axis *a, double lo, double hi)
{
    memset(a, 0, sizeof *a);
    a->log = true;
    a->unit = 1;
    a->prefix = "";
    if (!(lo > 0))
        lo = hi > 0 ? hi / 10 : 1;
    if (!(hi > lo)) {
        lo /= 2;
        hi = lo * 4;
    }
    double decades = log10(hi) - log10(lo);
    static const double all[] = {1, 2, 5}, one[] = {1};
    const double *mant = decades <= 3.5 ? all : one;
    size_t n_mant = decades <= 3.5 ? 3 : 1;
    int every = decades <= 8 ? 1 : (int) ceil(decades / 8);
    int k0 = (int) floor(log10(lo)), k1 = (int) ceil(log10(hi));
    k0 -= ((k0 % every) + every) % every; /* decades on a multiple of `every` */
    /* The candidates, ascending: the last one at or below lo starts the axis, the first one at
     * or above hi ends it. */
    a->lo = NAN;
    for (int k = k0; k <= k1 + every && a->n_ticks < SVG_MAX_TICKS; k += every)
        for (size_t m = 0; m < n_mant && a->n_ticks < SVG_MAX_TICKS; m++) {
            double t = mant[m] * pow(10, k);
            if (t <= lo * (1 + 1e-9)) {
                a->lo = t;
                a->n_ticks = 0;
            }
            if (!isnan(a->lo))
                a->ticks[a->n_ticks++] = t;
            if (t >= hi * (1 - 1e-9) && !isnan(a->lo)) {
                a->hi = t;
                return;
            }
        }
    a->hi = a->n_ticks ? a->ticks[a->n_ticks - 1] : hi; /* not reached with SVG_MAX_TICKS */
}

void hetcl__svg_axis_pin(struct svg_axis *a, double lo, double hi)
{
    a->lo = lo;
    a->hi = hi;
    size_t k = 0;
    for (size_t i = 0; i < a->n_ticks; i++) {
        double slack = (hi - lo) * 1e-9;
        if (a->ticks[i] >= lo - slack && a->ticks[i] <= hi + slack)
            a->ticks[k++] = a->ticks[i];
    }
    a->n_ticks = k;
}

double hetcl__svg_axis_frac(const struct svg_axis *a, double v)
{
    double f;
    if (a->log)
        f = v > 0 ? (log10(v) - log10(a->lo)) / (log10(a->hi) - log10(a->lo)) : 0;
    else
        f = (v - a->lo) / (a->hi - a->lo);
    return f < 0 ? 0 : f > 1 ? 1 : f;
}

void hetcl__svg_tick_label(const struct svg_axis *a, double v, char *out, size_t cap)
{
    if (a->log) {
        hetcl__svg_num(out, cap, v);
        return;
    }
    snprintf(out, cap, "%.*f", a->decimals, v / a->unit);
    strip_zeros(out);
    if (!strcmp(out, "-0"))
        snprintf(out, cap, "0");
    size_t len = strlen(out);
    if (v != 0)
        snprintf(out + len, cap - len, "%s", a->prefix);
}

double hetcl__svg_px(const struct svg_plot *p, double x)
{
    return p->left + hetcl__svg_axis_frac(&p->x, x) * p->w;
}

double hetcl__svg_py(const struct svg_plot *p, double y)
{
    return p->top + p->h - hetcl__svg_axis_frac(&p->y, y) * p->h;
}

/* An axis label, with ", log scale" for a log axis. */
static void axis_label(struct sbuf *b, const struct svg_axis *a, const char *label)
{
    hetcl__sb_html_text(b, label ? label : "");
    if (a->log)
        hetcl__sb_puts(b, ", log scale");
}

void hetcl__svg_plot_axes(struct sbuf *b, const struct svg_plot *p, const char *x_label,
                          const char *y_label)
{
    double right = p->left + p->w, bottom = p->top + p->h;
    hetcl__sb_puts(b, "<g stroke=\"#e5e5e5\" stroke-width=\"1\">\n");
    for (size_t i = 0; i < p->y.n_ticks; i++) {
        double y = hetcl__svg_py(p, p->y.ticks[i]);
        hetcl__sb_printf(b, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"/>\n", p->left, y,
                         right, y);
    }
    for (size_t i = 0; i < p->x.n_ticks; i++) {
        double x = hetcl__svg_px(p, p->x.ticks[i]);
        hetcl__sb_printf(b, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"/>\n", x, p->top,
                         x, bottom);
    }
    hetcl__sb_puts(b, "</g>\n<g fill=\"#444\" font-size=\"11\">\n");
    char label[64];
    for (size_t i = 0; i < p->y.n_ticks; i++) {
        hetcl__svg_tick_label(&p->y, p->y.ticks[i], label, sizeof label);
        hetcl__sb_printf(b,
                         "<text class=\"yt\" x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\">%s</text>\n",
                         p->left - 6, hetcl__svg_py(p, p->y.ticks[i]) + 4, label);
    }
    for (size_t i = 0; i < p->x.n_ticks; i++) {
        hetcl__svg_tick_label(&p->x, p->x.ticks[i], label, sizeof label);
        hetcl__sb_printf(
                b, "<text class=\"xt\" x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">%s</text>\n",
                hetcl__svg_px(p, p->x.ticks[i]), bottom + 16, label);
    }
    hetcl__sb_puts(b, "</g>\n");
    hetcl__sb_printf(b,
                     "<path d=\"M%.1f %.1f V%.1f H%.1f\" fill=\"none\" stroke=\"#333\" "
                     "stroke-width=\"1\"/>\n",
                     p->left, p->top, bottom, right);
    hetcl__sb_printf(b, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">", p->left + p->w / 2,
                     bottom + 36);
    axis_label(b, &p->x, x_label);
    hetcl__sb_printf(b,
                     "</text>\n<text transform=\"translate(16 %.1f) rotate(-90)\" "
                     "text-anchor=\"middle\">",
                     p->top + p->h / 2);
    axis_label(b, &p->y, y_label);
    hetcl__sb_puts(b, "</text>\n");
}

void hetcl__svg_open(struct sbuf *b, double h, const char *title)
{
    hetcl__sb_printf(b,
                     "<figure><svg width=\"%.0f\" height=\"%.0f\" "
                     "viewBox=\"0 0 %.0f %.0f\" role=\"img\" font-family=\"sans-serif\" "
                     "font-size=\"12\"><title>",
                     SVG_W, h, SVG_W, h);
    hetcl__sb_html_text(b, title);
    hetcl__sb_puts(b, "</title>\n<text x=\"10\" y=\"20\" font-size=\"14\" font-weight=\"bold\">");
    hetcl__sb_html_text(b, title);
    hetcl__sb_puts(b, "</text>\n");
}

void hetcl__svg_close(struct sbuf *b)
{
    hetcl__sb_puts(b, "</svg></figure>\n");
}

void hetcl__svg_no_data(struct sbuf *b, double y)
{
    hetcl__sb_printf(b, "<text x=\"%.0f\" y=\"%.0f\" fill=\"#888\">no data</text>\n",
                     SVG_W / 2 - 30, y);
}

void hetcl__svg_text_cut(struct sbuf *b, const char *s, size_t max_chars)
{
    size_t chars = 0, i = 0;
    for (; s[i] && chars < max_chars; i++)
        if (((unsigned char) s[i] & 0xc0) != 0x80)
            chars++;
    while (s[i] && ((unsigned char) s[i] & 0xc0) == 0x80)
        i++; /* finish the last character */
    if (!s[i]) {
        hetcl__sb_html_text(b, s);
        return;
    }
    /* Cut before the last counted character so the ellipsis fits. */
    size_t cut = i;
    do
        cut--;
    while (cut > 0 && ((unsigned char) s[cut] & 0xc0) == 0x80);
    char *tmp = hetcl__malloc(cut + 1);
    if (!tmp) {
        b->failed = true;
        return;
    }
    memcpy(tmp, s, cut);
    tmp[cut] = '\0';
    hetcl__sb_html_text(b, tmp);
    hetcl__sb_puts(b, "\xe2\x80\xa6");
    hetcl__free(tmp);
}
