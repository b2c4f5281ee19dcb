/* Block packing (ops.h: hetcl_op_block_pack): which blocks of x differ from base, and the
 * changed blocks' values packed in block order at base's front, so that a host reading the
 * replica back takes the head and that prefix only.
 *
 *     block_flags   work-item j: flags[j] = 1 when a value of block j differs bitwise, else 0
 *     block_scan    one work-item: flags become offsets (the changed blocks before j, or
 *                   0xffffffff for an unchanged block); writes the head after base's n values
 *     block_pack    work-item (c, j): 8 values of block j to their packed place, unless the
 *                   head says dense
 *
 * The order of the packed blocks is the blocks' order whatever the device's scheduling: each
 * block's place comes from the one sequential prefix count. The scan is a single work-item: a
 * word per block (1/256 of the values), small beside the compare and copy over every value.
 */

#define UNCHANGED 0xffffffffu

__kernel void block_flags(int n, int block, int n_blocks, const __global uint *restrict x,
                          const __global uint *restrict base, __global uint *restrict flags)
{
    const int j = get_global_id(0);
    if (j >= n_blocks)
        return;
    const int at = j * block, len = min(n - at, block);
    const __global uint *a = x + at, *b = base + at;
    /* the bits, as memcmp compares them; no early exit, so that the loop vectorizes */
    uint8 acc = (uint8) (0);
    int i = 0;
    for (; i + 8 <= len; i += 8)
        acc |= vload8(0, a + i) ^ vload8(0, b + i);
    uint diff = acc.s0 | acc.s1 | acc.s2 | acc.s3 | acc.s4 | acc.s5 | acc.s6 | acc.s7;
    for (; i < len; i++)
        diff |= a[i] ^ b[i];
    flags[j] = diff != 0;
}

/* head: base's words from n on (bitmap, count, values, dense). */
__kernel void block_scan(int n, int block, int n_blocks, __global uint *restrict flags,
                         __global uint *restrict base)
{
    if (get_global_id(0) != 0)
        return;
    __global uint *head = base + n;
    const int n_words = (n_blocks + 31) / 32;
    uint count = 0, values = 0, word = 0;
    for (int j = 0; j < n_blocks; j++) {
        const uint f = flags[j];
        flags[j] = f ? count : UNCHANGED;
        if (f) {
            count++;
            values += (uint) min(block, n - j * block);
            word |= 1u << (j & 31);
        }
        if ((j & 31) == 31 || j == n_blocks - 1) {
            head[j >> 5] = word;
            word = 0;
        }
    }
    head[n_words] = count;
    head[n_words + 1] = values;
    /* the block-sparse format (values and a 4-byte index per block) not smaller: dense */
    head[n_words + 2] = (ulong) values + count >= (ulong) n;
}

/* Work-item (c, j): values [8c, 8c + 8) of block j to its packed place o * block + 8c, which
 * is at or below the block's own (o <= j) and never read here (x is the source). Reads the
 * head's dense flag, above base's n values. */
__kernel void block_pack(int n, int block, int n_words, const __global float *restrict x,
                         __global float *base, const __global uint *restrict offsets)
{
    const int c = get_global_id(0) * 8, j = get_global_id(1);
    const int at = j * block;
    if (at >= n || c >= block)
        return;
    const __global uint *head = (const __global uint *) (base + n);
    const uint o = offsets[j];
    const int len = min(n - at, block);
    if (head[n_words + 2] || o == UNCHANGED || c >= len)
        return;
    const __global float *src = x + at + c;
    __global float *dst = base + (int) o * block + c;
    if (c + 8 <= len)
        vstore8(vload8(0, src), 0, dst);
    else
        for (int i = 0; i < len - c; i++)
            dst[i] = src[i];
}
