/* hetcl train with a kernel machine spec (one "kernel" layer): EigenPro 2.0
 * (<hetcl/eigenpro.h>) on the first selected worker, instead of the SGD trainers. Prints the
 * setup's parameters and each epoch. */
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

int train_eigenpro(struct train_cli *c, hetcl_context *ctx, hetcl_runtime *rt)
{
    struct hetcl_eigenpro_options o = {
            .epochs = c->opts.epochs > 0 ? c->opts.epochs : 2,
            .seed = c->opts.seed,
            .batch = c->n_batch > 0 ? c->batch[0].value : 0,
            .eta = c->opts.lr > 0 ? c->opts.lr : 0,
            .worker = -1,
            .on_epoch = on_epoch,
            .user = c,
    };
    struct hetcl_eigenpro_result *r = NULL;
    hetcl_status s = hetcl_eigenpro_train(ctx, rt, c->spec, c->train, c->test, &o, &r);
    if (s != HETCL_OK) {
        cli_error("%s", hetcl_context_last_error(ctx));
        return s == HETCL_ERR_INVALID_ARG ? CLI_EXIT_USAGE : CLI_EXIT_FAILURE;
    }
    const struct hetcl_eigenpro_setup *p = &r->setup;
    printf("eigenpro on %s: n %lld, d %lld, s %lld, m_G %lld (budget %.2f GiB), q %d, beta %.4g, "
           "lambda_1 %.4g -> %.4g, critical batch %.3g -> %.4g, m %lld, eta %.4g\n",
           r->worker, (long long) p->n, (long long) p->d, (long long) p->s, (long long) p->m_g,
           p->mem_bytes / 1073741824.0, p->q, p->beta, p->lambda1, p->lambda1_new, p->m_star,
           p->m_star_new, (long long) p->m, p->eta);
    printf("setup %.2f s (eigensystem %.2f s), training %.2f s, %.0f samples/s\n", r->setup_seconds,
           p->eig_seconds, r->train_seconds, r->samples_per_second);
    hetcl_eigenpro_result_destroy(r);
    return CLI_EXIT_OK;
}
