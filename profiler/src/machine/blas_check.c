/*
 * Environment traps of BLAS baselines (<hetcl/machine.h>): OpenBLAS picks its kernels (its
 * "core type") from cpuid, or from OPENBLAS_CORETYPE. Two ways that goes wrong were measured on
 * this project's machines: OPENBLAS_CORETYPE=Haswell exported on AVX-512 CPUs (half the SGEMM
 * speed), and OpenBLAS 0.3.21 (Debian 12's) detecting a new Intel Xeon (family 6 model 207) as
 * Prescott: in its driver/others/dynamic.c, an Intel family-6 model whose upper nibble (the
 * extended model) is past its table (>= 0xB0) falls through the switch into the Pentium 4 case,
 * which returns Prescott (fixed in 0.3.25 by a `break`). 33 against 310 GFLOP/s SGEMM with
 * SkylakeX's kernels on that CPU. An unknown OPENBLAS_CORETYPE (including "") is no trap: OpenBLAS
 * then picks by instruction set (AVX-512, AVX2, AVX), which is right.
 */

#include <hetcl/machine.h>

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* Instruction-set levels of the single-precision GEMM kernels. Cooperlake and SapphireRapids
 * run SkylakeX's SGEMM (they add bf16 kernels), Zen runs Haswell's. */
enum level { L_NONE, L_SSE3, L_SSE42, L_AVX, L_AVX2, L_AVX512 };

static const struct {
    const char *name;
    enum level level;
} coretypes[] = {
        {"Katmai", L_NONE},       {"Coppermine", L_NONE},
        {"Northwood", L_NONE},    {"Banias", L_NONE},
        {"Athlon", L_NONE},       {"Prescott", L_SSE3},
        {"Atom", L_SSE3},         {"Core2", L_SSE3},
        {"Penryn", L_SSE3},       {"Dunnington", L_SSE3},
        {"Opteron", L_SSE3},      {"Opteron_SSE3", L_SSE3},
        {"Barcelona", L_SSE3},    {"Nano", L_SSE3},
        {"Bobcat", L_SSE3},       {"Nehalem", L_SSE42},
        {"Sandybridge", L_AVX},   {"Bulldozer", L_AVX},
        {"Piledriver", L_AVX},    {"Steamroller", L_AVX},
        {"Excavator", L_AVX},     {"Haswell", L_AVX2},
        {"Zen", L_AVX2},          {"SkylakeX", L_AVX512},
        {"Cooperlake", L_AVX512}, {"SapphireRapids", L_AVX512},
};

/* The core type to suggest per level: names every OpenBLAS since 0.3.10 accepts. */
static const char *const suggest[] = {"Prescott",    "Prescott", "Nehalem",
                                      "Sandybridge", "Haswell",  "SkylakeX"};
static const char *const level_isa[] = {"no SSE3", "SSE3", "SSE4.2",
                                        "AVX",     "AVX2", "AVX-512 (avx512f)"};

struct cpu {
    char vendor[32];
    int family, model;
    char flags[4096];
    bool x86; /* a flags line was found (x86); other architectures have "Features" */
};

/* The value after "key<spaces>:" of a cpuinfo line, or NULL. */
static const char *value_of(const char *line, const char *key)
{
    size_t n = strlen(key);
    if (strncmp(line, key, n))
        return NULL;
    const char *p = line + n;
    while (*p == ' ' || *p == '\t')
        p++;
    if (*p != ':')
        return NULL;
    for (p++; *p == ' ' || *p == '\t'; p++)
        ;
    return p;
}

/* The first processor's block. */
static void parse_cpuinfo(const char *text, struct cpu *c)
{
    memset(c, 0, sizeof *c);
    c->family = c->model = -1;
    const char *p = text ? text : "";
    while (*p) {
        const char *eol = strchr(p, '\n');
        size_t len = eol ? (size_t) (eol - p) : strlen(p);
        char line[4200];
        if (len >= sizeof line)
            len = sizeof line - 1;
        memcpy(line, p, len);
        line[len] = '\0';
        p = eol ? eol + 1 : p + strlen(p);
        if (line[0] == '\0' && (c->x86 || c->vendor[0]))
            break; /* the end of the first processor's block */
        const char *v;
        if ((v = value_of(line, "vendor_id")))
            snprintf(c->vendor, sizeof c->vendor, "%s", v);
        else if ((v = value_of(line, "cpu family")))
            c->family = atoi(v);
        else if ((v = value_of(line, "model")) && isdigit((unsigned char) *v))
            c->model = atoi(v);
        else if ((v = value_of(line, "flags"))) {
            snprintf(c->flags, sizeof c->flags, " %s ", v);
            c->x86 = true;
        }
    }
}

static bool has(const struct cpu *c, const char *flag)
{
    char pat[64];
    snprintf(pat, sizeof pat, " %s ", flag);
    return strstr(c->flags, pat) != NULL;
}

static enum level cpu_level(const struct cpu *c)
{
    if (has(c, "avx512f") && has(c, "avx512cd") && has(c, "avx512bw") && has(c, "avx512dq") &&
        has(c, "avx512vl"))
        return L_AVX512;
    if (has(c, "avx2") && has(c, "fma"))
        return L_AVX2;
    if (has(c, "avx"))
        return L_AVX;
    if (has(c, "sse4_2"))
        return L_SSE42;
    return has(c, "pni") ? L_SSE3 : L_NONE;
}

static int coretype_index(const char *name)
{
    for (size_t i = 0; i < sizeof coretypes / sizeof coretypes[0]; i++)
        if (!strcasecmp(name, coretypes[i].name))
            return (int) i;
    return -1;
}

bool hetcl_machine_blas_check(const char *cpuinfo, const char *coretype, char *buf, size_t cap)
{
    if (buf && cap)
        buf[0] = '\0';
    struct cpu c;
    parse_cpuinfo(cpuinfo, &c);
    if (!c.x86 || !buf || cap == 0)
        return false;
    enum level have = cpu_level(&c);
    if (coretype) {
        int k = coretype_index(coretype);
        if (k < 0)
            return false; /* unknown to OpenBLAS: it picks by instruction set, rightly */
        enum level set = coretypes[k].level;
        if (set < have)
            snprintf(buf, cap,
                     "OPENBLAS_CORETYPE=%s is below this CPU's instruction set (%s): an OpenBLAS "
                     "baseline runs %s kernels (on AVX-512 CPUs Haswell's run SGEMM at about half "
                     "speed); unset it or set OPENBLAS_CORETYPE=%s",
                     coretype, level_isa[have], coretypes[k].name, suggest[have]);
        else if (set > have)
            snprintf(buf, cap,
                     "OPENBLAS_CORETYPE=%s needs %s, which this CPU lacks (%s): an OpenBLAS "
                     "baseline would stop on an illegal instruction; set OPENBLAS_CORETYPE=%s",
                     coretype, level_isa[set], level_isa[have], suggest[have]);
        return buf[0] != '\0';
    }
    /* Unset: OpenBLAS detects. 0.3.21-0.3.24 take an Intel family-6 model past their table for
     * a Pentium 4 (see the top of the file). */
    if (!strcmp(c.vendor, "GenuineIntel") && c.family == 6 && c.model >= 0xB0 && have > L_SSE3) {
        snprintf(buf, cap,
                 "OPENBLAS_CORETYPE is unset and OpenBLAS 0.3.21 to 0.3.24 (0.3.21 is Debian 12's) "
                 "detect this CPU (GenuineIntel family 6 model %d, %s) as Prescott, past the end "
                 "of their model table (fixed in 0.3.25): a BLAS baseline runs SSE3 kernels (SGEMM "
                 "33 against 310 GFLOP/s with SkylakeX's, measured on family 6 model 207); set "
                 "OPENBLAS_CORETYPE=%s",
                 c.model, level_isa[have], suggest[have]);
        return true;
    }
    return false;
}

bool hetcl_machine_blas_warning(char *buf, size_t cap)
{
    if (buf && cap)
        buf[0] = '\0';
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (!f)
        return false;
    /* The first processor's block is enough; it ends at the first blank line. */
    char *text = calloc(1, 16384);
    size_t n = text ? fread(text, 1, 16383, f) : 0;
    fclose(f);
    if (!text)
        return false;
    text[n] = '\0';
    bool w = hetcl_machine_blas_check(text, getenv("OPENBLAS_CORETYPE"), buf, cap);
    free(text);
    return w;
}
