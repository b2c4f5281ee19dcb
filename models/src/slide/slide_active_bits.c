/*
 * The top mode's query over tables that keep their buckets as bitmaps (slide_lsh.h:
 * hetcl__lsh_retrieve_top_bits), for tables of few large buckets such as
 * models/slide-xc-simhash.json's (K 4: 16 buckets a table, each about a sixteenth of the 50k
 * neurons, so that the counting loop of slide_active.c reads 200 * 3k ids a query, one load,
 * increment and store each).
 *
 * Here the counts come from the L bitmaps: 64 neurons a vector of byte counters, each table's
 * bucket added under its 64 bits as a mask, four vectors held in registers across the L tables.
 * The cut follows from the counts' histogram as in slide_active.c. The set's order is the
 * order in which the ids of the L buckets are first seen (table by table, each bucket from its
 * start), and ties at the cut go to those seen first. That order is a neuron's place: the first
 * table whose bucket has it (a few bit tests) and where it stands in that table's ids (t->pos,
 * kept by the fill), so the neurons above the cut and those at it are sorted by place (a radix
 * sort) and the first ones at the cut taken. Where one count level holds most neurons (sorting
 * them all would cost more), the ids are read in first-seen order instead, but only until the
 * set is complete, a bit test each. Either way the same set in the same order as counting ids
 * (tested against the naive top mode in tests/slide/test_slide_lsh.c). hetcl__lsh_bits_pay
 * decides, per query, whether the bitmaps beat counting ids at all.
 */
#include "slide/slide_lsh.h"

#include <string.h>

#if defined(__x86_64__) || defined(__i386__)
#define BITS_X86 1
#include <immintrin.h>

#define AVX512BW __attribute__((target("avx512f,avx512bw")))

/* count[i] = the number of tables whose bucket row[table] has neuron i, for every i of the
 * words * 64 (words a multiple of 4). */
AVX512BW static void count_bits(const uint64_t *const *row, int l, int64_t words, uint8_t *count)
{
    const __m512i one = _mm512_set1_epi8(1);
    for (int64_t w = 0; w < words; w += 4) {
        __m512i c0 = _mm512_setzero_si512(), c1 = c0, c2 = c0, c3 = c0;
        for (int table = 0; table < l; table++) {
            const uint64_t *b = row[table] + w;
            /* 200 rows read side by side are more streams than the prefetchers follow: the
             * line after next, ahead */
            _mm_prefetch((const char *) (b + 16), _MM_HINT_T0);
            c0 = _mm512_mask_add_epi8(c0, (__mmask64) b[0], c0, one);
            c1 = _mm512_mask_add_epi8(c1, (__mmask64) b[1], c1, one);
            c2 = _mm512_mask_add_epi8(c2, (__mmask64) b[2], c2, one);
            c3 = _mm512_mask_add_epi8(c3, (__mmask64) b[3], c3, one);
        }
        _mm512_storeu_si512((void *) (count + w * 64), c0);
        _mm512_storeu_si512((void *) (count + w * 64 + 64), c1);
        _mm512_storeu_si512((void *) (count + w * 64 + 128), c2);
        _mm512_storeu_si512((void *) (count + w * 64 + 192), c3);
    }
}

/* gt and eq: bitmaps of the neurons counted above cut and at it. */
AVX512BW static void split_at(const uint8_t *count, int64_t words, int cut, uint64_t *gt,
                              uint64_t *eq)
{
    const __m512i c = _mm512_set1_epi8((char) cut);
    for (int64_t w = 0; w < words; w++) {
        const __m512i v = _mm512_loadu_si512((const void *) (count + w * 64));
        gt[w] = _mm512_cmpgt_epu8_mask(v, c);
        eq[w] = _mm512_cmpeq_epu8_mask(v, c);
    }
}
#endif /* x86 */

#ifdef BITS_X86
/* Sorts a[0 .. n) (each <= max) in place, least significant 11 bits first; tmp: n words. */
static void radix_sort(uint64_t *a, uint64_t *tmp, int64_t n, uint64_t max)
{
    enum { BITS = 11, RADIX = 1 << BITS };
    uint32_t count[RADIX];
    uint64_t *from = a, *to = tmp;
    for (int shift = 0; shift < 64 && (max >> shift) != 0; shift += BITS) {
        memset(count, 0, sizeof count);
        for (int64_t i = 0; i < n; i++)
            count[(from[i] >> shift) & (RADIX - 1)]++;
        uint32_t sum = 0;
        for (int d = 0; d < RADIX; d++) {
            const uint32_t c = count[d];
            count[d] = sum;
            sum += c;
        }
        for (int64_t i = 0; i < n; i++)
            to[count[(from[i] >> shift) & (RADIX - 1)]++] = from[i];
        uint64_t *x = from;
        from = to;
        to = x;
    }
    if (from != a)
        memcpy(a, from, (size_t) n * sizeof *a);
}

/* The first-seen places of the neurons of bitmap mask into keys, as table * n_neurons + place
 * (a bucket's ids lie in order in the table's ids, so that this is also where the id is in
 * t->ids); returns their number. First the first table whose bucket has each neuron (it is in
 * one, or it would have no count) and a prefetch of its place, then the places: one miss each
 * into t->pos otherwise, one after the other. ids: a scratch of as many. */
static int64_t places(const struct hetcl__lsh_tables *t, const uint64_t *const *row,
                      const uint64_t *mask, uint64_t *keys, int32_t *ids)
{
    const uint64_t n = (uint64_t) t->n_neurons;
    int64_t k = 0;
    for (int64_t w = 0; w < t->words; w++)
        for (uint64_t m = mask[w]; m; m &= m - 1) {
            const int32_t id = (int32_t) (w * 64 + __builtin_ctzll(m));
            const uint64_t bit = UINT64_C(1) << (id & 63);
            uint64_t table = 0;
            while (!(row[table][id >> 6] & bit))
                table++;
            keys[k] = table * n + (uint64_t) id;
            ids[k++] = id;
            __builtin_prefetch(t->pos + keys[k - 1]);
        }
    for (int64_t e = 0; e < k; e++)
        keys[e] = keys[e] - (uint64_t) ids[e] + (uint64_t) t->pos[keys[e]];
    return k;
}

/* The set from the places: those above the cut and the take_at first seen at it, in first-seen
 * order, after out[0 .. m). */
static int64_t by_places(const struct hetcl__lsh_tables *t, const uint64_t *const *row,
                         struct hetcl__lsh_scratch *s, int64_t take_at, int32_t *out, int64_t m)
{
    uint64_t *keys = s->keys, *tmp = s->keys + s->n;
    const uint64_t max = (uint64_t) t->l * (uint64_t) t->n_neurons;
    const int64_t n_gt = places(t, row, s->gt, keys, s->seen);
    const int64_t n_eq = places(t, row, s->eq, keys + n_gt, s->seen);
    if (take_at < n_eq)
        radix_sort(keys + n_gt, tmp, n_eq, max);
    const int64_t n_all = n_gt + take_at;
    radix_sort(keys, tmp, n_all, max);
    for (int64_t e = 0; e < n_all; e++) {
        const int32_t id = t->ids[keys[e]];
        s->stamp[id] = s->epoch;
        out[m++] = id;
    }
    return m;
}
#endif

bool hetcl__lsh_bits_usable(int l, int range_pow)
{
#ifdef BITS_X86
    __builtin_cpu_init();
    return l >= 1 && l <= 255 && range_pow <= 6 && __builtin_cpu_supports("avx512f") &&
           __builtin_cpu_supports("avx512bw");
#else
    (void) l, (void) range_pow;
    return false;
#endif
}

bool hetcl__lsh_bits_pay(const struct hetcl__lsh_tables *t, const uint32_t *buckets)
{
    /* The bitmaps read L * n / 8 bytes whatever the buckets hold; counting reads the ids. At
     * K 4, L 200, 50k neurons, buckets of 3.1k ids (625k a query) counting took 3.2-3.8x the
     * bitmaps' time (lab_slide_query, this repository's Xeon, thread CPU time): they pay from
     * about 165-195k ids, L * n / 64 rounded to the side of the bitmaps. Trained weights leave
     * many queries' buckets smaller than that. */
    uint64_t ids = 0;
    const size_t n_start = ((size_t) 1 << t->range_pow) + 1;
    for (int table = 0; table < t->l; table++) {
        const uint32_t *start = t->start + (size_t) table * n_start;
        ids += start[buckets[table] + 1] - start[buckets[table]];
    }
    return ids >= (uint64_t) t->l * (uint64_t) t->n_neurons / 64;
}

int64_t hetcl__lsh_retrieve_top_bits(const struct hetcl__lsh_tables *t, const uint32_t *buckets,
                                     const struct hetcl__active_rule *rule,
                                     struct hetcl__lsh_scratch *s, int32_t *out, int64_t m)
{
#ifdef BITS_X86
    const size_t n_buckets = (size_t) 1 << t->range_pow;
    const uint64_t *row[255];
    for (int table = 0; table < t->l; table++)
        row[table] = t->bits + ((size_t) table * n_buckets + buckets[table]) * (size_t) t->words;
    uint8_t *restrict count = s->count8;
    count_bits(row, t->l, t->words, count);
    /* the labels (out[0 .. m)) are in already: out of the counts, as the counting loop leaves
     * them out of its histogram */
    for (int64_t i = 0; i < m; i++)
        count[out[i]] = 0;
    uint32_t by_count[256] = {0};
    for (int64_t i = 0; i < t->n_neurons; i++)
        by_count[count[i]]++;
    /* the cut as slide_active.c's retrieve_top finds it */
    const int min_count = rule->threshold > 1 ? rule->threshold : 1;
    int cut = t->l;
    int64_t above = 0;
    while (cut > min_count && above + by_count[cut] < rule->top)
        above += by_count[cut--];
    const int64_t at_cut = rule->top - above;
    int64_t take_at = at_cut < (int64_t) by_count[cut] ? at_cut : (int64_t) by_count[cut];
    int64_t left = above + take_at;
    uint64_t *restrict gt = s->gt, *restrict eq = s->eq;
    split_at(count, t->words, cut, gt, eq);
    /* Few at and above the cut (the usual case: the top 1900 of 50k): their order from their
     * places; else (many at the cut, whose first-seen ones would be sorted out of them) the
     * buckets read in order until the set is complete. */
    if (above + (int64_t) by_count[cut] <= 2 * rule->top + 1024)
        return by_places(t, row, s, take_at, out, m);
    uint32_t *restrict stamp = s->stamp;
    const uint32_t epoch = s->epoch;
    for (int table = 0; table < t->l && left > 0; table++) {
        uint32_t nb;
        const int32_t *ids = hetcl__lsh_tables_bucket(t, table, buckets[table], &nb);
        for (uint32_t e = 0; e < nb && left > 0; e++) {
            const int32_t id = ids[e];
            const uint64_t bit = UINT64_C(1) << (id & 63);
            bool in;
            if (gt[id >> 6] & bit) { /* first seen: in */
                gt[id >> 6] &= ~bit;
                in = true;
            } else if (eq[id >> 6] & bit) { /* first seen at the cut: in while places last */
                eq[id >> 6] &= ~bit;
                in = take_at > 0;
                take_at -= in;
            } else {
                continue;
            }
            if (in) {
                stamp[id] = epoch;
                out[m++] = id;
                left--;
            }
        }
    }
    return m;
#else
    (void) t, (void) buckets, (void) rule, (void) s, (void) out;
    return m; /* never called: hetcl__lsh_bits_usable is false */
#endif
}
