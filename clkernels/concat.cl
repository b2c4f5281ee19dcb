/* Concatenation along rows (ops.h: hetcl_op_concat): y[r][offset + i] = x[r][in_offset + i] with
 * x [rows][in_cols], range (cols, rows), one element a work-item. */
__kernel void concat_f32(int rows, int cols, int out_cols, int offset, int in_cols, int in_offset,
                         const __global float *restrict x, __global float *restrict y)
{
    const int i = get_global_id(0), r = get_global_id(1);
    if (i >= cols || r >= rows)
        return;
    y[(size_t) r * out_cols + offset + i] = x[(size_t) r * in_cols + in_offset + i];
}
