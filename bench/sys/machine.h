/* The machine a result was measured on: its fingerprint (hwloc, uname, the
 * build, the linked libraries' versions and the GPU status). */
#ifndef PB_MACHINE_H
#define PB_MACHINE_H

#include <stddef.h>
#include <stdio.h>
#include <stdint.h>

/* Where the machine's fingerprint comes from: hwloc, uname, the compiler
 * and the libraries linked into this build. */
struct pb_machine {
    char hostname[128];
    char cpu_model[160];
    int packages, cores, pus, numa_nodes;
    uint64_t l3_bytes;          /* total L3 across packages              */
    uint64_t memory_bytes;
    char os[128];               /* PRETTY_NAME from /etc/os-release       */
    char kernel[128];           /* uname -sr                              */
    char arch[32];
    char compiler[64];
    char build_type[32];
    char sanitize[64];
    /* Library versions, "name version" pairs. */
    int library_count;
    char libraries[12][2][48];
    /* GPU: gpu_count is 0 when none; gpu_status says why. */
    int gpu_count;
    char gpu_name[128];
    char gpu_status[160];       /* "no CUDA device: ..." or "ok"          */
    int cuda_runtime_version;   /* e.g. 13000; 0 when not built with CUDA */
    int cuda_driver_version;
};

/* Fills the machine fingerprint (hwloc, uname, library versions, GPU). */
void pb_machine_probe(struct pb_machine *machine);

/* `pbench version`: pbench and its build options, every library version,
 * the CUDA runtime and driver, the GPU and the machine, from machine. */
void pb_machine_print_versions(FILE *out, const struct pb_machine *machine);

#endif
