/*
 * The elementwise operator with broadcasting (hetcl_op_eltwise: ONNX's Add and Mul) and the row
 * copy with an input offset (hetcl_op_concat's in_cols / in_offset: the slice of one network
 * input among several) and the batched product of two computed tensors (hetcl_op_matmul: ONNX's
 * MatMul with batch dimensions) on every worker (host and OpenCL), against a naive double-precision
 * reference written from the operands' shapes (numpy's rule: a dimension of 1 repeats), with a
 * guard after the output, and bad arguments rejected.
 */
#include "harness.h"
#include "ops_util.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static struct ops_env E;
static ref_rng rng;

static float *F(struct ops_buf *b)
{
    return b->host;
}

static int64_t count(const int64_t *d, int rank)
{
    int64_t n = 1;
    for (int i = 0; i < rank; i++)
        n *= d[i];
    return n;
}

/* The element of an operand of dims s (rank r, aligned with o) at the output's index i. */
static int64_t ref_index(const int64_t *o, const int64_t *s, int r, int64_t i)
{
    int64_t idx = 0, stride = 1;
    for (int d = r - 1; d >= 0; d--) {
        const int64_t k = i % o[d];
        i /= o[d];
        idx += (s[d] == 1 ? 0 : k) * stride;
        stride *= s[d];
    }
    return idx;
}

static double naive_act(hetcl_act act, double alpha, double z)
{
    switch (act) {
    case HETCL_ACT_RELU:
        return z > 0 ? z : 0;
    case HETCL_ACT_SIGMOID:
        return 1.0 / (1.0 + exp(-z));
    case HETCL_ACT_TANH:
        return tanh(z);
    case HETCL_ACT_RELU6:
        return z < 0 ? 0 : z > 6 ? 6 : z;
    case HETCL_ACT_LEAKY_RELU:
        return z >= 0 ? z : alpha * z;
    case HETCL_ACT_NONE:
    case HETCL_ACT_CLIP: /* not an eltwise activation: its operator refuses it */
        break;
    }
    return z;
}

/* rows examples of a [rows][da] (op) b [rows][db] (or one b for every row: b_shared),
 * per-example shapes da, db (rank r, 1 where broadcast). */
static void eltwise_case(int64_t rows, int r, const int64_t *da, const int64_t *db, bool b_shared,
                         hetcl_eltwise_kind kind, hetcl_act act)
{
    int64_t o[HETCL_OP_ELTWISE_MAX_RANK];
    for (int d = 0; d < r; d++)
        o[d] = da[d] > db[d] ? da[d] : db[d];
    const int64_t na = count(da, r), nb = count(db, r), no = count(o, r);
    const int64_t rows_b = b_shared ? 1 : rows;
    struct ops_buf b[3];
    ops_buf_alloc(&b[0], (size_t) (rows * na) * 4, HETCL_R);
    ops_buf_alloc(&b[1], (size_t) (rows_b * nb) * 4, HETCL_R);
    ops_buf_alloc(&b[2], (size_t) (rows * no) * 4, HETCL_W);
    ref_fill_uniform(&rng, F(&b[0]), (size_t) (rows * na), -3, 3);
    ref_fill_uniform(&rng, F(&b[1]), (size_t) (rows_b * nb), -3, 3);
    struct hetcl_op_eltwise_args a = {.rows = rows,
                                      .rank = r,
                                      .a_row = na,
                                      .b_row = b_shared ? 0 : nb,
                                      .kind = kind,
                                      .act = act,
                                      .alpha = 0.1f};
    for (int d = r - 1, sa = 1, sb = 1; d >= 0; d--) { /* contiguous strides, 0 where 1 */
        a.dims[d] = o[d];
        a.a_stride[d] = da[d] > 1 ? sa : 0;
        a.b_stride[d] = db[d] > 1 ? sb : 0;
        sa *= (int) da[d];
        sb *= (int) db[d];
    }
    float *ref = malloc((size_t) (rows * no + 1) * 4);
    for (int64_t n = 0; n < rows; n++)
        for (int64_t i = 0; i < no; i++) {
            const double u = F(&b[0])[n * na + ref_index(o, da, r, i)];
            const double v = F(&b[1])[(b_shared ? 0 : n * nb) + ref_index(o, db, r, i)];
            ref[n * no + i] =
                    (float) naive_act(act, 0.1, kind == HETCL_ELTWISE_MUL ? u * v : u + v);
        }
    char what[160];
    snprintf(what, sizeof what, "eltwise %s act %d rows %lld rank %d [%lld..] x [%lld..]%s",
             kind == HETCL_ELTWISE_MUL ? "mul" : "add", (int) act, (long long) rows, r,
             (long long) da[0], (long long) db[0], b_shared ? " (b shared)" : "");
    CHECK_OK(E.ctx, ops_run(&E, &hetcl_op_eltwise, b, 3, &a, sizeof a));
    ops_check(what, ref, F(&b[2]), (size_t) (rows * no), 1e-12, 1e-5);
    ops_buf_guard_ok(&b[2], what);
    free(ref);
    for (int i = 0; i < 3; i++)
        ops_buf_free(&b[i]);
}

static void test_eltwise(void)
{
    /* per-example shapes: same, either side broadcasting, both, a scalar, rank 1 to 4 */
    static const struct {
        int r;
        int64_t a[4], b[4];
    } cases[] = {
            {1, {1}, {1}},
            {1, {37}, {37}},
            {1, {37}, {1}},
            {2, {4, 5}, {1, 5}},
            {2, {4, 1}, {1, 5}},
            {3, {8, 7, 9}, {8, 1, 1}},
            {3, {1, 7, 9}, {8, 7, 9}},
            {3, {3, 1, 5}, {1, 4, 1}},
            {4, {2, 3, 4, 5}, {1, 3, 1, 5}},
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++)
        for (int k = 0; k < 2; k++) {
            const hetcl_eltwise_kind kind = k ? HETCL_ELTWISE_MUL : HETCL_ELTWISE_ADD;
            eltwise_case(3, cases[c].r, cases[c].a, cases[c].b, false, kind, HETCL_ACT_NONE);
            eltwise_case(1, cases[c].r, cases[c].a, cases[c].b, true, kind, HETCL_ACT_NONE);
        }
    static const hetcl_act acts[] = {HETCL_ACT_RELU, HETCL_ACT_SIGMOID, HETCL_ACT_TANH,
                                     HETCL_ACT_RELU6, HETCL_ACT_LEAKY_RELU};
    const int64_t a3[3] = {4, 6, 6}, b3[3] = {4, 1, 1};
    for (size_t i = 0; i < sizeof acts / sizeof acts[0]; i++)
        eltwise_case(5, 3, a3, b3, false, i % 2 ? HETCL_ELTWISE_MUL : HETCL_ELTWISE_ADD, acts[i]);
    eltwise_case(0, 3, a3, b3, false, HETCL_ELTWISE_ADD, HETCL_ACT_NONE); /* no rows */
}

/* y [rows][cols] = x [rows][in_cols] columns [in_offset, in_offset + cols), into columns
 * [offset, offset + cols) of y [rows][out_cols]. */
static void slice_case(int64_t rows, int64_t in_cols, int64_t in_offset, int64_t cols,
                       int64_t out_cols, int64_t offset)
{
    struct ops_buf b[2];
    ops_buf_alloc(&b[0], (size_t) (rows * in_cols) * 4, HETCL_R);
    ops_buf_alloc(&b[1], (size_t) (rows * out_cols) * 4, HETCL_RW);
    ref_fill_uniform(&rng, F(&b[0]), (size_t) (rows * in_cols), -1, 1);
    ref_fill_uniform(&rng, F(&b[1]), (size_t) (rows * out_cols), -1, 1);
    float *ref = malloc((size_t) (rows * out_cols + 1) * 4);
    memcpy(ref, F(&b[1]), (size_t) (rows * out_cols) * 4); /* the other columns are kept */
    for (int64_t r = 0; r < rows; r++)
        for (int64_t c = 0; c < cols; c++)
            ref[r * out_cols + offset + c] = F(&b[0])[r * in_cols + in_offset + c];
    const struct hetcl_op_concat_args a = {.rows = rows,
                                           .cols = cols,
                                           .out_cols = out_cols,
                                           .offset = offset,
                                           .in_cols = in_cols,
                                           .in_offset = in_offset};
    char what[128];
    snprintf(what, sizeof what, "concat rows %lld cols %lld from %lld of %lld to %lld of %lld",
             (long long) rows, (long long) cols, (long long) in_offset, (long long) in_cols,
             (long long) offset, (long long) out_cols);
    CHECK_OK(E.ctx, ops_run(&E, &hetcl_op_concat, b, 2, &a, sizeof a));
    ops_check(what, ref, F(&b[1]), (size_t) (rows * out_cols), 0.0, 0.0);
    ops_buf_guard_ok(&b[1], what);
    free(ref);
    for (int i = 0; i < 2; i++)
        ops_buf_free(&b[i]);
}

static void test_bad_args(void)
{
    struct ops_buf b[3];
    for (int i = 0; i < 3; i++) {
        ops_buf_alloc(&b[i], 8 * 4, i < 2 ? HETCL_R : HETCL_W);
        ref_fill_uniform(&rng, F(&b[i]), 8, 0, 1);
    }
    struct hetcl_op_eltwise_args a = {.rows = 2,
                                      .rank = 1,
                                      .dims = {4},
                                      .a_stride = {1},
                                      .b_stride = {1},
                                      .a_row = 4,
                                      .b_row = 4};
    CHECK_OK(E.ctx, ops_run(&E, &hetcl_op_eltwise, b, 3, &a, sizeof a));
    a.rank = 5;
    CHECK(ops_run(&E, &hetcl_op_eltwise, b, 3, &a, sizeof a) == HETCL_ERR_INVALID_ARG);
    a.rank = 1;
    a.kind = (hetcl_eltwise_kind) 2;
    CHECK(ops_run(&E, &hetcl_op_eltwise, b, 3, &a, sizeof a) == HETCL_ERR_INVALID_ARG);
    a.kind = HETCL_ELTWISE_ADD;
    a.act = HETCL_ACT_CLIP; /* bias_act's only: eltwise has no upper bound to take */
    CHECK(ops_run(&E, &hetcl_op_eltwise, b, 3, &a, sizeof a) == HETCL_ERR_INVALID_ARG);
    a.act = HETCL_ACT_NONE;
    a.a_row = 5; /* a's second row would end at 9 of 8 floats */
    CHECK(ops_run(&E, &hetcl_op_eltwise, b, 3, &a, sizeof a) == HETCL_ERR_INVALID_ARG);
    a.a_row = 4;
    a.dims[0] = 0;
    CHECK(ops_run(&E, &hetcl_op_eltwise, b, 3, &a, sizeof a) == HETCL_ERR_INVALID_ARG);
    a.dims[0] = 4;
    CHECK(ops_run(&E, &hetcl_op_eltwise, b, 3, &a, sizeof a - 1) == HETCL_ERR_INVALID_ARG);
    struct hetcl_op_concat_args c = {
            .rows = 2, .cols = 2, .out_cols = 2, .in_cols = 4, .in_offset = 3};
    CHECK(ops_run(&E, &hetcl_op_concat, b, 2, &c, sizeof c) == HETCL_ERR_INVALID_ARG);
    c.in_offset = 2;
    CHECK_OK(E.ctx, ops_run(&E, &hetcl_op_concat, b, 2, &c, sizeof c));
    for (int i = 0; i < 3; i++)
        ops_buf_free(&b[i]);
}

/* The batched product of two computed tensors (hetcl_op_matmul): each of the batch's matrices
 * against tests/ref's GEMM, a guard after y; k 0 gives zeros; bad sizes rejected. */
static void matmul_case(int64_t batch, int64_t m, int64_t n, int64_t k)
{
    const size_t na = (size_t) (batch * m * k), nb = (size_t) (batch * k * n),
                 ny = (size_t) (batch * m * n);
    struct ops_buf b[3];
    ops_buf_alloc(&b[0], na * 4, HETCL_R);
    ops_buf_alloc(&b[1], nb * 4, HETCL_R);
    ops_buf_alloc(&b[2], ny * 4, HETCL_W);
    ref_fill_uniform(&rng, F(&b[0]), na, -1, 1);
    ref_fill_uniform(&rng, F(&b[1]), nb, -1, 1);
    for (size_t i = 0; i < ny; i++)
        F(&b[2])[i] = NAN; /* every output written */
    float *want = calloc(ny + 1, sizeof *want);
    for (int64_t g = 0; g < batch; g++)
        ref_gemm(false, false, m, n, k, 1.0f, F(&b[0]) + g * m * k, k, F(&b[1]) + g * k * n, n,
                 0.0f, want + g * m * n, n);
    const struct hetcl_op_matmul_args a = {.batch = batch, .m = m, .n = n, .k = k};
    char what[96];
    snprintf(what, sizeof what, "matmul %lld x [%lld, %lld] x [%lld, %lld]", (long long) batch,
             (long long) m, (long long) k, (long long) k, (long long) n);
    CHECK_OK(E.ctx, ops_run(&E, &hetcl_op_matmul, b, 3, &a, sizeof a));
    ops_check(what, want, F(&b[2]), ny, 1e-12, 1e-5 * (double) (k + 1));
    ops_buf_guard_ok(&b[2], what);
    free(want);
    for (int i = 0; i < 3; i++)
        ops_buf_free(&b[i]);
}

static void test_matmul(void)
{
    matmul_case(2, 3, 3, 4); /* ONNX's test_matmul_3d */
    matmul_case(2, 3, 3, 4);
    matmul_case(5, 1, 7, 1);
    matmul_case(3, 17, 9, 33);
    matmul_case(1, 64, 65, 63);
    matmul_case(2, 4, 5, 0);
    matmul_case(0, 4, 5, 6);
    struct ops_buf b[3];
    ops_buf_alloc(&b[0], 2 * 3 * 4 * 4, HETCL_R);
    ops_buf_alloc(&b[1], 2 * 4 * 3 * 4, HETCL_R);
    ops_buf_alloc(&b[2], 2 * 3 * 3 * 4, HETCL_W);
    const struct hetcl_op_matmul_args big = {.batch = 2, .m = 3, .n = 3, .k = 5}; /* a, b short */
    CHECK_EQ_INT(ops_run(&E, &hetcl_op_matmul, b, 3, &big, sizeof big), HETCL_ERR_INVALID_ARG);
    const struct hetcl_op_matmul_args neg = {.batch = 2, .m = -3, .n = 3, .k = 4};
    CHECK_EQ_INT(ops_run(&E, &hetcl_op_matmul, b, 3, &neg, sizeof neg), HETCL_ERR_INVALID_ARG);
    for (int i = 0; i < 3; i++)
        ops_buf_free(&b[i]);
}

int main(void)
{
    ref_rng_init(&rng, hetcl_test_seed());
    ops_env_init_in(&E, "ops_eltwise");
    for (size_t w = 0; w < E.n_workers; w++) {
        if (!ops_env_use_worker(&E, w))
            continue;
        printf("eltwise\n");
        test_eltwise();
        printf("concat with an input offset (slice)\n");
        slice_case(3, 10, 4, 6, 6, 0);
        slice_case(5, 7, 0, 7, 7, 0);
        slice_case(4, 9, 2, 3, 8, 5);
        slice_case(1, 1, 0, 1, 1, 0);
        printf("matmul\n");
        test_matmul();
        printf("bad arguments\n");
        test_bad_args();
    }
    ops_env_deinit(&E);
    return hetcl_test_finish("test_ops_eltwise");
}
