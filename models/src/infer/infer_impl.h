/* Shared by the files of models/src/infer. Internal. */
#ifndef HETCL_INFER_IMPL_H
#define HETCL_INFER_IMPL_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

/* The fused host task computes dense layers of at most this many rows with
 * hetcl__infer_gemv_nt instead of the GEMM operator. */
#define HETCL_INFER_GEMV_MAX_ROWS 4

/* y [m][n] = x [m][k] times w [n][k] transposed (row-major, packed). */
void hetcl__infer_gemv_nt(int64_t m, int64_t n, int64_t k, const float *x, const float *w,
                          float *y);
/* The same for output units [u0, u1) only (y keeps its row length n). Each output is computed
 * the same way whatever the range, so slices of one product give it bit for bit. */
void hetcl__infer_gemv_nt_units(int64_t m, int64_t n, int64_t u0, int64_t u1, int64_t k,
                                const float *x, const float *w, float *y);

/* ---- Teams: host workers helping a fused share's dense layers at small batches -----------
 *
 * A fused host task (the lead) runs a request's forward pass; at a few rows its large dense
 * layers are bound by streaming W, which one core does at its cache's bandwidth. A team splits
 * each such layer's output units into slices; the lead and one helper task per helper worker
 * (runtime tasks pinned to those workers, submitted with the lead) claim slices and compute
 * them. Each participant claims its own contiguous part first (so each core keeps streaming
 * the same rows of W from its own cache, request after request), then the others' leftovers:
 * a helper that starts late or not at all only costs the lead the work it left, never a wait
 * for it to start. The lead waits only for slices already claimed, which are being computed.
 *
 * Protocol: every layer gets a new phase number (never reused). The lead writes the layer's
 * operands, then each part's claim word (the phase, the part's end, its first slice), then
 * `phase`, all with release; participants read `phase` and the claim words with acquire and
 * claim a slice by compare-and-swap, so a late claim for an old phase fails instead of
 * computing the new one. The lead publishes the next layer only once every slice of this one
 * is computed (`done`), so a successful claim always reads its own layer's operands.
 * After the request's last team layer, or when the lead's task ends in any way, `finished`
 * becomes the request's number and the helpers of that request return. */
#define HETCL_INFER_TEAM_MAX       8           /* participants: the lead and up to 7 others */
#define HETCL_INFER_TEAM_SLICE     16          /* output units per slice (a multiple of 4) */
#define HETCL_INFER_TEAM_MIN_BYTES (64 * 1024) /* smaller W: one core is as fast */

struct hetcl__infer_team {
    _Atomic uint64_t phase;
    _Atomic uint64_t finished; /* the last request whose helpers may return */
    _Atomic uint64_t claim[HETCL_INFER_TEAM_MAX];
    _Atomic int64_t done; /* slices computed in the current phase */
    /* slices computed over the session's life, and those of them by helpers (statistics) */
    _Atomic uint64_t slices, helped;
    int n_part;       /* participants: the lead, the helpers, then the waiting caller */
    bool caller_part; /* the last part is the thread in hetcl_infer_session_wait */
    /* the layer of the current phase (written by the lead before it publishes the phase) */
    int64_t m, n, k, n_slices;
    const float *x, *w;
    float *y;
};

/* Whether a dense layer of n units and k inputs is worth a team. */
bool hetcl__infer_team_worth(const struct hetcl__infer_team *t, int64_t n, int64_t k);
/* The lead: y = x W^T for rows m (as hetcl__infer_gemv_nt), with the team's helpers. */
void hetcl__infer_team_gemv(struct hetcl__infer_team *t, int64_t m, int64_t n, int64_t k,
                            const float *x, const float *w, float *y);
/* The lead (or the session, after the lead's task ended): request `req`'s helpers return. */
void hetcl__infer_team_finish(struct hetcl__infer_team *t, uint64_t req);
/* A helper, participant `part` (1..n_part-1), for request `req`: computes slices as phases are
 * published, and returns once the request is finished. */
void hetcl__infer_team_help(struct hetcl__infer_team *t, int part, uint64_t req);
/* One step of that loop, for a caller that has its own reason to stop (the waiting caller
 * stops when the lead's task ended without finishing, e.g. cancelled): computes the slices of
 * a new phase, or pauses; false once request `req` is finished. *seen and *spins start at 0. */
bool hetcl__infer_team_poll(struct hetcl__infer_team *t, int part, uint64_t req, uint64_t *seen,
                            unsigned *spins);

#endif /* HETCL_INFER_IMPL_H */
