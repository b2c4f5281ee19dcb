/*
 * Checks the JSON that `hetcl devices --json` printed while the fake ICD (fake_icd.c) misbehaved.
 *
 *   check_devices_json FILE MODE [--expect-platform NAME]... [--vendors DIR]
 *       Exit 0 when FILE follows the devices contract and shows what MODE (a HETCL_FAKE_ICD_MODE,
 *       or a scenario of run_isolation.sh: missing-lib, two-crash, crash-missing) must produce;
 *       1 with one line per failed assertion otherwise. Each --expect-platform names a platform
 *       that worked without the fake ICD and so must still be listed, not broken, with at least
 *       one device (not checked in crash-load and hang-load, where the fault is in the loader's
 *       own initialization). --vendors names the vendor directory hetcl was given, which a
 *       no_device_reason must name (not a directory of hetcl's own).
 *   check_devices_json FILE --list-working
 *       Prints the name of every platform that is not broken and has a device, one per line
 *       (used on a run without the fake ICD, to learn what --expect-platform to pass).
 *
 * The contract (schema_version 1), as far as these tests rely on it:
 *   { "schema_version": 1,
 *     "opencl": { "no_device_reason": "",
 *                 "platforms": [ {"index", "name", "broken", "broken_reason", ...} ],
 *                 "devices": [ {"id", "platform_index", "name", "type", ...} ],
 *                 "broken_devices": [ {"id": "p<platform>d<device>", "reason"} ] } }
 */
#include <cjson/cJSON.h>

#include <ctype.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FAKE_PLATFORM_NAME "hetcl fake ICD"
#define FAKE_DEVICE_NAME   "fake gpu"

static int failures;

__attribute__((format(printf, 1, 2))) static void fail(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs("check_devices_json: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    failures++;
}

/* Case-insensitive substring search (strcasestr is a GNU extension). */
static bool contains_ci(const char *hay, const char *needle)
{
    size_t n = strlen(needle);
    for (; hay != NULL && *hay != '\0'; hay++) {
        size_t i = 0;
        while (i < n && hay[i] != '\0' &&
               tolower((unsigned char) hay[i]) == tolower((unsigned char) needle[i])) {
            i++;
        }
        if (i == n) {
            return true;
        }
    }
    return false;
}

/* Does reason name the fault? words: '|'-separated alternatives, matched case-insensitively. */
static bool reason_matches(const char *reason, const char *words)
{
    char buf[256];
    if (reason == NULL) {
        return false;
    }
    snprintf(buf, sizeof buf, "%s", words);
    for (char *w = buf, *bar; w != NULL; w = bar ? bar + 1 : NULL) {
        bar = strchr(w, '|');
        if (bar != NULL) {
            *bar = '\0';
        }
        if (contains_ci(reason, w)) {
            return true;
        }
    }
    return false;
}

static char *read_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (f == NULL) {
        return NULL;
    }
    size_t cap = 4096, len = 0;
    char *buf = malloc(cap);
    while (buf != NULL) {
        len += fread(buf + len, 1, cap - len - 1, f);
        if (len < cap - 1) {
            break;
        }
        cap *= 2;
        char *grown = realloc(buf, cap);
        if (grown == NULL) {
            free(buf);
        }
        buf = grown;
    }
    if (buf != NULL) {
        buf[len] = '\0';
    }
    fclose(f);
    return buf;
}

static const char *get_string(const cJSON *obj, const char *key)
{
    const cJSON *it = cJSON_GetObjectItemCaseSensitive(obj, key);
    return cJSON_IsString(it) ? it->valuestring : NULL;
}

static bool get_int(const cJSON *obj, const char *key, int *out)
{
    const cJSON *it = cJSON_GetObjectItemCaseSensitive(obj, key);
    if (!cJSON_IsNumber(it)) {
        return false;
    }
    *out = it->valueint;
    return true;
}

static bool is_broken(const cJSON *platform)
{
    return cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(platform, "broken"));
}

/* The parts of the contract every mode relies on; returns the "opencl" object or NULL. */
static const cJSON *check_shape(const cJSON *root)
{
    int version = 0;
    if (!cJSON_IsObject(root)) {
        fail("%s", "the document is not a JSON object");
        return NULL;
    }
    if (!get_int(root, "schema_version", &version) || version != 1) {
        fail("%s", "schema_version is not 1");
    }
    const cJSON *cl = cJSON_GetObjectItemCaseSensitive(root, "opencl");
    if (!cJSON_IsObject(cl)) {
        fail("%s", "no \"opencl\" object");
        return NULL;
    }
    if (get_string(cl, "no_device_reason") == NULL) {
        fail("%s", "opencl.no_device_reason is not a string");
    }
    const char *arrays[] = {"platforms", "devices", "broken_devices"};
    for (size_t i = 0; i < sizeof arrays / sizeof arrays[0]; i++) {
        if (!cJSON_IsArray(cJSON_GetObjectItemCaseSensitive(cl, arrays[i]))) {
            fail("opencl.%s is not an array", arrays[i]);
            return NULL;
        }
    }
    const cJSON *p;
    int seen[64], n_seen = 0;
    cJSON_ArrayForEach(p, cJSON_GetObjectItemCaseSensitive(cl, "platforms"))
    {
        int index;
        if (!get_int(p, "index", &index) || get_string(p, "name") == NULL ||
            !cJSON_IsBool(cJSON_GetObjectItemCaseSensitive(p, "broken")) ||
            get_string(p, "broken_reason") == NULL) {
            fail("%s", "a platform lacks index, name, broken or broken_reason");
            return NULL;
        }
        if (is_broken(p) && get_string(p, "broken_reason")[0] == '\0') {
            fail("platform \"%s\" is broken with an empty broken_reason", get_string(p, "name"));
        }
        /* Every platform, broken or not, has its own number. */
        for (int i = 0; i < n_seen; i++) {
            if (seen[i] == index) {
                fail("two platforms are numbered %d", index);
            }
        }
        if (n_seen < 64) {
            seen[n_seen++] = index;
        }
    }
    const cJSON *d;
    cJSON_ArrayForEach(d, cJSON_GetObjectItemCaseSensitive(cl, "devices"))
    {
        int index;
        if (get_string(d, "id") == NULL || !get_int(d, "platform_index", &index)) {
            fail("%s", "a device lacks id or platform_index");
            return NULL;
        }
    }
    cJSON_ArrayForEach(d, cJSON_GetObjectItemCaseSensitive(cl, "broken_devices"))
    {
        if (get_string(d, "id") == NULL || get_string(d, "reason") == NULL) {
            fail("%s", "a broken device lacks id or reason");
            return NULL;
        }
    }
    return cl;
}

static const cJSON *find_platform(const cJSON *cl, const char *name)
{
    const cJSON *p;
    cJSON_ArrayForEach(p, cJSON_GetObjectItemCaseSensitive(cl, "platforms"))
    {
        if (strcmp(get_string(p, "name"), name) == 0) {
            return p;
        }
    }
    return NULL;
}

static int n_devices_of(const cJSON *cl, int platform_index)
{
    int n = 0, index;
    const cJSON *d;
    cJSON_ArrayForEach(d, cJSON_GetObjectItemCaseSensitive(cl, "devices"))
    {
        if (get_int(d, "platform_index", &index) && index == platform_index) {
            n++;
        }
    }
    return n;
}

static bool fake_device_listed(const cJSON *cl)
{
    const cJSON *d;
    cJSON_ArrayForEach(d, cJSON_GetObjectItemCaseSensitive(cl, "devices"))
    {
        const char *name = get_string(d, "name");
        if (name != NULL && strcmp(name, FAKE_DEVICE_NAME) == 0) {
            return true;
        }
    }
    return false;
}

/*
 * The fake platform must be listed, broken or with broken devices, and a reason (the platform's, or
 * that of one of its devices "p<index>d...") must contain one of words. devices_may_break: the
 * fault is in a per-device query, so a broken_devices entry is an acceptable place for the reason.
 */
static void check_fake_broken(const cJSON *cl, const char *words, bool devices_may_break)
{
    const cJSON *fake = find_platform(cl, FAKE_PLATFORM_NAME);
    int index = -1;
    if (fake == NULL) {
        fail("%s", "the platform \"" FAKE_PLATFORM_NAME "\" is not listed");
        return;
    }
    get_int(fake, "index", &index);
    if (fake_device_listed(cl)) {
        fail("%s", "the faulty device \"" FAKE_DEVICE_NAME "\" is listed as working");
    }
    bool found = is_broken(fake) && reason_matches(get_string(fake, "broken_reason"), words);
    if (devices_may_break) {
        char prefix[32];
        snprintf(prefix, sizeof prefix, "p%dd", index);
        const cJSON *d;
        cJSON_ArrayForEach(d, cJSON_GetObjectItemCaseSensitive(cl, "broken_devices"))
        {
            if (strncmp(get_string(d, "id"), prefix, strlen(prefix)) == 0 &&
                reason_matches(get_string(d, "reason"), words)) {
                found = true;
            }
        }
    } else {
        if (!is_broken(fake)) {
            fail("%s", "the platform \"" FAKE_PLATFORM_NAME "\" is not marked broken");
        }
        if (n_devices_of(cl, index) != 0) {
            fail("%s", "devices of the broken fake platform are listed as working");
        }
    }
    if (!found) {
        fail("no reason for the fake platform or its devices mentions any of: %s", words);
    }
}

static void check_fake_ok(const cJSON *cl)
{
    const cJSON *fake = find_platform(cl, FAKE_PLATFORM_NAME);
    int index = -1, n = -1;
    if (fake == NULL) {
        fail("%s", "the platform \"" FAKE_PLATFORM_NAME "\" is not listed");
        return;
    }
    get_int(fake, "index", &index);
    if (is_broken(fake)) {
        fail("the healthy fake platform is marked broken: %s", get_string(fake, "broken_reason"));
    }
    if (get_int(fake, "n_devices", &n) && n != 1) {
        fail("%s", "the fake platform's n_devices is not 1");
    }
    const cJSON *d, *gpu = NULL;
    int platform_index;
    cJSON_ArrayForEach(d, cJSON_GetObjectItemCaseSensitive(cl, "devices"))
    {
        if (get_int(d, "platform_index", &platform_index) && platform_index == index) {
            gpu = d;
        }
    }
    if (gpu == NULL) {
        fail("%s", "no device of the fake platform is listed");
        return;
    }
    const char *name = get_string(gpu, "name"), *type = get_string(gpu, "type");
    if (name == NULL || strcmp(name, FAKE_DEVICE_NAME) != 0) {
        fail("the fake device is named \"%s\", not \"" FAKE_DEVICE_NAME "\"",
             name ? name : "(none)");
    }
    if (type == NULL || strcmp(type, "GPU") != 0) {
        fail("the fake device's type is \"%s\", not \"GPU\"", type ? type : "(none)");
    }
    cJSON_ArrayForEach(d, cJSON_GetObjectItemCaseSensitive(cl, "broken_devices"))
    {
        if (strcmp(get_string(d, "id"), get_string(gpu, "id")) == 0) {
            fail("the healthy fake device is listed as broken: %s", get_string(d, "reason"));
        }
    }
}

/*
 * The fault kills or stalls the loader's initialization, so no platform of the process can be
 * trusted. Either hetcl isolates each vendor and lists the others, or it lists nothing and says
 * why; never a working fake device, never a silent empty list.
 */
static void check_load_fault(const cJSON *cl, const char *words)
{
    const cJSON *fake = find_platform(cl, FAKE_PLATFORM_NAME);
    if (fake != NULL && !is_broken(fake)) {
        fail("%s", "the platform \"" FAKE_PLATFORM_NAME "\" is listed as working");
    }
    if (fake_device_listed(cl)) {
        fail("%s", "the faulty device \"" FAKE_DEVICE_NAME "\" is listed as working");
    }
    const char *why = get_string(cl, "no_device_reason");
    if (cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(cl, "devices")) == 0) {
        if (why == NULL || why[0] == '\0') {
            fail("%s", "no device is listed and no_device_reason is empty");
        } else if (!reason_matches(why, words)) {
            fail("no_device_reason mentions none of: %s", words);
        }
    }
}

static void check_expected_platform(const cJSON *cl, const char *name)
{
    const cJSON *p = find_platform(cl, name);
    int index = -1;
    if (p == NULL) {
        fail("the platform \"%s\", which works without the fake ICD, is not listed", name);
        return;
    }
    if (is_broken(p)) {
        fail("the platform \"%s\", which works without the fake ICD, is marked broken", name);
    }
    get_int(p, "index", &index);
    if (n_devices_of(cl, index) == 0) {
        fail("the platform \"%s\", which works without the fake ICD, lists no device", name);
    }
}

/* A broken platform whose name (the vendor file's) is name, with a reason containing each of
 * the '|'-free words (all of them). */
static void check_vendor_broken(const cJSON *cl, const char *name, const char *const *words,
                                size_t n_words)
{
    const cJSON *p = find_platform(cl, name);
    if (p == NULL) {
        fail("no platform is listed for the vendor file %s", name);
        return;
    }
    if (!is_broken(p)) {
        fail("the platform of the vendor file %s is not marked broken", name);
        return;
    }
    for (size_t i = 0; i < n_words; i++) {
        if (!contains_ci(get_string(p, "broken_reason"), words[i])) {
            fail("the reason of the vendor file %s (\"%s\") does not mention \"%s\"", name,
                 get_string(p, "broken_reason"), words[i]);
        }
    }
}

/* No device at all: the reason names the vendor directory the user gave (vendors; NULL: not
 * checked), never a private directory of hetcl's. */
static void check_no_device(const cJSON *cl, const char *vendors)
{
    const char *why = get_string(cl, "no_device_reason");
    if (cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(cl, "devices")) != 0) {
        fail("%s", "a device is listed although every driver is broken");
    }
    if (why == NULL || why[0] == '\0') {
        fail("%s", "no device is listed and no_device_reason is empty");
        return;
    }
    if (strstr(why, "hetcl-icd-") != NULL) {
        fail("no_device_reason names hetcl's private vendor directory: %s", why);
    }
    if (vendors != NULL && strstr(why, vendors) == NULL) {
        fail("no_device_reason does not name the vendor directory %s: %s", vendors, why);
    }
}

#define CRASH_WORDS "crash|signal|SIGSEGV|segmentation"
#define HANG_WORDS  "time|hang|SIGKILL"

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: %s FILE MODE [--expect-platform NAME]... | FILE --list-working\n",
                argv[0]);
        return 2;
    }
    const char *path = argv[1], *mode = argv[2];
    char *text = read_file(path);
    if (text == NULL) {
        fprintf(stderr, "check_devices_json: cannot read %s\n", path);
        return 1;
    }
    const char *end = NULL;
    cJSON *root = cJSON_ParseWithOpts(text, &end, 1);
    if (root == NULL) {
        fail("%s is not one JSON document (stdout must hold nothing else)", path);
        free(text);
        return 1;
    }
    const cJSON *cl = check_shape(root);
    const char *vendors = NULL;
    for (int i = 3; i + 1 < argc; i++) {
        if (strcmp(argv[i], "--vendors") == 0) {
            vendors = argv[i + 1];
        }
    }
    if (cl != NULL && strcmp(mode, "--list-working") == 0) {
        const cJSON *p;
        int index;
        cJSON_ArrayForEach(p, cJSON_GetObjectItemCaseSensitive(cl, "platforms"))
        {
            if (!is_broken(p) && get_int(p, "index", &index) && n_devices_of(cl, index) > 0) {
                printf("%s\n", get_string(p, "name"));
            }
        }
    } else if (cl != NULL) {
        bool load_fault = false;
        if (strcmp(mode, "ok") == 0) {
            check_fake_ok(cl);
        } else if (strcmp(mode, "crash-devices") == 0) {
            check_fake_broken(cl, CRASH_WORDS, false);
        } else if (strcmp(mode, "hang-devices") == 0) {
            check_fake_broken(cl, HANG_WORDS, false);
        } else if (strcmp(mode, "fail-devices") == 0) {
            check_fake_broken(cl, "CL_OUT_OF_HOST_MEMORY", false);
        } else if (strcmp(mode, "crash-info") == 0) {
            check_fake_broken(cl, CRASH_WORDS, true);
        } else if (strcmp(mode, "crash-load") == 0) {
            check_load_fault(cl, CRASH_WORDS);
            load_fault = true;
        } else if (strcmp(mode, "hang-load") == 0) {
            check_load_fault(cl, HANG_WORDS);
            load_fault = true;
        } else if (strcmp(mode, "crash-context") == 0) {
            /* The device lists and describes; it crashes when opened. */
            check_fake_broken(cl, CRASH_WORDS, true);
            check_fake_broken(cl, "clCreateContext", true);
        } else if (strcmp(mode, "fail-context") == 0) {
            check_fake_broken(cl, "CL_DEVICE_NOT_AVAILABLE", true);
        } else if (strcmp(mode, "fail-queue") == 0) {
            check_fake_broken(cl, "clCreateCommandQueue", true);
        } else if (strcmp(mode, "fail-build") == 0) {
            check_fake_broken(cl, "clBuildProgram", true);
        } else if (strcmp(mode, "missing-lib") == 0) {
            const char *words[] = {"missing.icd", "libhetcl_not_installed.so", "not found"};
            check_vendor_broken(cl, "missing.icd", words, 3);
        } else if (strcmp(mode, "two-crash") == 0) {
            const char *words[] = {"SIGSEGV"};
            check_vendor_broken(cl, "a.icd", words, 1);
            check_vendor_broken(cl, "b.icd", words, 1);
            check_no_device(cl, vendors);
        } else if (strcmp(mode, "crash-missing") == 0) {
            const char *crash[] = {"SIGSEGV"};
            const char *missing[] = {"libhetcl_not_installed.so", "not found"};
            check_vendor_broken(cl, "fake.icd", crash, 1);
            check_vendor_broken(cl, "missing.icd", missing, 2);
            check_no_device(cl, vendors);
        } else {
            fail("unknown mode %s", mode);
        }
        for (int i = 3; i < argc; i++) {
            if (strcmp(argv[i], "--vendors") == 0 && i + 1 < argc) {
                i++; /* read before the mode's checks */
            } else if (strcmp(argv[i], "--expect-platform") == 0 && i + 1 < argc) {
                if (!load_fault) {
                    check_expected_platform(cl, argv[++i]);
                } else {
                    i++;
                }
            } else {
                fail("unknown argument %s", argv[i]);
            }
        }
    }
    cJSON_Delete(root);
    free(text);
    return failures == 0 ? 0 : 1;
}
