/* The machine fingerprint written into every result (hwloc, uname, the
 * build and the linked libraries' versions) and the small GPU helpers the
 * runner needs (device check, pinned host memory). */
#include "bench/sys/machine.h"

#include <stdarg.h>
#include <string.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <hwloc.h>
#include <jansson.h>
#include <jconfig.h>
#include <libavcodec/avcodec.h>
#include <libavformat/avformat.h>
#include <libavutil/avutil.h>
#include <sqlite3.h>
#include <libswscale/swscale.h>
#include <yaml.h>

#if PB_HAVE_CUDA
#include <cuda_runtime_api.h>
#endif

#include "bench/base/pb.h"

#define STRINGIFY_(x) #x
#define STRINGIFY(x) STRINGIFY_(x)

/* Copies text into a fixed buffer, cut to fit. */
static void copy_text(char *dst, size_t size, const char *src)
{
    size_t n = strlen(src);
    if (n >= size)
        n = size - 1;
    memcpy(dst, src, n);
    dst[n] = '\0';
}

/* Trims trailing white space (and a newline) in place. */
static void trim_end(char *s)
{
    size_t n = strlen(s);
    while (n > 0 && (s[n - 1] == '\n' || s[n - 1] == ' ' || s[n - 1] == '\t'))
        s[--n] = '\0';
}

/* Copies the value of the first line "key<sep>value" of a text file,
 * without surrounding quotes. Returns 1 when found. */
static int read_keyed_line(const char *file, const char *key, char sep, char *out, size_t size)
{
    FILE *f = fopen(file, "r");
    if (!f)
        return 0;
    char line[512];
    size_t key_len = strlen(key);
    int found = 0;
    while (!found && fgets(line, sizeof(line), f)) {
        if (strncmp(line, key, key_len) != 0)
            continue;
        char *p = line + key_len;
        while (*p == ' ' || *p == '\t')
            p++;
        if (*p != sep)
            continue;
        p++;
        while (*p == ' ' || *p == '\t')
            p++;
        trim_end(p);
        size_t n = strlen(p);
        if (n >= 2 && (p[0] == '"' || p[0] == '\'') && p[n - 1] == p[0]) {
            p[n - 1] = '\0';
            p++;
        }
        copy_text(out, size, p);
        found = 1;
    }
    fclose(f);
    return found;
}

static void add_library(struct pb_machine *m, const char *name, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void add_library(struct pb_machine *m, const char *name, const char *fmt, ...)
{
    if (m->library_count >= (int)PB_ARRAY_LEN(m->libraries))
        return;
    char(*entry)[48] = m->libraries[m->library_count++];
    snprintf(entry[0], sizeof(entry[0]), "%s", name);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(entry[1], sizeof(entry[1]), fmt, ap);
    va_end(ap);
}

/* FFmpeg packs versions as major << 16 | minor << 8 | micro. */
static void add_ffmpeg_library(struct pb_machine *m, const char *name, unsigned version)
{
    add_library(m, name, "%u.%u.%u", version >> 16, (version >> 8) & 0xff, version & 0xff);
}

static void probe_topology(struct pb_machine *m)
{
    hwloc_topology_t topology;
    if (hwloc_topology_init(&topology) != 0)
        return;
    if (hwloc_topology_load(topology) == 0) {
        m->packages = hwloc_get_nbobjs_by_type(topology, HWLOC_OBJ_PACKAGE);
        m->cores = hwloc_get_nbobjs_by_type(topology, HWLOC_OBJ_CORE);
        m->pus = hwloc_get_nbobjs_by_type(topology, HWLOC_OBJ_PU);
        m->numa_nodes = hwloc_get_nbobjs_by_type(topology, HWLOC_OBJ_NUMANODE);
        hwloc_obj_t package = hwloc_get_obj_by_type(topology, HWLOC_OBJ_PACKAGE, 0);
        const char *model = package ? hwloc_obj_get_info_by_name(package, "CPUModel") : NULL;
        if (model)
            copy_text(m->cpu_model, sizeof(m->cpu_model), model);
        int l3_count = hwloc_get_nbobjs_by_type(topology, HWLOC_OBJ_L3CACHE);
        for (int i = 0; i < l3_count; i++) {
            hwloc_obj_t l3 = hwloc_get_obj_by_type(topology, HWLOC_OBJ_L3CACHE, (unsigned)i);
            if (l3 && l3->attr)
                m->l3_bytes += l3->attr->cache.size;
        }
        /* Memory comes from the kernel below (_SC_PHYS_PAGES): hwloc's
         * NUMA view can report less than the machine has in VMs. */
    }
    hwloc_topology_destroy(topology);
}

static void probe_gpu(struct pb_machine *m)
{
#if PB_HAVE_CUDA
    int version = 0, count = 0;
    if (cudaRuntimeGetVersion(&version) == cudaSuccess) {
        m->cuda_runtime_version = version;
        add_library(m, "cuda-runtime", "%d.%d", version / 1000, (version % 1000) / 10);
    }
    if (cudaDriverGetVersion(&version) == cudaSuccess)
        m->cuda_driver_version = version;
    cudaError_t err = cudaGetDeviceCount(&count);
    if (err != cudaSuccess || count <= 0) {
        m->gpu_count = 0;
        snprintf(m->gpu_status, sizeof(m->gpu_status), "no CUDA device: %s",
                 err != cudaSuccess ? cudaGetErrorString(err) : "no devices found");
        return;
    }
    m->gpu_count = count;
    struct cudaDeviceProp prop;
    if (cudaGetDeviceProperties(&prop, 0) == cudaSuccess)
        copy_text(m->gpu_name, sizeof(m->gpu_name), prop.name);
    snprintf(m->gpu_status, sizeof(m->gpu_status), "ok");
#else
    m->gpu_count = 0;
    snprintf(m->gpu_status, sizeof(m->gpu_status), "built without CUDA");
#endif
}

void pb_machine_probe(struct pb_machine *m)
{
    memset(m, 0, sizeof(*m));
    if (gethostname(m->hostname, sizeof(m->hostname)) != 0)
        snprintf(m->hostname, sizeof(m->hostname), "unknown");
    m->hostname[sizeof(m->hostname) - 1] = '\0';

    probe_topology(m);
    if (!m->cpu_model[0] &&
        !read_keyed_line("/proc/cpuinfo", "model name", ':', m->cpu_model, sizeof(m->cpu_model)))
        snprintf(m->cpu_model, sizeof(m->cpu_model), "unknown");
    if (m->pus <= 0) {
        long online = sysconf(_SC_NPROCESSORS_ONLN);
        m->pus = online > 0 ? (int)online : 1;
    }
    if (m->cores <= 0)
        m->cores = m->pus;
    if (m->packages <= 0)
        m->packages = 1;
    if (m->memory_bytes == 0) {
        long pages = sysconf(_SC_PHYS_PAGES), page_bytes = sysconf(_SC_PAGESIZE);
        if (pages > 0 && page_bytes > 0)
            m->memory_bytes = (uint64_t)pages * (uint64_t)page_bytes;
    }

    if (!read_keyed_line("/etc/os-release", "PRETTY_NAME", '=', m->os, sizeof(m->os)))
        snprintf(m->os, sizeof(m->os), "unknown");
    struct utsname uts;
    if (uname(&uts) == 0) {
        snprintf(m->kernel, sizeof(m->kernel), "%.60s %.60s", uts.sysname, uts.release);
        copy_text(m->arch, sizeof(m->arch), uts.machine);
    }
    snprintf(m->compiler, sizeof(m->compiler), "%s", PB_COMPILER);
    snprintf(m->build_type, sizeof(m->build_type), "%s", PB_BUILD_TYPE);
    snprintf(m->sanitize, sizeof(m->sanitize), "%s", PB_SANITIZE);

    add_library(m, "libyaml", "%s", yaml_get_version_string());
    add_library(m, "libjpeg-turbo", "%s", STRINGIFY(LIBJPEG_TURBO_VERSION));
    add_ffmpeg_library(m, "libavformat", avformat_version());
    add_ffmpeg_library(m, "libavcodec", avcodec_version());
    add_ffmpeg_library(m, "libavutil", avutil_version());
    add_ffmpeg_library(m, "libswscale", swscale_version());
    unsigned hwloc = hwloc_get_api_version();
    /* hwloc exposes its API version at run time, not its release number. */
    add_library(m, "hwloc-api", "%u.%u.%u", hwloc >> 16, (hwloc >> 8) & 0xff, hwloc & 0xff);
    add_library(m, "jansson", "%s", jansson_version_str());
    add_library(m, "sqlite", "%s", sqlite3_libversion());
    probe_gpu(m);
}

void pb_machine_print_versions(FILE *out, const struct pb_machine *m)
{
    fprintf(out, "pbench %s (%s build, %s%s%s)\n", PB_VERSION, PB_BUILD_TYPE, m->compiler,
            strcmp(PB_SANITIZE, "OFF") ? ", sanitize=" : "",
            strcmp(PB_SANITIZE, "OFF") ? PB_SANITIZE : "");
    fprintf(out, "  CUDA support: %s; MPI support: %s\n", PB_HAVE_CUDA ? "built" : "not built",
            PB_HAVE_MPI ? "built and used (mpirun -n N pbench run CONFIG: one merged result)"
                        : "not built");
    for (int i = 0; i < m->library_count; i++)
        fprintf(out, "  %-14s %s\n", m->libraries[i][0], m->libraries[i][1]);
    if (m->cuda_runtime_version) {
        fprintf(out, "  CUDA runtime %d.%d, ", m->cuda_runtime_version / 1000,
                (m->cuda_runtime_version % 1000) / 10);
        if (m->cuda_driver_version)
            fprintf(out, "driver %d.%d\n", m->cuda_driver_version / 1000,
                    (m->cuda_driver_version % 1000) / 10);
        else
            fprintf(out, "no CUDA driver\n");
    }
    fprintf(out, "  GPU: %s%s%s\n", m->gpu_count ? m->gpu_name : "", m->gpu_count ? ", " : "",
            m->gpu_status);
    fprintf(out, "  machine: %s, %d cores / %d threads, %s\n", m->cpu_model, m->cores, m->pus,
            m->kernel);
}
