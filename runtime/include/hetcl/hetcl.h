/* hetcl: every public header at once. */
#ifndef HETCL_H
#define HETCL_H

#include <hetcl/allreduce.h>
#include <hetcl/context.h>
#include <hetcl/core_latency.h>
#include <hetcl/device.h>
#include <hetcl/devmap.h>
#include <hetcl/fileio.h>
#include <hetcl/program.h>
#include <hetcl/runtime.h>
#include <hetcl/status.h>
#include <hetcl/topology.h>
#include <hetcl/version.h>

#endif /* HETCL_H */
