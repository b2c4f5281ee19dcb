/* hetcl train with a kernel machine spec (one "kernel" layer): EigenPro 2.0
 * (<hetcl/eigenpro.h>) on the selected workers (each step's kernel blocks shared among them by
 * measured speed), instead of the SGD trainers. Prints the
 * setup's parameters and each epoch; writes --report and --trace as SGD runs do, and
 * --checkpoint: the trained machine, which bench model runs. */
#include "cli.h"
#include "train_cli.h"

#include <hetcl/eigenpro.h>

#include <stdio.h>

static void on_epoch(void *user, int epoch, double train_mse, double test_acc)
{
    const struct train_cli *c = user;
    if (!c->quiet)
        printf("epoch %d: train mse %.5f, test accuracy %.2f%%\n", epoch, train_mse,
               100.0 * test_acc);
    fflush(stdout);
}

/* Flags of the SGD trainers that mean nothing here: refused rather than ignored. */
static int check_flags(const struct train_cli *c)
{
    const struct hetcl_train_options *o = &c->opts;
    const char *bad = o->resume                   ? "--resume"
                      : o->checkpoint_every_s > 0 ? "--checkpoint-every"
                      : o->time_s > 0             ? "--time"
                      : o->target_acc > 0         ? "--target-acc"
                      : o->eval_every > 0         ? "--eval-every"
                      : o->weight_decay > 0       ? "--weight-decay"
                                                  : NULL;
    if (bad) {
        cli_error("%s: not supported for kernel machines (%s trains by EigenPro: --epochs, "
                  "--batch DEV=N for m, --lr for eta, --no-precond)",
                  bad, c->model);
        return CLI_EXIT_USAGE;
    }
    return CLI_EXIT_OK;
}

/* --checkpoint: the centers, alpha and the inputs' scaling, for hetcl bench model --weights. */
static int save(const struct train_cli *c, hetcl_context *ctx,
                const struct hetcl_eigenpro_result *r)
{
    const char *path = c->opts.checkpoint_path;
    if (!path)
        return CLI_EXIT_OK;
    const struct hetcl_standardization *st = &c->standardization;
    const bool scaled = st->n_features == c->train->n_features;
    if (hetcl_eigenpro_save(ctx, c->spec, c->train, r, scaled ? st->mean : NULL,
                            scaled ? st->std : NULL, path) != HETCL_OK) {
        cli_error("--checkpoint %s: %s", path, hetcl_context_last_error(ctx));
        return CLI_EXIT_FAILURE;
    }
    if (!c->quiet)
        printf("centers and alpha saved to %s (hetcl bench model --weights %s)\n", path, path);
    return CLI_EXIT_OK;
}

int train_eigenpro(struct train_cli *c, hetcl_context *ctx, hetcl_runtime *rt)
{
    int rc = check_flags(c);
    if (rc != CLI_EXIT_OK)
        return rc;
    c->opts.epochs = c->opts.epochs > 0 ? c->opts.epochs : 2; /* for the report's stop rule */
    struct hetcl_eigenpro_options o = {
            .epochs = (int) c->opts.epochs,
            .seed = c->opts.seed,
            .batch = c->n_batch > 0 ? c->batch[0].value : 0,
            .eta = c->opts.lr > 0 ? c->opts.lr : 0,
            .worker = -1,
            .no_precond = c->no_precond,
            .on_epoch = on_epoch,
            .user = c,
    };
    struct hetcl_eigenpro_result *r = NULL;
    hetcl_train_machine_before(&c->machine);
    hetcl_status s = hetcl_eigenpro_train(ctx, rt, c->spec, c->train, c->test, &o, &r);
    hetcl_train_machine_after(&c->machine);
    if (s != HETCL_OK) {
        cli_error("%s", hetcl_context_last_error(ctx));
        return s == HETCL_ERR_INVALID_ARG ? CLI_EXIT_USAGE : CLI_EXIT_FAILURE;
    }
    const struct hetcl_eigenpro_setup *p = &r->setup;
    printf("eigenpro on %s%s: n %lld, d %lld, s %lld, m_G %lld (budget %.2f GiB), q %d, beta "
           "%.4g, lambda_1 %.4g -> %.4g, critical batch %.3g -> %.4g, m %lld, eta %.4g%s\n",
           r->devices[0].name, r->n_devices > 1 ? " and others" : "", (long long) p->n,
           (long long) p->d, (long long) p->s, (long long) p->m_g, p->mem_bytes / 1073741824.0,
           p->q, p->beta, p->lambda1, p->lambda1_new, p->m_star, p->m_star_new, (long long) p->m,
           p->eta, c->no_precond ? " (no preconditioner)" : "");
    for (int k = 0; k < r->n_devices; k++) {
        const struct hetcl_eigenpro_device *d = &r->devices[k];
        if (r->n_devices > 1)
            printf("%s: m_G %lld, %.1f%% of the %s (%.1f rows of a step's %lld), %.2f us per "
                   "row\n",
                   d->name, (long long) d->m_g, 100.0 * d->share,
                   r->by_centers ? "centers" : "rows", d->rows_per_step, (long long) p->m,
                   1e6 * d->s_per_row);
        if (d->n_curve == 0)
            continue;
        if (d->curve_from >= 0 && d->curve_from != k && d->curve_from < r->n_devices) {
            printf("%s saturation: %s's (the same CPU model); m_G capped at %lld\n", d->name,
                   r->devices[d->curve_from].name, (long long) d->m_sat);
            continue;
        }
        printf("%s saturation over %lld centers (m: us per sample):", d->name,
               (long long) d->curve_centers);
        for (int i = 0; i < d->n_curve; i++)
            printf(" %lld: %.2f", (long long) d->curve_m[i], 1e6 * d->curve_s_per_sample[i]);
        printf("; m_G capped at %lld (memory: %lld)\n", (long long) d->m_sat,
               (long long) d->m_g_memory);
    }
    printf("setup %.2f s (saturation %.2f s, K_S %.2f s, eigensystem %.2f s, %s), training "
           "%.2f s, %.0f samples/s\n",
           r->setup_seconds, r->probe_seconds, p->ks_seconds, p->eig_seconds,
           p->eig_iterative ? "subspace iteration" : "dsyevr", r->train_seconds,
           r->samples_per_second);
    if (c->trace && hetcl_runtime_write_trace(rt, c->trace) != HETCL_OK) {
        cli_error("--trace %s: %s", c->trace, hetcl_context_last_error(ctx));
        rc = CLI_EXIT_FAILURE;
    }
    if (c->report && train_cli_write_report(c, ctx, rt, NULL, r, NULL) != CLI_EXIT_OK)
        rc = CLI_EXIT_FAILURE;
    rc = rc == CLI_EXIT_OK ? save(c, ctx, r) : rc;
    hetcl_eigenpro_result_destroy(r);
    return rc;
}
