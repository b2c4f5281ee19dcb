/*
 * The tiles of the direct convolution, written once and built per ISA: each of
 * conv2d_direct_{avx512,avx2,generic}.c defines the vector type and operations below, then
 * includes this file, which defines that ISA's hetcl_conv_kernel. Hence no include guard.
 *
 * Expected from the includer:
 *   CD_VEC             the vector type (CD_LANES floats)
 *   CD_LANES           floats per vector
 *   CD_ACC             accumulators a tile may keep (the register file less loads and broadcast)
 *   CD_NV_CAP          most vectors per tile
 *   CD_TARGET          the target attribute of the tiles (or nothing)
 *   CD_LOAD(p)         unaligned load of CD_LANES floats
 *   CD_STORE(p, v)     unaligned store
 *   CD_SET1(s)         broadcast
 *   CD_FMA(a, b, c)    a * b + c
 *   CD_ADD(a, b)       a + b
 *   CD_OB_MAX          channels per tile the driver aims at (<= HETCL_CONV_OB_MAX)
 *   CD_WOB, CD_WTB     the weight-gradient tile: channels x taps (accumulators CD_WOB CD_WTB)
 *   CD_KERNEL          the descriptor's name; CD_NAME its "name" string
 *
 * A tile of OB channels x NV vectors keeps OB NV accumulators in registers over the whole depth
 * (every input channel and kernel tap): per tap, NV loads of the input, OB broadcasts of the
 * weights and OB NV FMAs. The loops have constant bounds and are unrolled in full, so `acc`
 * stays in registers (checked in the disassembly of the release build: no spills).
 */

/* Without full unrolling, GCC 12 keeps `acc` in registers inside the depth loop but copies it
 * through the stack before and after (48 spills per tile: ~10% on LeNet's conv1, 25 taps). */
#if defined(__clang__)
#define CD_UNROLL _Pragma("unroll")
#elif defined(__GNUC__)
#define CD_UNROLL _Pragma("GCC unroll 16")
#else
#define CD_UNROLL
#endif

/* Vectors per wide tile of `ob` channels: the accumulator budget, capped. */
#define CD_NV(ob) (CD_ACC / (ob) < 1 ? 1 : CD_ACC / (ob) > CD_NV_CAP ? CD_NV_CAP : CD_ACC / (ob))

#define CD_DEFINE_TILE(fn, OB, NV)                                                             \
    CD_TARGET static void fn(int64_t taps, const int64_t *off, const float *x, const float *w, \
                             const float *bias, float *y, const int64_t *yoff)                 \
    {                                                                                          \
        CD_VEC acc[OB][NV];                                                                    \
        CD_UNROLL for (int b = 0; b < (OB); b++)                                               \
        {                                                                                      \
            const CD_VEC b0 = CD_SET1(bias ? bias[b] : 0.0f);                                  \
            CD_UNROLL for (int v = 0; v < (NV); v++)                                           \
            {                                                                                  \
                acc[b][v] = b0;                                                                \
            }                                                                                  \
        }                                                                                      \
        for (int64_t t = 0; t < taps; t++, w += (OB)) {                                        \
            const float *xs = x + off[t];                                                      \
            CD_VEC xv[NV];                                                                     \
            CD_UNROLL for (int v = 0; v < (NV); v++)                                           \
            {                                                                                  \
                xv[v] = CD_LOAD(xs + v * CD_LANES);                                            \
            }                                                                                  \
            CD_UNROLL for (int b = 0; b < (OB); b++)                                           \
            {                                                                                  \
                const CD_VEC wb = CD_SET1(w[b]);                                               \
                CD_UNROLL for (int v = 0; v < (NV); v++)                                       \
                {                                                                              \
                    acc[b][v] = CD_FMA(wb, xv[v], acc[b][v]);                                  \
                }                                                                              \
            }                                                                                  \
        }                                                                                      \
        CD_UNROLL for (int b = 0; b < (OB); b++)                                               \
        {                                                                                      \
            float *yb = y + yoff[b];                                                           \
            CD_UNROLL for (int v = 0; v < (NV); v++)                                           \
            {                                                                                  \
                CD_STORE(yb + v * CD_LANES,                                                    \
                         bias ? acc[b][v] : CD_ADD(CD_LOAD(yb + v * CD_LANES), acc[b][v]));    \
            }                                                                                  \
        }                                                                                      \
    }

/* The weight-gradient tile: CD_WOB x CD_WTB vector accumulators, per vector of positions CD_WOB
 * loads of dy and CD_WTB of x (one per tap), CD_WOB CD_WTB FMAs. */
CD_TARGET static void wtile(int64_t n_img, int64_t n_vec, const float *dy, int64_t ld_dy,
                            int64_t dy_img, const int64_t *off, const float *x, int64_t x_img,
                            float *acc)
{
    CD_VEC a[CD_WOB][CD_WTB];
    const float *xt[CD_WTB];
    CD_UNROLL for (int b = 0; b < CD_WOB; b++)
    {
        CD_UNROLL for (int t = 0; t < CD_WTB; t++)
        {
            a[b][t] = CD_LOAD(acc + (b * CD_WTB + t) * CD_LANES);
        }
    }
    for (int64_t m = 0; m < n_img; m++, dy += dy_img, x += x_img) {
        CD_UNROLL for (int t = 0; t < CD_WTB; t++)
        {
            xt[t] = x + off[t];
        }
        for (int64_t q = 0; q < n_vec * CD_LANES; q += CD_LANES) {
            CD_VEC d[CD_WOB];
            CD_UNROLL for (int b = 0; b < CD_WOB; b++)
            {
                d[b] = CD_LOAD(dy + b * ld_dy + q);
            }
            CD_UNROLL for (int t = 0; t < CD_WTB; t++)
            {
                const CD_VEC xv = CD_LOAD(xt[t] + q);
                CD_UNROLL for (int b = 0; b < CD_WOB; b++)
                {
                    a[b][t] = CD_FMA(d[b], xv, a[b][t]);
                }
            }
        }
    }
    CD_UNROLL for (int b = 0; b < CD_WOB; b++)
    {
        CD_UNROLL for (int t = 0; t < CD_WTB; t++)
        {
            CD_STORE(acc + (b * CD_WTB + t) * CD_LANES, a[b][t]);
        }
    }
}

#define CD_TILES(OB)                              \
    CD_DEFINE_TILE(tile_wide_##OB, OB, CD_NV(OB)) \
    CD_DEFINE_TILE(tile_one_##OB, OB, 1)

CD_TILES(1)
CD_TILES(2)
CD_TILES(3)
CD_TILES(4)
CD_TILES(5)
CD_TILES(6)
CD_TILES(7)
CD_TILES(8)

const struct hetcl_conv_kernel CD_KERNEL = {
        .name = CD_NAME,
        .lanes = CD_LANES,
        .ob_max = CD_OB_MAX,
        .nv_wide = {0, CD_NV(1), CD_NV(2), CD_NV(3), CD_NV(4), CD_NV(5), CD_NV(6), CD_NV(7),
                    CD_NV(8)},
        .wide = {NULL, tile_wide_1, tile_wide_2, tile_wide_3, tile_wide_4, tile_wide_5, tile_wide_6,
                 tile_wide_7, tile_wide_8},
        .one = {NULL, tile_one_1, tile_one_2, tile_one_3, tile_one_4, tile_one_5, tile_one_6,
                tile_one_7, tile_one_8},
        .wob = CD_WOB,
        .wtb = CD_WTB,
        .wtile = wtile,
};

#undef CD_TILES
#undef CD_DEFINE_TILE
#undef CD_NV
#undef CD_UNROLL
