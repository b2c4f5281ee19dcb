/* The parameter initialisers' scales (net.c), for the other trainers that draw a spec's
 * initial weights themselves (SLIDE: models/src/slide/slide_setup.c). Internal. */
#ifndef HETCL_NET_INIT_H
#define HETCL_NET_INIT_H

#include <hetcl/model_spec.h>

/* The scale of a parameter initialiser with fan-in fi and fan-out fo: *a the half-width of a
 * uniform draw, or *sd the deviation of a normal one (both 0 for zeros); shared by the net's and
 * SLIDE's initialisation. */
void hetcl__net_init_scale(const hetcl_model_spec *spec, enum hetcl_model_init init, double fi,
                           double fo, double *a, double *sd);

#endif /* HETCL_NET_INIT_H */
