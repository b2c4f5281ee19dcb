/* Helpers for lab_gemm and test_gemm: see gemm_util.h. */
#include "gemm_util.h"

#include <math.h>
#include <stdio.h>

const struct gemm_tiles gemm_default_tiles = {
        /*        NN  NT  TN  TT */
        .tm = {8, 8, 8, 16},
        .tn = {32, 3, 32, 8},
};

const char *gemm_layout_name(enum gemm_layout l)
{
    static const char *const names[] = {"nn", "nt", "tn", "tt"};
    return (unsigned) l < GEMM_N_LAYOUTS ? names[l] : "?";
}

bool gemm_trans_a(enum gemm_layout l)
{
    return l == GEMM_TN || l == GEMM_TT;
}

bool gemm_trans_b(enum gemm_layout l)
{
    return l == GEMM_NT || l == GEMM_TT;
}

void gemm_tiles_options(const struct gemm_tiles *t, char *buf, size_t cap)
{
    snprintf(buf, cap,
             "-DNN_TM=%d -DNN_TN=%d -DNT_TM=%d -DNT_TN=%d -DTN_TM=%d -DTN_TN=%d -DTT_TM=%d "
             "-DTT_TN=%d",
             t->tm[GEMM_NN], t->tn[GEMM_NN], t->tm[GEMM_NT], t->tn[GEMM_NT], t->tm[GEMM_TN],
             t->tn[GEMM_TN], t->tm[GEMM_TT], t->tn[GEMM_TT]);
}

void gemm_problem_pack(struct gemm_problem *p)
{
    p->lda = gemm_trans_a(p->layout) ? p->M : p->K;
    p->ldb = gemm_trans_b(p->layout) ? p->K : p->N;
    p->ldc = p->N;
}

static size_t elems(int rows, int cols, int ld)
{
    return rows > 0 && cols > 0 ? (size_t) (rows - 1) * (size_t) ld + (size_t) cols : 0;
}

size_t gemm_a_elems(const struct gemm_problem *p)
{
    return gemm_trans_a(p->layout) ? elems(p->K, p->M, p->lda) : elems(p->M, p->K, p->lda);
}

size_t gemm_b_elems(const struct gemm_problem *p)
{
    return gemm_trans_b(p->layout) ? elems(p->N, p->K, p->ldb) : elems(p->K, p->N, p->ldb);
}

size_t gemm_c_elems(const struct gemm_problem *p)
{
    return elems(p->M, p->N, p->ldc);
}

double gemm_ref_elem(const struct gemm_problem *p, const float *A, const float *B, const float *C0,
                     int i, int j, double *scale)
{
    const bool ta = gemm_trans_a(p->layout), tb = gemm_trans_b(p->layout);
    double sum = 0.0, mag = 0.0;
    for (int k = 0; k < p->K; k++) {
        const double a = ta ? A[(size_t) k * p->lda + i] : A[(size_t) i * p->lda + k];
        const double b = tb ? B[(size_t) j * p->ldb + k] : B[(size_t) k * p->ldb + j];
        sum += a * b;
        mag += fabs(a * b);
    }
    double r = (double) p->alpha * sum;
    double s = fabs((double) p->alpha) * mag;
    if (p->beta != 0.0f) {
        const double c = (double) p->beta * (double) C0[(size_t) i * p->ldc + j];
        r += c;
        s += fabs(c);
    }
    if (scale)
        *scale = s;
    return r;
}

void gemm_ref_f64(const struct gemm_problem *p, const float *A, const float *B, const float *C0,
                  double *out, double *scale)
{
    for (int i = 0; i < p->M; i++) {
        for (int j = 0; j < p->N; j++) {
            const size_t at = (size_t) i * p->ldc + j;
            out[at] = gemm_ref_elem(p, A, B, C0, i, j, scale ? &scale[at] : NULL);
        }
    }
}

static size_t round_up(size_t n, size_t m)
{
    return (n + m - 1) / m * m;
}

cl_int gemm_enqueue(cl_command_queue q, cl_kernel k, bool naive, const struct gemm_tiles *t,
                    const struct gemm_problem *p, cl_mem a, cl_mem b, cl_mem c, const size_t *local,
                    cl_event *ev)
{
    const cl_int M = p->M, N = p->N, K = p->K, lda = p->lda, ldb = p->ldb, ldc = p->ldc;
    const cl_int ta = gemm_trans_a(p->layout), tb = gemm_trans_b(p->layout);
    cl_uint n = 0;
    cl_int err = CL_SUCCESS;
    err |= clSetKernelArg(k, n++, sizeof M, &M);
    err |= clSetKernelArg(k, n++, sizeof N, &N);
    err |= clSetKernelArg(k, n++, sizeof K, &K);
    err |= clSetKernelArg(k, n++, sizeof p->alpha, &p->alpha);
    err |= clSetKernelArg(k, n++, sizeof a, &a);
    err |= clSetKernelArg(k, n++, sizeof lda, &lda);
    if (naive)
        err |= clSetKernelArg(k, n++, sizeof ta, &ta);
    err |= clSetKernelArg(k, n++, sizeof b, &b);
    err |= clSetKernelArg(k, n++, sizeof ldb, &ldb);
    if (naive)
        err |= clSetKernelArg(k, n++, sizeof tb, &tb);
    err |= clSetKernelArg(k, n++, sizeof p->beta, &p->beta);
    err |= clSetKernelArg(k, n++, sizeof c, &c);
    err |= clSetKernelArg(k, n++, sizeof ldc, &ldc);
    if (err != CL_SUCCESS)
        return CL_INVALID_KERNEL_ARGS;
    if (M == 0 || N == 0)
        return CL_SUCCESS; /* nothing to compute; an empty range is an error in OpenCL 1.2 */
    const size_t tm = naive ? 1 : (size_t) t->tm[p->layout];
    const size_t tn = naive ? 1 : (size_t) t->tn[p->layout];
    size_t global[2] = {((size_t) N + tn - 1) / tn, ((size_t) M + tm - 1) / tm};
    if (local) {
        global[0] = round_up(global[0], local[0]);
        global[1] = round_up(global[1], local[1]);
    }
    return clEnqueueNDRangeKernel(q, k, 2, NULL, global, local, 0, NULL, ev);
}

size_t gemm_packed_bp_elems(const struct gemm_problem *p)
{
    const size_t n = ((size_t) p->N + 31) / 32 * 32 * (size_t) p->K;
    return n ? n : 1;
}

cl_int gemm_packed_enqueue(cl_command_queue q, const struct gemm_packed_kernels *k,
                           const struct gemm_problem *p, cl_mem a, cl_mem b, cl_mem c, cl_mem bp,
                           cl_event *ev)
{
    const cl_int M = p->M, N = p->N, K = p->K, lda = p->lda, ldb = p->ldb, ldc = p->ldc;
    const bool tb = gemm_trans_b(p->layout);
    cl_kernel pk = tb ? k->pack_bt : k->pack_bn, mk = gemm_trans_a(p->layout) ? k->at : k->an;
    cl_int err = CL_SUCCESS;
    err |= clSetKernelArg(pk, 0, sizeof N, &N);
    err |= clSetKernelArg(pk, 1, sizeof K, &K);
    err |= clSetKernelArg(pk, 2, sizeof b, &b);
    err |= clSetKernelArg(pk, 3, sizeof ldb, &ldb);
    err |= clSetKernelArg(pk, 4, sizeof bp, &bp);
    cl_uint n = 0;
    err |= clSetKernelArg(mk, n++, sizeof M, &M);
    err |= clSetKernelArg(mk, n++, sizeof N, &N);
    err |= clSetKernelArg(mk, n++, sizeof K, &K);
    err |= clSetKernelArg(mk, n++, sizeof p->alpha, &p->alpha);
    err |= clSetKernelArg(mk, n++, sizeof a, &a);
    err |= clSetKernelArg(mk, n++, sizeof lda, &lda);
    err |= clSetKernelArg(mk, n++, sizeof bp, &bp);
    err |= clSetKernelArg(mk, n++, sizeof p->beta, &p->beta);
    err |= clSetKernelArg(mk, n++, sizeof c, &c);
    err |= clSetKernelArg(mk, n++, sizeof ldc, &ldc);
    if (err != CL_SUCCESS)
        return CL_INVALID_KERNEL_ARGS;
    if (M == 0 || N == 0)
        return CL_SUCCESS;
    static const size_t local[2] = {1, 1};
    const size_t panels = ((size_t) N + 31) / 32, tiles = ((size_t) M + k->mr - 1) / k->mr;
    if (K > 0) {
        const size_t gp[2] = {((size_t) K + k->kc - 1) / k->kc, tb ? 2 * panels : panels};
        if ((err = clEnqueueNDRangeKernel(q, pk, 2, NULL, gp, local, 0, NULL, NULL)) != CL_SUCCESS)
            return err;
    }
    const size_t gm[2] = {k->m_fastest ? tiles : panels, k->m_fastest ? panels : tiles};
    return clEnqueueNDRangeKernel(q, mk, 2, NULL, gm, local, 0, NULL, ev);
}

float gemm_rand(uint64_t *state)
{
    uint64_t x = *state;
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    *state = x;
    const uint32_t r = (uint32_t) ((x * 0x2545F4914F6CDD1DULL) >> 40); /* 24 bits */
    return (float) r / (float) (1u << 23) - 1.0f;
}
