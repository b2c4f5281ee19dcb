/* Tests hetcl_device_probe (quick) on the first device: every measured figure is finite, > 0 and
 * min <= median <= max; the ceilings cache round-trips through save and load; a corrupt,
 * foreign or missing file is refused with a status, not a crash, and a corrupt one or a FIFO
 * is removed with a warning (without waiting on the FIFO); save replaces a FIFO.
 * HETCL_PROBE_FULL=1 also runs a full (default) probe and prints it. */
#include "harness.h"
#include "prog_common.h"
#include <hetcl_internal/base.h>
#include <hetcl_internal/fileio.h>

#include <hetcl/probe.h>
#include <math.h>
#include <sys/stat.h>
#include <unistd.h>

static void print_figure(const char *name, const char *unit, const struct hetcl_figure *f)
{
    if (f->measured)
        printf("  %-18s %10.3f %-8s (min %.3f, max %.3f, n %u) %s\n", name, f->stat.median, unit,
               f->stat.min, f->stat.max, f->stat.n, f->note);
    else
        printf("  %-18s not measured: %s\n", name, f->note);
}

static void print_ceilings(const struct hetcl_ceilings *c)
{
    printf("ceilings of %s (driver %s, %s) at %s%s, probe took %.2f s\n", c->device_name,
           c->driver_version, c->platform_version, c->measured_at, c->quick ? " [quick]" : "",
           (double) c->probe_ns / 1e9);
    printf("  sizes: bandwidth %llu B/buffer, transfers %llu B, sgemm n=%llu, compute %llu x %llu "
           "(%.3g flop/run), latency runs %llu\n",
           (unsigned long long) c->bandwidth_bytes, (unsigned long long) c->transfer_bytes,
           (unsigned long long) c->sgemm_n, (unsigned long long) c->compute_global_size,
           (unsigned long long) c->compute_local_size, (double) c->compute_flops,
           (unsigned long long) c->latency_runs);
    print_figure("mem_bandwidth", "GB/s", &c->mem_bandwidth);
    print_figure("fp32", "GFLOP/s", &c->fp32_gflops);
    print_figure("sgemm", "GFLOP/s", &c->sgemm_gflops);
    print_figure("launch_latency", "us", &c->launch_latency_us);
    print_figure("h2d", "GB/s", &c->h2d_gbs);
    print_figure("d2h", "GB/s", &c->d2h_gbs);
    print_figure("build_cold", "ms", &c->build_cold_ms);
    print_figure("build_warm", "ms", &c->build_warm_ms);
}

static void check_figure(const char *name, const struct hetcl_figure *f)
{
    if (!f->measured)
        return;
    const struct hetcl_stat *s = &f->stat;
    if (!(isfinite(s->median) && isfinite(s->min) && isfinite(s->max) && s->min > 0 &&
          s->min <= s->median && s->median <= s->max && s->n > 0)) {
        fprintf(stderr, "%s: bad stat median %g min %g max %g n %u\n", name, s->median, s->min,
                s->max, s->n);
        hetcl_test_failures++;
    }
}

static bool nearly_equal(double a, double b)
{
    return fabs(a - b) <= 1e-12 * fabs(a);
}

static bool same_figure(const struct hetcl_figure *a, const struct hetcl_figure *b)
{
    /* cJSON prints 15 significant digits when they read back within an epsilon, so compare
     * relatively rather than bit for bit. */
    return a->measured == b->measured && nearly_equal(a->stat.median, b->stat.median) &&
           nearly_equal(a->stat.min, b->stat.min) && nearly_equal(a->stat.max, b->stat.max) &&
           a->stat.n == b->stat.n && strcmp(a->note, b->note) == 0;
}

int main(void)
{
    cl_platform_id platform;
    cl_device_id dev = test_first_device(&platform);
    char *tmp = test_mkdtemp();
    hetcl_context *ctx = NULL;
    struct hetcl_test_warnings warnings = {0};
    struct hetcl_context_options opts = {
            .cache_dir = tmp, .warning = hetcl_test_warning, .warning_user = &warnings};
    CHECK_OK(ctx, hetcl_context_create(&opts, &ctx));

    struct hetcl_ceilings c;
    struct hetcl_probe_options po = {.quick = true};
    CHECK_OK(ctx, hetcl_device_probe(ctx, dev, &po, &c));
    print_ceilings(&c);
    CHECK(c.quick);
    CHECK(c.device_name[0] != '\0' && c.measured_at[0] != '\0');
    /* These need nothing but OpenCL 1.2 and probe.cl: they must be measured everywhere. */
    CHECK(c.mem_bandwidth.measured);
    CHECK(c.fp32_gflops.measured);
    CHECK(c.launch_latency_us.measured);
    CHECK(c.h2d_gbs.measured && c.d2h_gbs.measured);
    CHECK(c.build_cold_ms.measured && c.build_warm_ms.measured);
    CHECK_EQ_INT(c.mem_bandwidth.stat.n, 3);
    CHECK_EQ_INT(c.launch_latency_us.stat.n, 30);
    const struct hetcl_figure *figs[] = {&c.mem_bandwidth,     &c.fp32_gflops,  &c.sgemm_gflops,
                                         &c.launch_latency_us, &c.h2d_gbs,      &c.d2h_gbs,
                                         &c.build_cold_ms,     &c.build_warm_ms};
    const char *names[] = {"mem_bandwidth", "fp32", "sgemm",      "latency",
                           "h2d",           "d2h",  "build_cold", "build_warm"};
    for (size_t i = 0; i < sizeof figs / sizeof figs[0]; i++)
        check_figure(names[i], figs[i]);

    /* Save, then load: the same figures. */
    struct hetcl_device_desc desc;
    memset(&desc, 0, sizeof desc);
    hetcl__strlcpy(desc.name, c.device_name, sizeof desc.name);
    hetcl__strlcpy(desc.driver_version, c.driver_version, sizeof desc.driver_version);
    hetcl__strlcpy(desc.platform_version, c.platform_version, sizeof desc.platform_version);
    struct hetcl_ceilings loaded;
    CHECK_EQ_INT(hetcl_ceilings_load(ctx, &desc, &loaded), HETCL_ERR_IO); /* nothing yet */
    CHECK_OK(ctx, hetcl_ceilings_save(ctx, &desc, &c));
    CHECK_OK(ctx, hetcl_ceilings_load(ctx, &desc, &loaded));
    CHECK_EQ_STR(loaded.device_name, c.device_name);
    CHECK_EQ_STR(loaded.driver_version, c.driver_version);
    CHECK_EQ_STR(loaded.measured_at, c.measured_at);
    CHECK(loaded.quick == c.quick);
    CHECK(loaded.bandwidth_bytes == c.bandwidth_bytes && loaded.sgemm_n == c.sgemm_n &&
          loaded.compute_flops == c.compute_flops && loaded.latency_runs == c.latency_runs);
    const struct hetcl_figure *lfigs[] = {&loaded.mem_bandwidth, &loaded.fp32_gflops,
                                          &loaded.sgemm_gflops,  &loaded.launch_latency_us,
                                          &loaded.h2d_gbs,       &loaded.d2h_gbs,
                                          &loaded.build_cold_ms, &loaded.build_warm_ms};
    for (size_t i = 0; i < sizeof figs / sizeof figs[0]; i++)
        if (!same_figure(figs[i], lfigs[i])) {
            fprintf(stderr, "%s differs after save/load\n", names[i]);
            hetcl_test_failures++;
        }

    /* The JSON object for reports has the versioned layout. */
    cJSON *j = hetcl_ceilings_to_json(&c);
    CHECK(j != NULL);
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(j, "schema_version");
    CHECK(cJSON_IsNumber(v) && v->valuedouble == 1);
    const cJSON *bw = cJSON_GetObjectItemCaseSensitive(
            cJSON_GetObjectItemCaseSensitive(j, "figures"), "mem_bandwidth");
    CHECK(cJSON_IsString(cJSON_GetObjectItemCaseSensitive(bw, "unit")));
    cJSON_Delete(j);

    /* Another driver version: another file, so nothing to load. */
    struct hetcl_device_desc other = desc;
    hetcl__strlcpy(other.driver_version, "0.0-other", sizeof other.driver_version);
    CHECK_EQ_INT(hetcl_ceilings_load(ctx, &other, &loaded), HETCL_ERR_IO);
    /* Ceilings of one device saved for another: refused. */
    hetcl__strlcpy(other.name, "some other device", sizeof other.name);
    CHECK_EQ_INT(hetcl_ceilings_save(ctx, &other, &c), HETCL_ERR_INVALID_ARG);

    /* Corrupt files: HETCL_ERR_FORMAT with the path, c zeroed. */
    char path[4096];
    CHECK_OK(ctx, hetcl_ceilings_path(ctx, &desc, path, sizeof path));
    printf("ceilings file: %s\n", path);
    const char *bad[] = {
            "{ not json",
            "",
            "[1, 2, 3]",
            "{\"schema_version\": 99}",
            "{\"schema_version\": 1, \"device_name\": 5}",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        test_write_file(path, bad[i], strlen(bad[i]));
        loaded.quick = true;
        warnings.n = 0;
        CHECK_EQ_INT(hetcl_ceilings_load(ctx, &desc, &loaded), HETCL_ERR_FORMAT);
        CHECK(!loaded.quick);
        CHECK(strstr(hetcl_context_last_error(ctx), path) != NULL);
        printf("  corrupt %zu: %s\n", i, hetcl_context_last_error(ctx));
        /* Removed with a warning, so that the next probe writes a good one; except a file of
         * another schema version, which another hetcl may be using. */
        bool other_version = strstr(bad[i], "99") != NULL;
        CHECK_EQ_INT(warnings.n, other_version ? 0 : 1);
        CHECK(test_exists(path) == other_version);
    }
    CHECK(strstr(warnings.text, "; removed (the device's ceilings are unknown until it is probed "
                                "again)\n") != NULL);

    /* A FIFO there: load neither waits for a writer nor reads it; it goes, with a warning. And
     * save replaces one (a FIFO nobody reads would block a writer forever). */
    hetcl_test_deadline(30, "ceilings with a FIFO in the cache");
    unlink(path);
    CHECK(mkfifo(path, 0644) == 0);
    warnings.text[0] = '\0';
    CHECK_EQ_INT(hetcl_ceilings_load(ctx, &desc, &loaded), HETCL_ERR_IO);
    char want[4096];
    snprintf(want, sizeof want,
             "cache entry %s: not a regular file (a FIFO); removed (the device's ceilings are "
             "unknown until it is probed again)\n",
             path);
    CHECK_EQ_STR(warnings.text, want);
    CHECK(!test_exists(path));
    CHECK(mkfifo(path, 0644) == 0);
    CHECK_OK(ctx, hetcl_ceilings_save(ctx, &desc, &c));
    CHECK_OK(ctx, hetcl_ceilings_load(ctx, &desc, &loaded));
    hetcl_test_deadline(0, NULL);
    /* Truncated valid file, and one whose stats are inconsistent. */
    CHECK_OK(ctx, hetcl_ceilings_save(ctx, &desc, &c));
    char *text = NULL;
    size_t len = 0;
    CHECK_OK(ctx, hetcl__read_file(ctx, path, &text, &len));
    test_write_file(path, text, len / 2);
    CHECK_EQ_INT(hetcl_ceilings_load(ctx, &desc, &loaded), HETCL_ERR_FORMAT);
    hetcl__free(text);
    struct hetcl_ceilings odd = c;
    odd.mem_bandwidth.measured = true;
    odd.mem_bandwidth.stat.min = odd.mem_bandwidth.stat.max + 1;
    CHECK_OK(ctx, hetcl_ceilings_save(ctx, &desc, &odd));
    CHECK_EQ_INT(hetcl_ceilings_load(ctx, &desc, &loaded), HETCL_ERR_FORMAT);
    printf("  inconsistent: %s\n", hetcl_context_last_error(ctx));
    /* A file claiming another driver inside (hand-copied): stale. */
    odd = c;
    struct hetcl_device_desc liar = desc;
    hetcl__strlcpy(liar.driver_version, "9.9-elsewhere", sizeof liar.driver_version);
    char liar_path[4096];
    CHECK_OK(ctx, hetcl_ceilings_save(ctx, &liar, &odd));
    CHECK_OK(ctx, hetcl_ceilings_path(ctx, &liar, liar_path, sizeof liar_path));
    CHECK(rename(liar_path, path) == 0);
    CHECK_EQ_INT(hetcl_ceilings_load(ctx, &desc, &loaded), HETCL_ERR_FORMAT);
    CHECK(strstr(hetcl_context_last_error(ctx), "stale") != NULL);

    /* Misuse. */
    CHECK_EQ_INT(hetcl_device_probe(ctx, NULL, NULL, &c), HETCL_ERR_INVALID_ARG);
    CHECK(hetcl_ceilings_to_json(NULL) == NULL);

    const char *full = getenv("HETCL_PROBE_FULL");
    if (full && *full && strcmp(full, "0") != 0) {
        printf("full probe:\n");
        struct hetcl_ceilings fc;
        CHECK_OK(ctx, hetcl_device_probe(ctx, dev, NULL, &fc));
        print_ceilings(&fc);
        check_figure("mem_bandwidth", &fc.mem_bandwidth);
        check_figure("fp32", &fc.fp32_gflops);
        check_figure("sgemm", &fc.sgemm_gflops);
        check_figure("latency", &fc.launch_latency_us);
        check_figure("h2d", &fc.h2d_gbs);
        check_figure("d2h", &fc.d2h_gbs);
        check_figure("build_cold", &fc.build_cold_ms);
        check_figure("build_warm", &fc.build_warm_ms);
        cJSON *fj = hetcl_ceilings_to_json(&fc);
        char *s = fj ? cJSON_Print(fj) : NULL;
        if (s)
            printf("%s\n", s);
        cJSON_free(s);
        cJSON_Delete(fj);
    }

    hetcl_context_destroy(ctx);
    test_rm_rf(tmp);
    free(tmp);
    return hetcl_test_finish("test_probe");
}
