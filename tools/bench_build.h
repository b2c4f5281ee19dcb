/* Cold start of `hetcl bench model`: building hetcl's kernel programs for a device with the
 * binary cache entry removed (cold) and then from the cache (warm). */
#ifndef HETCL_CLI_BENCH_BUILD_H
#define HETCL_CLI_BENCH_BUILD_H

#include <hetcl/context.h>
#include <hetcl/device.h>

#include <stdbool.h>

/* Builds every embedded kernel source but probe.cl (with no options) on desc's device, twice:
 * after deleting its cache entry, then from the cache; *cold_ms and *warm_ms are the sums.
 * The driver's own cache (PoCL's kcache) may still speed up the cold build. Returns false (and
 * leaves the outputs alone) when the device cannot be opened or a build fails. */
bool bench_build_times(hetcl_context *ctx, const struct hetcl_device_desc *desc, double *cold_ms,
                       double *warm_ms);

#endif /* HETCL_CLI_BENCH_BUILD_H */
