/* The provenance every report carries (<hetcl/report.h>): where, how and on what it ran. */
#include "util/json.h"

#include <hetcl/hetcl.h>
#include <hetcl/machine.h>
#include <hetcl/report.h>

#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/utsname.h>
#include <unistd.h>

void hetcl_report_cpu_model(char *buf, size_t cap)
{
    snprintf(buf, cap, "unknown");
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (!f)
        return;
    char line[512];
    while (fgets(line, sizeof line, f)) {
        const char *c = strchr(line, ':');
        if (strncmp(line, "model name", 10) || !c)
            continue;
        for (c++; *c == ' ' || *c == '\t'; c++)
            ;
        snprintf(buf, cap, "%s", c);
        buf[strcspn(buf, "\n")] = '\0';
        break;
    }
    fclose(f);
}

static cJSON *host_json(void)
{
    cJSON *h = cJSON_CreateObject();
    char name[256] = "unknown", os[600] = "unknown", cpu[256];
    gethostname(name, sizeof name - 1);
    struct utsname u;
    if (uname(&u) == 0)
        snprintf(os, sizeof os, "%s %s %s", u.sysname, u.release, u.machine);
    hetcl_report_cpu_model(cpu, sizeof cpu);
    hetcl__json_add(h, "hostname", cJSON_CreateString(name));
    hetcl__json_add(h, "os", cJSON_CreateString(os));
    hetcl__json_add(h, "cpu_model", cJSON_CreateString(cpu));
    hetcl__json_add(h, "environment", hetcl_report_environment());
    hetcl__json_add(h, "environment_set_by_hetcl", hetcl_report_environment_set_by_hetcl());
    /* A BLAS baseline beside this report may have run slow kernels (<hetcl/machine.h>). */
    char blas[512];
    hetcl__json_add(h, "blas_warning",
                    hetcl_machine_blas_warning(blas, sizeof blas) ? cJSON_CreateString(blas)
                                                                  : cJSON_CreateNull());
    return h;
}

static cJSON *device_json(const struct hetcl_device_desc *d)
{
    cJSON *o = cJSON_CreateObject();
    hetcl__json_add(o, "id", cJSON_CreateString(d->id));
    hetcl__json_add(o, "name", cJSON_CreateString(d->name));
    hetcl__json_add(o, "type", cJSON_CreateString(hetcl_device_type_name(d->type)));
    hetcl__json_add(o, "vendor", cJSON_CreateString(d->vendor));
    hetcl__json_add(o, "device_version", cJSON_CreateString(d->device_version));
    hetcl__json_add(o, "driver_version", cJSON_CreateString(d->driver_version));
    hetcl__json_add(o, "platform_name", cJSON_CreateString(d->platform_name));
    hetcl__json_add(o, "platform_version", cJSON_CreateString(d->platform_version));
    hetcl__json_add(o, "compute_units", cJSON_CreateNumber(d->compute_units));
    hetcl__json_add(o, "clock_mhz", cJSON_CreateNumber(d->clock_mhz));
    if (d->pci.valid) {
        char bus[64];
        snprintf(bus, sizeof bus, "%04x:%02x:%02x.%x", d->pci.domain, d->pci.bus, d->pci.device,
                 d->pci.function);
        hetcl__json_add(o, "pci_busid", cJSON_CreateString(bus));
    } else {
        hetcl__json_add(o, "pci_busid", cJSON_CreateNull());
    }
    return o;
}

/* The ICD loader is not part of the runtime's API: it is in the device list (the runtime's when
 * only rt is given); without one, ask the enumeration (isolated, quick unless a driver hangs),
 * and leave it empty when that fails. */
static cJSON *icd_loader(const struct hetcl_device_list *list)
{
    if (list)
        return cJSON_CreateString(list->icd_loader);
    char icd[HETCL_STR_MAX] = "";
    hetcl_context *ctx = NULL;
    struct hetcl_device_list *l = NULL;
    if (hetcl_context_create(NULL, &ctx) == HETCL_OK &&
        hetcl_device_enumerate(ctx, NULL, &l) == HETCL_OK)
        snprintf(icd, sizeof icd, "%s", l->icd_loader);
    hetcl_device_list_destroy(l);
    hetcl_context_destroy(ctx);
    return cJSON_CreateString(icd);
}

static cJSON *opencl_json(const struct hetcl_provenance_options *o)
{
    cJSON *cl = cJSON_CreateObject(), *devs = cJSON_CreateArray();
    hetcl__json_add(cl, "icd_loader",
                    icd_loader(o->devices ? o->devices : hetcl_runtime_device_list(o->rt)));
    for (size_t i = 0; o->devices && i < o->devices->n_devices; i++)
        cJSON_AddItemToArray(devs, device_json(&o->devices->devices[i]));
    const struct hetcl_device_desc *listed[64];
    size_t n_listed = 0;
    for (size_t w = 0; !o->devices && o->rt && w < hetcl_runtime_n_workers(o->rt); w++) {
        struct hetcl_worker_info wi;
        if (hetcl_runtime_worker_info(o->rt, w, &wi) != HETCL_OK || !wi.desc)
            continue;
        bool seen = false;
        for (size_t k = 0; k < n_listed; k++)
            seen = seen || listed[k] == wi.desc;
        if (seen)
            continue;
        if (n_listed < sizeof listed / sizeof listed[0])
            listed[n_listed++] = wi.desc;
        cJSON_AddItemToArray(devs, device_json(wi.desc));
    }
    hetcl__json_add(cl, "devices", devs);
    return cl;
}

cJSON *hetcl_report_provenance(const struct hetcl_provenance_options *o)
{
    cJSON *p = cJSON_CreateObject();
    hetcl__json_add(p, "host", host_json());
    cJSON *cmd = cJSON_CreateArray();
    /* the command line as typed: "hetcl bench" splits into its words */
    char words[64];
    snprintf(words, sizeof words, "%s", o->command ? o->command : "hetcl");
    for (char *save = NULL, *w = strtok_r(words, " ", &save); cmd && w;
         w = strtok_r(NULL, " ", &save))
        cJSON_AddItemToArray(cmd, cJSON_CreateString(w));
    for (int i = 0; cmd && i < o->argc; i++)
        cJSON_AddItemToArray(cmd, cJSON_CreateString(o->argv[i]));
    hetcl__json_add(p, "command_line", cmd);
    hetcl__json_add(p, "opencl", opencl_json(o));
    return p;
}
