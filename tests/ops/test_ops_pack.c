/*
 * Block packing (hetcl_op_block_pack: the device's side of the replica merge) on every worker
 * (host and OpenCL), against a naive reference written here from the format's definition: a
 * block has changed when one of its values differs in its bits. Cases with chosen changed
 * blocks: none, all (dense), only the last, partial block, one value that only changes its
 * sign of zero, a dense case with a block unchanged (the 4-byte indexes cost more than the
 * unchanged values save), a single short block, and random blocks of a larger tensor. Checked
 * exactly: the head (bitmap, count, values, dense flag), the packed prefix bit for bit, base
 * untouched where dense, and the guard after base. Bad arguments rejected.
 */
#include "harness.h"
#include "ops_util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static struct ops_env E;
static ref_rng rng;

/* One case: x differs from base in the blocks changed[j] != 0 (the last changed value of each
 * such block is the one changed; sign_zero: it goes from +0 to -0 instead). */
static void pack_case(const char *what, int64_t n, int64_t block, const bool *changed,
                      bool sign_zero)
{
    const int64_t n_blocks = (n + block - 1) / block;
    const int64_t words = hetcl_op_block_pack_head_words(n, block), n_words = words - 3;
    struct ops_buf b[2];
    ops_buf_alloc(&b[0], (size_t) n * 4, HETCL_R);
    ops_buf_alloc(&b[1], (size_t) (n + words) * 4, HETCL_RW);
    float *x = b[0].host, *base = b[1].host;
    ref_fill_uniform(&rng, base, (size_t) n, -1, 1);
    memset(base + n, 0xA5, (size_t) words * 4); /* the head: all written */
    memcpy(x, base, (size_t) n * 4);
    for (int64_t j = 0; j < n_blocks; j++) {
        if (!changed[j])
            continue;
        const int64_t last = j * block + block - 1 < n ? j * block + block - 1 : n - 1;
        if (sign_zero) {
            base[last] = 0.0f;
            x[last] = -0.0f;
        } else {
            x[last] = base[last] + 0.5f;
        }
    }
    float *base0 = malloc((size_t) n * 4);
    memcpy(base0, base, (size_t) n * 4);
    /* the reference */
    uint32_t *want = calloc((size_t) words, 4);
    uint64_t count = 0, values = 0;
    for (int64_t j = 0; j < n_blocks; j++) {
        const int64_t at = j * block, len = n - at < block ? n - at : block;
        bool diff = false;
        for (int64_t i = at; i < at + len; i++) {
            uint32_t u, v;
            memcpy(&u, &x[i], 4);
            memcpy(&v, &base0[i], 4);
            diff |= u != v;
        }
        CHECK(diff == changed[j]);
        if (diff) {
            want[j / 32] |= 1u << (j % 32);
            count++;
            values += (uint64_t) len;
        }
    }
    want[n_words] = (uint32_t) count;
    want[n_words + 1] = (uint32_t) values;
    want[n_words + 2] = values + count >= (uint64_t) n;
    struct hetcl_op_block_pack_args a = {.n = n, .block = block};
    CHECK_EQ_INT(ops_run(&E, &hetcl_op_block_pack, b, 2, &a, sizeof a), HETCL_OK);
    const uint32_t *head = (const uint32_t *) (const void *) (base + n);
    bool ok = memcmp(head, want, (size_t) words * 4) == 0;
    if (want[n_words + 2]) {
        ok &= memcmp(base, base0, (size_t) n * 4) == 0;
    } else {
        uint64_t o = 0;
        for (int64_t j = 0; j < n_blocks; j++)
            if (changed[j]) {
                const int64_t at = j * block, len = n - at < block ? n - at : block;
                ok &= memcmp(base + o, x + at, (size_t) len * 4) == 0;
                o += (uint64_t) len;
            }
    }
    printf("  %s: n %lld, block %lld: %llu changed, %llu values, %s: %s\n", what, (long long) n,
           (long long) block, (unsigned long long) count, (unsigned long long) values,
           want[n_words + 2] ? "dense" : "packed", ok ? "ok" : "WRONG");
    CHECK(ok);
    CHECK(ops_buf_guard_ok(&b[1], "block_pack"));
    ops_buf_free(&b[0]);
    ops_buf_free(&b[1]);
    free(base0);
    free(want);
}

static void test_pack(void)
{
    bool c[400];
    memset(c, 0, sizeof c);
    pack_case("none", 1000, 256, c, false);
    c[3] = true;
    pack_case("the last, partial block", 1000, 256, c, false);
    c[0] = c[2] = true;
    pack_case("first, third and last", 1000, 256, c, false);
    pack_case("sign of zero only", 1000, 256, c, true);
    c[1] = true;
    pack_case("all", 1000, 256, c, false);
    memset(c, 0, sizeof c);
    c[0] = c[1] = c[2] = c[4] = true;
    pack_case("dense with an unchanged block", 9, 2, c, false);
    c[0] = true;
    pack_case("one short block", 100, 256, c, false);
    for (int j = 0; j < 391; j++)
        c[j] = ref_rng_below(&rng, 10) < 3;
    pack_case("random 30% of blocks", 100003, 256, c, false);
    memset(c, 0, sizeof c);
    for (int j = 0; j < 40; j++)
        c[j] = j % 3 == 1;
    pack_case("every third block of one value", 40, 1, c, false);
}

static void test_bad_args(void)
{
    struct ops_buf b[2];
    ops_buf_alloc(&b[0], 64 * 4, HETCL_R);
    ops_buf_alloc(&b[1], 64 * 4, HETCL_RW); /* no room for the head */
    struct hetcl_op_block_pack_args a = {.n = 64, .block = 16};
    CHECK_EQ_INT(ops_run(&E, &hetcl_op_block_pack, b, 2, &a, sizeof a), HETCL_ERR_INVALID_ARG);
    a.block = 0;
    CHECK_EQ_INT(ops_run(&E, &hetcl_op_block_pack, b, 2, &a, sizeof a), HETCL_ERR_INVALID_ARG);
    ops_buf_free(&b[0]);
    ops_buf_free(&b[1]);
}

int main(void)
{
    ref_rng_init(&rng, hetcl_test_seed());
    ops_env_init_in(&E, "ops_pack");
    for (size_t w = 0; w < E.n_workers; w++) {
        if (!ops_env_use_worker(&E, w))
            continue;
        printf("block_pack\n");
        test_pack();
        test_bad_args();
    }
    ops_env_deinit(&E);
    return hetcl_test_finish("test_ops_pack");
}
