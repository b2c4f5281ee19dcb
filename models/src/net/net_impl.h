/*
 * Shared by the files of models/src/net (internal): the workspace layout of a host step
 * (net.c sizes it, net_host.c runs the step in it).
 */
#ifndef HETCL_NET_IMPL_H
#define HETCL_NET_IMPL_H

#include <hetcl/net.h>

#include <stddef.h>
#include <stdint.h>

/* Every tensor and workspace region starts at a multiple of 16 floats (64 bytes). */
#define HETCL_NET_ALIGN_FLOATS 16
/* Layers a net may have (the workspace keeps one pointer per layer). */
#define HETCL_NET_MAX_LAYERS 64

/* A step's workspace, carved from the caller's float array by hetcl__net_ws_layout. */
struct hetcl_net_ws {
    float *act[HETCL_NET_MAX_LAYERS];   /* each layer's output [rows][out]; NULL for a view */
    int32_t *idx[HETCL_NET_MAX_LAYERS]; /* maxpool2d: the winner of each output; else NULL */
    float *delta[HETCL_NET_MAX_LAYERS]; /* each layer's gradients (dact, dz): one of two
                                           [rows][max_width] buffers; NULL for a view */
    float *g;     /* max_width: a gradient row, a bias-less conv's bias gradient */
    float *gb;    /* max_width: a dense layer's bias gradient */
    float *zeros; /* max_width zeros: the zero bias */
    float *gm;    /* the largest weight tensor: its gradient */
};

/* The floats a workspace for `rows` (>= 1) examples needs; when ws is not NULL, also fills *L
 * with pointers into ws. */
size_t hetcl__net_ws_layout(const hetcl_net *net, int64_t rows, float *ws, struct hetcl_net_ws *L);

#endif /* HETCL_NET_IMPL_H */
