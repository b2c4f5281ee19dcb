/* Tiny kernels for the task-graph runtime's tests and overhead benchmark. Unsigned arithmetic:
 * it wraps, as the host reference does. */

/* Does nothing: the cost of one task is the runtime's. */
__kernel void rt_empty(void)
{
}

/* x[i] = x[i] * a + b over n values: order-sensitive (a != 1), so a graph run in the wrong order
 * gives a different result. */
__kernel void rt_affine_u32(__global uint *x, uint a, uint b, uint n)
{
    const uint i = get_global_id(0);
    HETCL_GUARD(i, n);
    x[i] = x[i] * a + b;
}

/* dst[i] = dst[i] * a + src[i] over n values. */
__kernel void rt_axpy_u32(__global uint *dst, __global const uint *src, uint a, uint n)
{
    const uint i = get_global_id(0);
    HETCL_GUARD(i, n);
    dst[i] = dst[i] * a + src[i];
}

/* x[i] += b atomically: tasks in RW_CONCURRENT mode may run at the same time. */
__kernel void rt_atomic_add_u32(__global uint *x, uint b, uint n)
{
    const uint i = get_global_id(0);
    HETCL_GUARD(i, n);
    atomic_add(&x[i], b);
}

/* Keeps one work-item busy for `iters` steps of an LCG (a kernel of a chosen duration), and
 * stores the result so that the loop is not optimised away. */
__kernel void rt_spin_u32(__global uint *x, uint iters)
{
    uint v = x[0];
    for (uint i = 0; i < iters; i++)
        v = v * 1664525u + 1013904223u;
    if (get_global_id(0) == 0)
        x[0] = v;
}
