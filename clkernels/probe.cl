/* Kernels of `hetcl devices --probe`: device ceilings measured as clpeak does. */

/* Does nothing: enqueue-to-completion of this kernel is the launch latency. */
__kernel void probe_empty(void)
{
}
