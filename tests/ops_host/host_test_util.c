/* Helpers of the host-operator tests: see host_test_util.h. */
#include "host_test_util.h"

#include <math.h>
#include <stdarg.h>

struct ht_buf ht_alloc(size_t n)
{
    struct ht_buf b = {0};
    b.base = malloc((n + 2 * HT_GUARD) * sizeof *b.base);
    if (!b.base) {
        fprintf(stderr, "out of memory (%zu elements)\n", n);
        abort();
    }
    for (size_t i = 0; i < n + 2 * HT_GUARD; i++) {
        b.base[i] = REF_GUARD_BITS;
    }
    b.p = b.base + HT_GUARD;
    b.n = n;
    return b;
}

void ht_free(struct ht_buf *b)
{
    free(b->base);
    b->base = NULL;
    b->p = NULL;
}

bool ht_guards_ok(const struct ht_buf *b, const char *what)
{
    for (size_t i = 0; i < HT_GUARD; i++) {
        if (b->base[i] != REF_GUARD_BITS) {
            fprintf(stderr, "%s: canary clobbered %zu element(s) before the buffer\n", what,
                    HT_GUARD - i);
            hetcl_test_failures++;
            return false;
        }
        if (b->base[HT_GUARD + b->n + i] != REF_GUARD_BITS) {
            fprintf(stderr, "%s: canary clobbered at element %zu after the end (n = %zu)\n", what,
                    i, b->n);
            hetcl_test_failures++;
            return false;
        }
    }
    return true;
}

void ht_call_init(struct ht_call *c, const void *args, size_t args_size, int n, ...)
{
    memset(c, 0, sizeof *c);
    va_list ap;
    va_start(ap, n);
    for (int i = 0; i < n; i++) {
        struct ht_buf *b = va_arg(ap, struct ht_buf *);
        c->ptrs[i] = b->p;
        c->sizes[i] = b->n * 4;
    }
    va_end(ap);
    c->call.rt = NULL;
    c->call.ptrs = c->ptrs;
    c->call.sizes = c->sizes;
    c->call.args = args;
    c->call.args_size = args_size;
}

bool ht_check_close(const char *what, const float *ref, const float *out, size_t n,
                    double nmse_bound, double max_bound)
{
    double nmse = ref_nmse(ref, out, n);
    size_t worst = 0;
    double maxe = ref_max_abs_err(ref, out, n, &worst);
    if (!(nmse <= nmse_bound) || !(maxe <= max_bound)) {
        fprintf(stderr,
                "%s: nmse %.3g (bound %.3g), max err %.3g (bound %.3g) at %zu: ref %.9g got "
                "%.9g\n",
                what, nmse, nmse_bound, maxe, max_bound, worst, n ? (double) ref[worst] : 0.0,
                n ? (double) out[worst] : 0.0);
        hetcl_test_failures++;
        return false;
    }
    return true;
}

bool ht_check_same(const char *what, const void *ref, const void *out, size_t n)
{
    const uint32_t *r = ref, *o = out;
    for (size_t i = 0; i < n; i++) {
        if (r[i] != o[i]) {
            fprintf(stderr, "%s: element %zu differs: expected 0x%08x, got 0x%08x\n", what, i,
                    (unsigned) r[i], (unsigned) o[i]);
            hetcl_test_failures++;
            return false;
        }
    }
    return true;
}

void ht_check_rejects(const char *what, ht_op_fn fn, struct ht_call *c, int n_buffers)
{
    void *saved[8] = {0};
    for (int i = 0; i < n_buffers; i++) {
        saved[i] = malloc(c->sizes[i] + 1);
        memcpy(saved[i], c->ptrs[i], c->sizes[i]);
    }
    for (int i = 0; i < n_buffers; i++) {
        if (c->sizes[i] < 4) {
            continue;
        }
        c->sizes[i] -= 4;
        hetcl_status s = fn(&c->call);
        c->sizes[i] += 4;
        if (s != HETCL_ERR_INVALID_ARG) {
            fprintf(stderr, "%s: buffer %d one element short: status %d, expected rejection\n",
                    what, i, (int) s);
            hetcl_test_failures++;
        }
    }
    c->call.args_size--;
    if (fn(&c->call) != HETCL_ERR_INVALID_ARG) {
        fprintf(stderr, "%s: argument blob one byte short was accepted\n", what);
        hetcl_test_failures++;
    }
    c->call.args_size++;
    for (int i = 0; i < n_buffers; i++) {
        if (memcmp(saved[i], c->ptrs[i], c->sizes[i]) != 0) {
            fprintf(stderr, "%s: buffer %d written by a rejected call\n", what, i);
            hetcl_test_failures++;
        }
        free(saved[i]);
    }
}

bool ht_check_rel(const char *what, const float *ref, const float *out, size_t n, double rel)
{
    for (size_t i = 0; i < n; i++) {
        double r = (double) ref[i], o = (double) out[i];
        if (!(fabs(r - o) <= rel * fabs(r) + 1e-37)) {
            fprintf(stderr, "%s: element %zu = %.9g, reference %.9g (relative bound %.3g)\n", what,
                    i, o, r, rel);
            hetcl_test_failures++;
            return false;
        }
    }
    return true;
}
