/* The reference figure of scripts/bench-image.sh: how many images one core
 * decodes per second when it only decodes them, whole, with TurboJPEG's
 * tjDecompress2 to RGB (accurate DCT and smooth upsampling, pbench's and
 * PIL's defaults), from memory, into one reused buffer.
 *
 *   cc -O2 -o tjdecode_rate bench/peers/tjdecode_rate.c -lturbojpeg
 *   ./tjdecode_rate FOLDER [SECONDS]
 *
 * Loads every file of FOLDER (not recursive) into memory, decodes them in
 * turn for SECONDS (default 3) on one thread after one warm-up pass, and
 * prints one JSON line: images decoded per wall second and per second of
 * the thread's CPU time, and megapixels per CPU second. */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <turbojpeg.h>

struct file {
    unsigned char *data;
    unsigned long len;
};

static double seconds(clockid_t clock)
{
    struct timespec t;
    clock_gettime(clock, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static int load(const char *folder, struct file **files, int *count)
{
    DIR *dir = opendir(folder);
    if (!dir)
        return -1;
    struct dirent *e;
    int cap = 0;
    *count = 0;
    while ((e = readdir(dir))) {
        if (e->d_name[0] == '.')
            continue;
        char path[4096];
        snprintf(path, sizeof(path), "%s/%s", folder, e->d_name);
        FILE *f = fopen(path, "rb");
        if (!f)
            continue;
        fseek(f, 0, SEEK_END);
        long len = ftell(f);
        fseek(f, 0, SEEK_SET);
        if (len <= 0) {
            fclose(f);
            continue;
        }
        if (*count == cap) {
            cap = cap ? 2 * cap : 64;
            *files = realloc(*files, (size_t)cap * sizeof(**files));
        }
        struct file *file = &(*files)[(*count)++];
        file->data = malloc((size_t)len);
        file->len = (unsigned long)fread(file->data, 1, (size_t)len, f);
        fclose(f);
    }
    closedir(dir);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: %s FOLDER [SECONDS]\n", argv[0]);
        return 2;
    }
    double limit = argc > 2 ? atof(argv[2]) : 3.0;
    struct file *files = NULL;
    int count = 0;
    if (load(argv[1], &files, &count) != 0 || count == 0) {
        fprintf(stderr, "%s: no files\n", argv[1]);
        return 1;
    }
    tjhandle tj = tjInitDecompress();
    unsigned char *out = NULL;
    size_t out_cap = 0;
    double pixels = 0;
    long images = 0;
    double wall0 = 0, cpu0 = 0;
    for (int pass = 0;; pass++) {
        if (pass == 1) { /* the first pass warms caches and sizes the buffer */
            wall0 = seconds(CLOCK_MONOTONIC);
            cpu0 = seconds(CLOCK_THREAD_CPUTIME_ID);
        }
        for (int i = 0; i < count; i++) {
            int w, h, subsamp, cs;
            if (tjDecompressHeader3(tj, files[i].data, files[i].len, &w, &h, &subsamp, &cs) != 0)
                continue;
            size_t need = (size_t)w * (size_t)h * 3;
            if (need > out_cap) {
                free(out);
                out = malloc(need);
                out_cap = need;
            }
            if (tjDecompress2(tj, files[i].data, files[i].len, out, w, 0, h, TJPF_RGB, 0) != 0)
                continue;
            if (pass > 0) {
                images++;
                pixels += (double)w * h;
            }
        }
        if (pass > 0 && seconds(CLOCK_MONOTONIC) - wall0 >= limit)
            break;
    }
    double wall = seconds(CLOCK_MONOTONIC) - wall0, cpu = seconds(CLOCK_THREAD_CPUTIME_ID) - cpu0;
    printf("{\"images_per_s\": %.1f, \"images_per_cpu_s\": %.1f, \"mpix_per_cpu_s\": %.2f, "
           "\"images\": %ld, \"files\": %d, \"wall_s\": %.3f, \"cpu_s\": %.3f}\n",
           (double)images / wall, (double)images / cpu, pixels / cpu / 1e6, images, count, wall,
           cpu);
    tjDestroy(tj);
    free(out);
    for (int i = 0; i < count; i++)
        free(files[i].data);
    free(files);
    return 0;
}
