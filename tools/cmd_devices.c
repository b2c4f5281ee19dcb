/* hetcl devices: placeholder replaced below. */
#include "cli.h"

#include <stdio.h>

int cli_devices(int argc, char **argv)
{
    (void) argc;
    (void) argv;
    return CLI_EXIT_OK;
}
