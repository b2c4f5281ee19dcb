/* A trained kernel machine saved for inference (<hetcl/eigenpro.h>: hetcl_eigenpro_save): its
 * centers (the training points) and alpha under the names an inference plan loads
 * (HETCL_MODEL_CENTERS_FMT, HETCL_MODEL_ALPHA_FMT), the kernel and bandwidth it was trained
 * with (checked against the spec on load), and the inputs' scaling as input.mean / input.std,
 * which bench model applies to its data as it does for any checkpoint of hetcl train. */
#include <hetcl/eigenpro.h>
#include <hetcl/safetensors.h>

#include <hetcl_internal/base.h>

#include <stdio.h>

#define KM_FORMAT "hetcl-kernel-machine"

static hetcl_status metadata(hetcl_context *ctx, hetcl_st_writer *w, const hetcl_model_spec *spec,
                             const struct hetcl_eigenpro_result *res, bool scaled)
{
    char num[64];
    snprintf(num, sizeof num, "%.17g", res->setup.bandwidth);
    hetcl_status s = hetcl_st_writer_set_metadata(ctx, w, "format", KM_FORMAT);
    if (s == HETCL_OK)
        s = hetcl_st_writer_set_metadata(ctx, w, "format_version", "1");
    if (s == HETCL_OK)
        s = hetcl_st_writer_set_metadata(ctx, w, "model", spec->name);
    if (s == HETCL_OK)
        s = hetcl_st_writer_set_metadata(ctx, w, "algo", "eigenpro");
    if (s == HETCL_OK)
        s = hetcl_st_writer_set_metadata(
                ctx, w, "kernel",
                hetcl_model_kernel_name((enum hetcl_model_kernel) res->setup.kernel));
    if (s == HETCL_OK)
        s = hetcl_st_writer_set_metadata(ctx, w, "bandwidth", num);
    /* "raw": no scaling recorded, so that inference does not standardize either */
    if (s == HETCL_OK)
        s = hetcl_st_writer_set_metadata(ctx, w, "inputs", scaled ? "standardized" : "raw");
    snprintf(num, sizeof num, "%d", res->n_epochs);
    if (s == HETCL_OK)
        s = hetcl_st_writer_set_metadata(ctx, w, "epoch", num);
    return s;
}

hetcl_status hetcl_eigenpro_save(hetcl_context *ctx, const hetcl_model_spec *spec,
                                 const hetcl_dataset *train,
                                 const struct hetcl_eigenpro_result *res, const float *input_mean,
                                 const float *input_std, const char *path)
{
    if (!spec || !train || !res || !res->alpha || !path)
        return hetcl__fail(ctx, HETCL_ERR_INVALID_ARG, "hetcl_eigenpro_save: NULL argument");
    if (!hetcl_model_spec_is_kernel_machine(spec) || train->sparse || !train->x ||
        train->n != res->setup.n || train->n_features != res->setup.d)
        return hetcl__fail(ctx, HETCL_ERR_INVALID_ARG,
                           "hetcl_eigenpro_save: %s: not the kernel machine trained on this "
                           "dense training set (%lld x %lld, trained on %lld x %lld)",
                           path, (long long) train->n, (long long) train->n_features,
                           (long long) res->setup.n, (long long) res->setup.d);
    hetcl_st_writer *w = NULL;
    hetcl_status s = hetcl_st_writer_create(ctx, &w);
    if (s != HETCL_OK)
        return s;
    char name[64];
    const int64_t dc[2] = {res->setup.n, res->setup.d}, da[2] = {res->setup.n, res->setup.l};
    snprintf(name, sizeof name, HETCL_MODEL_CENTERS_FMT, 0);
    s = hetcl_st_writer_add_borrowed(ctx, w, name, HETCL_ST_F32, dc, 2, train->x);
    snprintf(name, sizeof name, HETCL_MODEL_ALPHA_FMT, 0);
    if (s == HETCL_OK)
        s = hetcl_st_writer_add_borrowed(ctx, w, name, HETCL_ST_F32, da, 2, res->alpha);
    const bool scaled = input_mean && input_std;
    const int64_t df[1] = {res->setup.d};
    if (s == HETCL_OK && scaled)
        s = hetcl_st_writer_add_borrowed(ctx, w, "input.mean", HETCL_ST_F32, df, 1, input_mean);
    if (s == HETCL_OK && scaled)
        s = hetcl_st_writer_add_borrowed(ctx, w, "input.std", HETCL_ST_F32, df, 1, input_std);
    if (s == HETCL_OK)
        s = metadata(ctx, w, spec, res, scaled);
    if (s == HETCL_OK)
        s = hetcl_st_writer_save(ctx, w, path); /* atomic: the old file or the new one */
    hetcl_st_writer_destroy(w);
    return s;
}
