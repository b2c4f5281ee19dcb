/*
 * SLIDE's active-set selection (slide_lsh.h): the labels, the union (or the neurons seen often
 * enough) of the buckets a query falls into, and random padding up to a minimum size.
 */
#include "slide/slide_lsh.h"

#include <hetcl_internal/base.h>
#include <hetcl_internal/prng.h>

#include <string.h>

hetcl_status hetcl__lsh_scratch_init(struct hetcl__lsh_scratch *s, int64_t n)
{
    memset(s, 0, sizeof *s);
    s->n = n;
    s->epoch = 1;
    s->stamp = hetcl__calloc((size_t) n, sizeof *s->stamp);
    s->count = hetcl__calloc((size_t) n, sizeof *s->count);
    s->seen = hetcl__malloc((size_t) n * sizeof *s->seen);
    const size_t words = (size_t) (n + 255) / 256 * 4;
    s->count8 = hetcl__malloc(words * 64);
    s->gt = hetcl__malloc(words * sizeof *s->gt);
    s->eq = hetcl__malloc(words * sizeof *s->eq);
    s->keys = hetcl__malloc(2 * (size_t) n * sizeof *s->keys);
    if (!s->stamp || !s->count || !s->seen || !s->count8 || !s->gt || !s->eq || !s->keys) {
        hetcl__lsh_scratch_deinit(s);
        return HETCL_ERR_NO_MEMORY;
    }
    return HETCL_OK;
}

void hetcl__lsh_scratch_deinit(struct hetcl__lsh_scratch *s)
{
    hetcl__free(s->stamp);
    hetcl__free(s->count);
    hetcl__free(s->seen);
    hetcl__free(s->count8);
    hetcl__free(s->gt);
    hetcl__free(s->eq);
    hetcl__free(s->keys);
    memset(s, 0, sizeof *s);
}

int64_t hetcl__lsh_active_cap(int64_t n, int l, int bucket_size, int n_lab,
                              const struct hetcl__active_rule *rule)
{
    int64_t found = (int64_t) l * bucket_size;
    if (rule->top > 0 && rule->top < found)
        found = rule->top;
    int64_t cap = (int64_t) n_lab + found + rule->random;
    if (cap < rule->min_active)
        cap = rule->min_active;
    return cap < n ? cap : n;
}

/* A fresh stamp: every neuron counts as out of the set. */
static void next_epoch(struct hetcl__lsh_scratch *s)
{
    if (++s->epoch == 0) { /* wrapped: old stamps could collide */
        memset(s->stamp, 0, (size_t) s->n * sizeof *s->stamp);
        s->epoch = 1;
    }
}

static int64_t retrieve(const struct hetcl__lsh_tables *t, const uint32_t *buckets,
                        const struct hetcl__active_rule *rule, struct hetcl__lsh_scratch *s,
                        int32_t *out, int64_t m)
{
    int64_t n_seen = 0;
    for (int table = 0; table < t->l; table++) {
        uint32_t nb;
        const int32_t *ids = hetcl__lsh_tables_bucket(t, table, buckets[table], &nb);
        for (uint32_t e = 0; e < nb; e++) {
            int32_t id = ids[e];
            if (s->stamp[id] == s->epoch)
                continue;
            if (rule->threshold <= 1) {
                s->stamp[id] = s->epoch;
                out[m++] = id;
                continue;
            }
            if (s->count[id]++ == 0)
                s->seen[n_seen++] = id;
            if (s->count[id] == rule->threshold) {
                s->stamp[id] = s->epoch;
                out[m++] = id;
            }
        }
    }
    for (int64_t e = 0; e < n_seen; e++)
        s->count[s->seen[e]] = 0;
    return m;
}

/* Top mode: every neuron of the L buckets counted, then the rule->top seen in the most buckets
 * (at least threshold of them) in the set: all those above the count the top-th one has, then
 * those at that count in the order they were first seen (so that the set does not depend on
 * anything but the tables and the query).
 *
 * The counting loop is the query's cost (at K 4, L 100 over 50k neurons it reads 312k ids), so
 * it is kept to a load, an increment and a store per id with no branch: the labels (out[0 .. m)
 * on entry) are not tested for but start at LABEL_BASE, so that their first sighting is not a
 * first sighting and they never enter seen; every id is written to seen and the end moves on
 * only for a count that was 0. The array pointers are held in locals, since the stores through
 * them could otherwise alias s's fields and force a reload per id. */
#define LABEL_BASE 1u /* any count but 0; + L <= 4096 stays below 2^16 */

static int64_t retrieve_top(const struct hetcl__lsh_tables *t, const uint32_t *buckets,
                            const struct hetcl__active_rule *rule, struct hetcl__lsh_scratch *s,
                            int32_t *out, int64_t m)
{
    uint16_t *restrict count = s->count;
    int32_t *restrict seen = s->seen;
    uint32_t *restrict stamp = s->stamp;
    const uint32_t epoch = s->epoch;
    const int64_t m_lab = m;
    for (int64_t i = 0; i < m_lab; i++)
        count[out[i]] = LABEL_BASE;
    int64_t n_seen = 0;
    for (int table = 0; table < t->l; table++) {
        uint32_t nb;
        const int32_t *restrict ids = hetcl__lsh_tables_bucket(t, table, buckets[table], &nb);
        for (uint32_t e = 0; e < nb; e++) {
            const int32_t id = ids[e];
            const uint16_t c = count[id];
            count[id] = (uint16_t) (c + 1);
            seen[n_seen] = id;
            n_seen += c == 0;
        }
    }
    /* by_count[c]: neurons seen in exactly c buckets (c <= L <= 4096); only its first L + 1
     * entries are cleared, once per query */
    uint32_t by_count[4097];
    memset(by_count, 0, (size_t) (t->l + 1) * sizeof *by_count);
    for (int64_t e = 0; e < n_seen; e++)
        by_count[count[seen[e]]]++;
    const int min_count = rule->threshold > 1 ? rule->threshold : 1;
    int cut = t->l;
    int64_t above = 0; /* neurons with a count above cut */
    while (cut > min_count && above + by_count[cut] < rule->top)
        above += by_count[cut--];
    int64_t at_cut = rule->top - above; /* how many of count cut still fit */
    /* the set in first-seen order; the counts are cleared on the way */
    for (int64_t e = 0; e < n_seen; e++) {
        const int32_t id = seen[e];
        const int c = count[id];
        count[id] = 0;
        if (c > cut || (c == cut && at_cut-- > 0)) {
            stamp[id] = epoch;
            out[m++] = id;
        }
    }
    for (int64_t i = 0; i < m_lab; i++)
        count[out[i]] = 0;
    return m;
}

int64_t hetcl__lsh_active(const struct hetcl__lsh_tables *t, const uint32_t *buckets,
                          const int32_t *lab, int n_lab, const struct hetcl__active_rule *rule,
                          struct hetcl__lsh_scratch *s, struct hetcl__rng *rng, int32_t *out,
                          int64_t *n_retrieved)
{
    next_epoch(s);
    int64_t m = 0;
    for (int i = 0; i < n_lab; i++)
        if (s->stamp[lab[i]] != s->epoch) {
            s->stamp[lab[i]] = s->epoch;
            out[m++] = lab[i];
        }
    const int64_t m_lab = m;
    if (t && rule->top > 0 && t->bits && hetcl__lsh_bits_pay(t, buckets))
        m = hetcl__lsh_retrieve_top_bits(t, buckets, rule, s, out, m);
    else if (t && rule->top > 0)
        m = retrieve_top(t, buckets, rule, s, out, m);
    else if (t)
        m = retrieve(t, buckets, rule, s, out, m);
    if (n_retrieved)
        *n_retrieved = m - m_lab;
    int64_t want = rule->min_active > m + rule->random ? rule->min_active : m + rule->random;
    want = want < s->n ? want : s->n;
    /* Random padding: rejection while it is cheap, then a scan from a random start, so that a
     * minimum close to n still ends. */
    for (int64_t tries = 4 * (want - m); m < want && tries > 0; tries--) {
        int32_t id = (int32_t) hetcl__rng_below(rng, (uint64_t) s->n);
        if (s->stamp[id] != s->epoch) {
            s->stamp[id] = s->epoch;
            out[m++] = id;
        }
    }
    int64_t from = m < want ? (int64_t) hetcl__rng_below(rng, (uint64_t) s->n) : 0;
    for (int64_t e = 0; m < want && e < s->n; e++) {
        int32_t id = (int32_t) ((from + e) % s->n);
        if (s->stamp[id] != s->epoch) {
            s->stamp[id] = s->epoch;
            out[m++] = id;
        }
    }
    return m;
}
