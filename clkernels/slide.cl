/* SLIDE's rehash of every output neuron (models/src/slide/slide_cl.c): the L bucket indices of
 * each weight row w[n][dim], the same bits as the host's hetcl__lsh_hash_dense
 * (models/src/slide/slide_hash.c) from the same family passed as buffers.
 *
 *     slide_simhash   work-item (a, t): neuron a's table t, K signed sums over proj_len
 *                     coordinates each, summed in the host's order (the signs are +-1, so a
 *                     contracted multiply-add rounds as the host's multiply then add)
 *     slide_dwta_bins work-item (a, b): bin b of neuron a, the place of its largest non-zero
 *                     (the smaller place on a tie), 0xff when the bin saw no non-zero
 *     slide_dwta_pack work-item (a, t): table t's K codes, an empty bin densified from a filled
 *                     one (the host's probes, then its cyclic scan; all 0 for a zero row)
 *
 * Work-item per (neuron, table) or (neuron, bin) rather than per neuron: K L up to 4096 codes
 * do not fit a work-item's private memory, and 50k neurons times L tables is enough parallel
 * work for any device.
 */

#define DWTA_BIN    8
#define DWTA_BITS   3
#define DWTA_PROBES 100
#define DWTA_EMPTY  0xff

__kernel void slide_simhash(__global const float *w, int n, int dim, int k, int l,
                            __global const int *proj_idx, __global const char *proj_sign,
                            int proj_len, __global uint *buckets)
{
    const int a = (int) get_global_id(0), t = (int) get_global_id(1);
    if (a >= n || t >= l)
        return;
    __global const float *x = w + (long) a * dim;
    uint b = 0;
    for (int j = 0; j < k; j++) {
        const long q = (long) (t * k + j) * proj_len;
        float sum = 0.0f;
        for (int i = 0; i < proj_len; i++)
            sum += (float) proj_sign[q + i] * x[proj_idx[q + i]];
        b = (b << 1) | (sum >= 0.0f ? 0u : 1u);
    }
    buckets[(long) a * l + t] = b;
}

/* perm[q]: the coordinate at position q of the permutations laid end to end (n_perm * dim). */
__kernel void slide_dwta_bins(__global const float *w, int n, int dim, int n_bins,
                              __global const int *perm, int n_pos, __global uchar *raw)
{
    const int a = (int) get_global_id(0), bin = (int) get_global_id(1);
    if (a >= n || bin >= n_bins)
        return;
    __global const float *x = w + (long) a * dim;
    float best = 0.0f;
    uint code = DWTA_EMPTY;
    /* The bin's positions: q / 8 == bin + m * n_bins, folded as the host folds them. */
    for (long base = (long) bin * DWTA_BIN; base < n_pos; base += (long) n_bins * DWTA_BIN)
        for (uint place = 0; place < DWTA_BIN && base + place < n_pos; place++) {
            const float v = x[perm[base + place]];
            if (v != 0.0f &&
                (code == DWTA_EMPTY || v > best || (v == best && place < code))) {
                best = v;
                code = place;
            }
        }
    raw[(long) a * n_bins + bin] = (uchar) code;
}

/* The host's probe(): a splitmix64 finaliser of the seed, the bin and the attempt. */
inline uint dwta_probe(ulong seed, uint b, uint attempt, uint n_bins)
{
    ulong z = seed ^ (((ulong) b << 32) | attempt);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9UL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebUL;
    z ^= z >> 31;
    return (uint) (z % n_bins);
}

__kernel void slide_dwta_pack(__global const uchar *raw, int n, int k, int l, ulong seed,
                              __global uint *buckets)
{
    const int a = (int) get_global_id(0), t = (int) get_global_id(1);
    if (a >= n || t >= l)
        return;
    const uint n_bins = (uint) (k * l);
    __global const uchar *r = raw + (long) a * n_bins;
    uint b = 0;
    for (int j = 0; j < k; j++) {
        const uint bin = (uint) (t * k + j);
        uint code = r[bin];
        for (uint at = 1; at <= DWTA_PROBES && code == DWTA_EMPTY; at++)
            code = r[dwta_probe(seed, bin, at, n_bins)];
        for (uint s = 1; s < n_bins && code == DWTA_EMPTY; s++)
            code = r[(bin + s) % n_bins];
        if (code == DWTA_EMPTY) /* a zero row: every code 0 */
            code = 0;
        b = (b << DWTA_BITS) | code;
    }
    buckets[(long) a * l + t] = b;
}
