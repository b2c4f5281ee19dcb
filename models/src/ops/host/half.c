/*
 * Half precision on the host: IEEE binary16 <-> binary32 in software (no F16C needed, so every
 * x86-64 and other architectures get the same bits), and the f16 operators, which widen to
 * float, run the float code (the host SGEMM, the bias+activation loops) and round the result
 * once to half: storage in half, accumulation in float, as <hetcl/ops.h> specifies.
 */
#include "host_ops.h"

#include <math.h>
#include <string.h>

uint16_t hetcl__f32_to_f16(float f)
{
    uint32_t x;
    memcpy(&x, &f, sizeof x);
    const uint16_t sign = (uint16_t) ((x >> 16) & 0x8000u);
    const uint32_t ax = x & 0x7fffffffu;
    if (ax >= 0x7f800000u) {
        /* inf stays inf; NaN stays NaN: quiet bit set, top payload bits kept */
        return (uint16_t) (sign | 0x7c00u |
                           (ax > 0x7f800000u ? 0x0200u | ((ax >> 13) & 0x3ffu) : 0u));
    }
    if (ax >= 0x47800000u) { /* >= 65536: beyond the largest finite half even before rounding */
        return (uint16_t) (sign | 0x7c00u);
    }
    if (ax < 0x38800000u) {
        /* below 2^-14: a half subnormal (units of 2^-24) or zero; at most 2^-25 (a tie with 0,
         * which is even) rounds to zero */
        if (ax <= 0x33000000u) {
            return sign;
        }
        const uint32_t e = ax >> 23, m = (ax & 0x7fffffu) | 0x800000u;
        const uint32_t shift = 126u - e; /* 14 .. 24 */
        uint32_t q = m >> shift;
        const uint32_t rem = m & ((1u << shift) - 1u), half = 1u << (shift - 1u);
        if (rem > half || (rem == half && (q & 1u))) {
            q++; /* may carry into the smallest normal, 0x0400: still the right encoding */
        }
        return (uint16_t) (sign | q);
    }
    /* normal: rebias the exponent, round 23 mantissa bits to 10, nearest even; a carry moves
     * into the exponent (and 65520 and above reach 0x7c00, infinity) */
    uint32_t q = ((ax >> 23) - 112u) << 10 | ((ax & 0x7fffffu) >> 13);
    const uint32_t rem = ax & 0x1fffu;
    if (rem > 0x1000u || (rem == 0x1000u && (q & 1u))) {
        q++;
    }
    return (uint16_t) (sign | q);
}

float hetcl__f16_to_f32(uint16_t h)
{
    const uint32_t sign = (uint32_t) (h & 0x8000u) << 16;
    const uint32_t e = (h >> 10) & 0x1fu, m = h & 0x3ffu;
    uint32_t x;
    if (e == 0) {
        /* zero or subnormal: m * 2^-24, exact in float */
        float v = (float) m * 0x1p-24f;
        memcpy(&x, &v, sizeof x);
        x |= sign;
    } else if (e == 31) {
        x = sign | 0x7f800000u | m << 13;
    } else {
        x = sign | (e + 112u) << 23 | m << 13;
    }
    float f;
    memcpy(&f, &x, sizeof f);
    return f;
}

void hetcl__f32_to_f16_n(const float *src, uint16_t *dst, int64_t n)
{
    for (int64_t i = 0; i < n; i++) {
        dst[i] = hetcl__f32_to_f16(src[i]);
    }
}

void hetcl__f16_to_f32_n(const uint16_t *src, float *dst, int64_t n)
{
    for (int64_t i = 0; i < n; i++) {
        dst[i] = hetcl__f16_to_f32(src[i]);
    }
}

/* Buffers: A, B, C half (C: beta == 0 ? W : RW). */
hetcl_status hetcl__op_gemm_f16_host(const struct hetcl_host_call *call)
{
    static const char op[] = "gemm_f16";
    hetcl_status s = hetcl__host_check_args(call, sizeof(struct hetcl_op_gemm_args), op);
    if (s != HETCL_OK) {
        return s;
    }
    const struct hetcl_op_gemm_args *g = call->args;
    int64_t na, nb, nc;
    const int64_t da[2] = {g->m, g->k}, db[2] = {g->k, g->n}, dc[2] = {g->m, g->n};
    if ((s = hetcl__host_count(call, op, "A", 2, da, &na)) != HETCL_OK ||
        (s = hetcl__host_count(call, op, "B", 2, db, &nb)) != HETCL_OK ||
        (s = hetcl__host_count(call, op, "C", 2, dc, &nc)) != HETCL_OK ||
        (s = hetcl__host_check_buf(call, op, 0, "A", na, 2)) != HETCL_OK ||
        (s = hetcl__host_check_buf(call, op, 1, "B", nb, 2)) != HETCL_OK ||
        (s = hetcl__host_check_buf(call, op, 2, "C", nc, 2)) != HETCL_OK) {
        return s;
    }
    if ((uint64_t) na + (uint64_t) nb + (uint64_t) nc > SIZE_MAX / sizeof(float)) {
        return hetcl__fail(hetcl__host_ctx(call), HETCL_ERR_INVALID_ARG, "%s: too large", op);
    }
    const size_t total = (size_t) (na + nb + nc);
    float *buf = hetcl__malloc((total ? total : 1) * sizeof *buf);
    if (!buf) {
        return hetcl__fail(hetcl__host_ctx(call), HETCL_ERR_NO_MEMORY,
                           "%s: %zu floats of widened operands", op, total);
    }
    float *a = buf, *b = buf + na, *c = buf + na + nb;
    uint16_t *ch = call->ptrs[2];
    hetcl__f16_to_f32_n(call->ptrs[0], a, na);
    hetcl__f16_to_f32_n(call->ptrs[1], b, nb);
    if (g->beta != 0.0f) {
        hetcl__f16_to_f32_n(ch, c, nc); /* beta == 0: C is not read */
    }
    s = hetcl__sgemm(hetcl__host_ctx(call), NULL, g->trans_a, g->trans_b, g->m, g->n, g->k,
                     g->alpha, a, g->trans_a ? g->m : g->k, b, g->trans_b ? g->k : g->n, g->beta, c,
                     g->n);
    if (s == HETCL_OK) {
        hetcl__f32_to_f16_n(c, ch, nc);
    }
    hetcl__free(buf);
    return s;
}

/* The forward of both variants: x (buffer 0) + bias (buffer 1) into y (buffer y_index, 0: in
 * place; each row is widened before it is written back). */
static hetcl_status bias_act_f16(const struct hetcl_host_call *call, const char *op,
                                 unsigned y_index)
{
    hetcl_status s = hetcl__host_check_args(call, sizeof(struct hetcl_op_bias_act_args), op);
    if (s != HETCL_OK) {
        return s;
    }
    const struct hetcl_op_bias_act_args *a = call->args;
    if (a->act != HETCL_ACT_NONE && a->act != HETCL_ACT_RELU && a->act != HETCL_ACT_SIGMOID &&
        a->act != HETCL_ACT_TANH) {
        return hetcl__fail(hetcl__host_ctx(call), HETCL_ERR_INVALID_ARG,
                           "%s: unknown activation %d", op, (int) a->act);
    }
    int64_t n;
    const int64_t dims[2] = {a->rows, a->cols};
    if ((s = hetcl__host_count(call, op, "x", 2, dims, &n)) != HETCL_OK ||
        (s = hetcl__host_check_buf(call, op, 0, "x", n, 2)) != HETCL_OK ||
        (s = hetcl__host_check_buf(call, op, 1, "bias", a->cols, 2)) != HETCL_OK ||
        (s = hetcl__host_check_buf(call, op, y_index, "y", n, 2)) != HETCL_OK) {
        return s;
    }
    if (n == 0) {
        return HETCL_OK;
    }
    if ((uint64_t) a->cols > SIZE_MAX / (2 * sizeof(float))) {
        return hetcl__fail(hetcl__host_ctx(call), HETCL_ERR_INVALID_ARG, "%s: too large", op);
    }
    /* one row at a time: the widened bias and one widened row */
    float *bias = hetcl__malloc((size_t) a->cols * 2 * sizeof *bias);
    if (!bias) {
        return hetcl__fail(hetcl__host_ctx(call), HETCL_ERR_NO_MEMORY,
                           "%s: %" PRId64 " floats of row buffers", op, 2 * a->cols);
    }
    float *row = bias + a->cols;
    const uint16_t *x = call->ptrs[0];
    uint16_t *y = call->ptrs[y_index];
    hetcl__f16_to_f32_n(call->ptrs[1], bias, a->cols);
    for (int64_t r = 0; r < a->rows; r++) {
        hetcl__f16_to_f32_n(x + r * a->cols, row, a->cols);
        hetcl__bias_act_rows(a->act, 0.0f, 0.0f, 1, a->cols, row, bias, row);
        hetcl__f32_to_f16_n(row, y + r * a->cols, a->cols);
    }
    hetcl__free(bias);
    return HETCL_OK;
}

/* Buffers: x, bias, y half. */
hetcl_status hetcl__op_bias_act_fwd_f16_host(const struct hetcl_host_call *call)
{
    return bias_act_f16(call, "bias_act_fwd_f16", 2);
}

/* Buffers: y (RW), bias half. */
hetcl_status hetcl__op_bias_act_fwd_f16_inplace_host(const struct hetcl_host_call *call)
{
    return bias_act_f16(call, "bias_act_fwd_f16_inplace", 0);
}

/* Buffers: logits half (R), probs float (W). */
hetcl_status hetcl__op_softmax_f16_host(const struct hetcl_host_call *call)
{
    static const char op[] = "softmax_f16";
    hetcl_status s = hetcl__host_check_args(call, sizeof(struct hetcl_op_xent_args), op);
    if (s != HETCL_OK) {
        return s;
    }
    const struct hetcl_op_xent_args *a = call->args;
    int64_t n;
    const int64_t dims[2] = {a->rows, a->classes};
    if (a->classes < 1) {
        return hetcl__fail(hetcl__host_ctx(call), HETCL_ERR_INVALID_ARG,
                           "%s: classes = %" PRId64 ", expected at least 1", op, a->classes);
    }
    if ((s = hetcl__host_count(call, op, "logits", 2, dims, &n)) != HETCL_OK ||
        (s = hetcl__host_check_buf(call, op, 0, "logits", n, 2)) != HETCL_OK ||
        (s = hetcl__host_check_buf(call, op, 1, "probs", n, 4)) != HETCL_OK) {
        return s;
    }
    const uint16_t *x = call->ptrs[0];
    float *y = call->ptrs[1];
    /* the probabilities widened in place, then exponentiated as the float softmax does */
    hetcl__f16_to_f32_n(x, y, n);
    for (int64_t r = 0; r < a->rows; r++) {
        float *row = y + r * a->classes, m = row[0], sum = 0.0f;
        for (int64_t c = 1; c < a->classes; c++) {
            m = row[c] > m ? row[c] : m;
        }
        for (int64_t c = 0; c < a->classes; c++) {
            row[c] = expf(row[c] - m);
            sum += row[c];
        }
        for (int64_t c = 0; c < a->classes; c++) {
            row[c] /= sum;
        }
    }
    return HETCL_OK;
}

/* Buffers: src float (R), dst half (W). */
hetcl_status hetcl__op_convert_f32_f16_host(const struct hetcl_host_call *call)
{
    static const char op[] = "convert_f32_f16";
    hetcl_status s = hetcl__host_check_args(call, sizeof(struct hetcl_op_axpy_args), op);
    if (s != HETCL_OK) {
        return s;
    }
    const struct hetcl_op_axpy_args *a = call->args;
    if ((s = hetcl__host_check_buf(call, op, 0, "src", a->n, 4)) != HETCL_OK ||
        (s = hetcl__host_check_buf(call, op, 1, "dst", a->n, 2)) != HETCL_OK) {
        return s;
    }
    hetcl__f32_to_f16_n(call->ptrs[0], call->ptrs[1], a->n);
    return HETCL_OK;
}

/* Buffers: src half (R), dst float (W). */
hetcl_status hetcl__op_convert_f16_f32_host(const struct hetcl_host_call *call)
{
    static const char op[] = "convert_f16_f32";
    hetcl_status s = hetcl__host_check_args(call, sizeof(struct hetcl_op_axpy_args), op);
    if (s != HETCL_OK) {
        return s;
    }
    const struct hetcl_op_axpy_args *a = call->args;
    if ((s = hetcl__host_check_buf(call, op, 0, "src", a->n, 2)) != HETCL_OK ||
        (s = hetcl__host_check_buf(call, op, 1, "dst", a->n, 4)) != HETCL_OK) {
        return s;
    }
    hetcl__f16_to_f32_n(call->ptrs[0], call->ptrs[1], a->n);
    return HETCL_OK;
}
