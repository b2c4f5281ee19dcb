/* The --probe part of `hetcl devices`: see devices_probe.h. */
#include "devices_probe.h"

#include "cli.h"
#include "util/json.h"

#include <hetcl/report.h>

#include <hetcl/probe.h>

#include <stdio.h>
#include <string.h>

/* A probe builds programs and runs CLBlast: give it more time than a query. */
#define PROBE_TIMEOUT_FACTOR 6

bool devices_probe_cache_ok(hetcl_context *ctx)
{
    if (hetcl_dir_check_writable(ctx, hetcl_context_cache_dir(ctx), "cache directory") == HETCL_OK)
        return true;
    cli_error("--probe: %s (choose another with --cache-dir or HETCL_CACHE_DIR)",
              hetcl_context_last_error(ctx));
    return false;
}

static void print_figure(const char *what, const struct hetcl_figure *f, const char *unit)
{
    if (!f->measured) {
        printf("    %-22s not measured: %s\n", what, f->note);
        return;
    }
    printf("    %-22s %10.2f %-8s (min %.2f, max %.2f, %u runs)\n", what, f->stat.median, unit,
           f->stat.min, f->stat.max, f->stat.n);
}

static void print_ceilings(const struct hetcl_device_desc *d, const struct hetcl_ceilings *c,
                           bool measured_now)
{
    printf("\nCeilings of %s (%s%s%s)\n", d->id,
           measured_now ? "measured now" : "cached, measured ", measured_now ? "" : c->measured_at,
           c->quick ? "; quick: not real ceilings" : "");
    print_figure("memory bandwidth", &c->mem_bandwidth, "GB/s");
    print_figure("fp32 peak (kernel)", &c->fp32_gflops, "GFLOP/s");
    char sgemm[64];
    snprintf(sgemm, sizeof sgemm, "CLBlast SGEMM n=%llu", (unsigned long long) c->sgemm_n);
    print_figure(sgemm, &c->sgemm_gflops, "GFLOP/s");
    print_figure("kernel launch latency", &c->launch_latency_us, "us");
    print_figure("host to device", &c->h2d_gbs, "GB/s");
    print_figure("device to host", &c->d2h_gbs, "GB/s");
    print_figure("program build, cold", &c->build_cold_ms, "ms");
    print_figure("program build, warm", &c->build_warm_ms, "ms");
}

int devices_probe_all(hetcl_context *ctx, const bool *probe, bool quick, unsigned timeout_ms,
                      bool in_process, const struct hetcl_device_list *list, cJSON *devs,
                      bool human)
{
    int rc = CLI_EXIT_OK;
    struct hetcl_probe_options popts = {.quick = quick};
    unsigned limit = (timeout_ms ? timeout_ms : 20000) * PROBE_TIMEOUT_FACTOR;
    for (size_t i = 0; i < list->n_devices; i++) {
        const struct hetcl_device_desc *d = &list->devices[i];
        if (d->sub_index >= 0)
            continue;
        struct hetcl_ceilings c;
        bool measured_now = *probe;
        if (*probe) {
            if (human)
                fprintf(stderr, "hetcl: probing %s (%s)...\n", d->id, d->name);
            if (hetcl_device_probe_isolated(ctx, d, &popts, limit, in_process, &c) != HETCL_OK) {
                cli_error("%s", hetcl_context_last_error(ctx));
                rc = CLI_EXIT_FAILURE;
                continue;
            }
            if (hetcl_ceilings_save(ctx, d, &c) != HETCL_OK) {
                cli_error("%s", hetcl_context_last_error(ctx));
                rc = CLI_EXIT_FAILURE;
            }
        } else if (hetcl_ceilings_load(ctx, d, &c) != HETCL_OK) {
            continue; /* nothing cached (or a stale entry): no ceilings to show */
        }
        cJSON *j = hetcl_ceilings_to_json(&c);
        if (j) {
            cJSON_AddStringToObject(j, "source", measured_now ? "measured" : "cache");
            hetcl__json_add(cJSON_GetArrayItem(devs, (int) i), "ceilings", j);
        }
        if (human)
            print_ceilings(d, &c, measured_now);
    }
    return rc;
}
