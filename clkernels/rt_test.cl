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
