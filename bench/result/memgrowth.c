/* Memory growth over a point (bench/result/memgrowth.h): a line fitted to the RSS
 * samples against batches, per 1000 batches, with its 95% interval. */
#include "bench/result/memgrowth.h"

#include <math.h>
#include <stdlib.h>

#include "bench/base/pb.h"

/* Two-sided 95% quantile of Student's t with dof degrees of freedom. */
static double t975(size_t dof)
{
    static const double table[] = {0,     12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365,
                                   2.306, 2.262,  2.228, 2.201, 2.179, 2.160, 2.145, 2.131,
                                   2.120, 2.110,  2.101, 2.093, 2.086};
    if (dof < PB_ARRAY_LEN(table))
        return table[dof];
    return dof < 30 ? 2.06 : dof < 60 ? 2.02 : dof < 120 ? 1.99 : 1.96;
}

int pb_slope_fit(const double *x, const double *y, const int *group, size_t n, double *slope,
                 double *ci_half)
{
    int groups = 0;
    for (size_t i = 0; i < n; i++)
        if (group[i] + 1 > groups)
            groups = group[i] + 1;
    if (groups == 0 || n < (size_t)groups + 3)
        return PB_ERR;
    double *mx = calloc((size_t)groups * 3, sizeof(double)), *my = mx + groups, *cnt = my + groups;
    if (!mx)
        return PB_ERR_NOMEM;
    for (size_t i = 0; i < n; i++) {
        mx[group[i]] += x[i];
        my[group[i]] += y[i];
        cnt[group[i]] += 1;
    }
    for (int g = 0; g < groups; g++)
        if (cnt[g] > 0) {
            mx[g] /= cnt[g];
            my[g] /= cnt[g];
        }
    double sxx = 0, sxy = 0;
    for (size_t i = 0; i < n; i++) {
        double dx = x[i] - mx[group[i]], dy = y[i] - my[group[i]];
        sxx += dx * dx;
        sxy += dx * dy;
    }
    int rc = PB_ERR;
    if (sxx > 0) {
        double b = sxy / sxx, rss = 0;
        for (size_t i = 0; i < n; i++) {
            double r = (y[i] - my[group[i]]) - b * (x[i] - mx[group[i]]);
            rss += r * r;
        }
        size_t dof = n - (size_t)groups - 1;
        *slope = b;
        *ci_half = t975(dof) * sqrt(rss / (double)dof / sxx);
        rc = PB_OK;
    }
    free(mx);
    return rc;
}

/* The samples of the measured part of each finished repeat, as (k
 * batches, MiB less pbench's own buffers, repeat) into x, y, group: the
 * lowest RSS of each run of PB_MEMGROWTH_WINDOW samples, the floor the
 * memory comes back to. Allocate-and-free per sample saws RSS up and down
 * between samples; its floor stays flat, while a leak lifts the floor too.
 * With later_half, every sample of each repeat's second half (too few to
 * take floors of; a saw there only widens the interval). Returns the
 * count; *groups the repeats that gave 3 or more. */
static size_t floor_samples(const struct pb_point_result *point, size_t repeats, bool later_half,
                            double *x, double *y, int *group, int *groups)
{
    size_t n = 0;
    *groups = 0;
    for (size_t r = 0; r < repeats; r++) {
        const struct pb_repeat_result *rep = &point->repeats[r];
        if (rep->rss_count < 3 || rep->wall_s <= 0 || rep->batches_per_s <= 0)
            continue;
        /* The sampler runs from the repeat's start to just after its
         * measured part: the last wall_s seconds of it are measured. */
        double end_s = rep->rss[rep->rss_count - 1].t_s, start_s = end_s - rep->wall_s;
        if (later_half)
            start_s += rep->wall_s / 2;
        size_t before = n, in_window = 0;
        for (size_t i = 0; i < rep->rss_count; i++) {
            if (rep->rss[i].t_s < start_s)
                continue;
            double k = (rep->rss[i].t_s - start_s) * rep->batches_per_s / 1000.0;
            /* pbench's own growing buffers (the trace, the batch records)
             * are not the pipeline's growth. */
            double mib =
                ((double)rep->rss[i].rss_bytes - (double)rep->rss[i].own_bytes) / 1048576.0;
            if (in_window == 0 || mib < y[n - 1]) {
                if (in_window == 0)
                    n++;
                x[n - 1] = k;
                y[n - 1] = mib;
                group[n - 1] = *groups;
            }
            in_window = later_half ? 0 : (in_window + 1) % PB_MEMGROWTH_WINDOW;
        }
        if (in_window != 0) /* a last window cut short has no floor to speak of */
            n--;
        if (n - before >= 3)
            (*groups)++;
        else
            n = before;
    }
    return n;
}

void pb_memory_growth_check(struct pb_point_result *point, double threshold_mib)
{
    struct pb_memory_growth *g = &point->memory_growth;
    *g = (struct pb_memory_growth){0};
    size_t repeats = pb_point_finished_repeats(point), cap = 0;
    for (size_t r = 0; r < repeats; r++)
        cap += point->repeats[r].rss_count;
    if (cap == 0)
        return;
    double *x = malloc(cap * sizeof(double)), *y = malloc(cap * sizeof(double));
    int *group = malloc(cap * sizeof(int));
    int groups = 0, later_groups = 0;
    size_t n = x && y && group ? floor_samples(point, repeats, false, x, y, group, &groups) : 0;
    /* The measured batches and seconds of a repeat, on average: what the
     * slope is projected over. */
    double batches = 0, seconds = 0;
    for (size_t r = 0; r < repeats; r++) {
        batches += point->repeats[r].wall_s * point->repeats[r].batches_per_s;
        seconds += point->repeats[r].wall_s;
    }
    batches /= repeats ? (double)repeats : 1;
    seconds /= repeats ? (double)repeats : 1;
    double slope, half, later_slope = 0, later_half = 0;
    if (groups > 0 && pb_slope_fit(x, y, group, n, &slope, &half) == PB_OK) {
        g->known = true;
        g->mib_per_1000_batches = slope;
        g->ci_low = slope - half;
        g->ci_high = slope + half;
        g->samples = n;
        g->repeats = groups;
        g->significant = g->ci_low > 0 || g->ci_high < 0;
        g->judged = batches >= PB_MEMGROWTH_MIN_BATCHES;
        /* Settling (allocator arenas, caches filling, workers touching
         * their pages once) rises early and flattens: a leak grows as fast
         * in each repeat's second half, and by a material amount. */
        size_t later = floor_samples(point, repeats, true, x, y, group, &later_groups);
        bool steady = later_groups > 0 &&
                      pb_slope_fit(x, y, group, later, &later_slope, &later_half) == PB_OK &&
                      later_slope - later_half > 0 && later_slope >= slope / 2;
        bool material = slope * batches / 1000.0 >= PB_MEMGROWTH_MIN_MIB ||
                        (batches >= PB_MEMGROWTH_LONG_BATCHES && seconds >= PB_MEMGROWTH_LONG_S);
        if (g->judged && g->significant && slope > 0 && slope >= threshold_mib && material &&
            steady)
            pb_point_warn(point,
                          "memory grows %.1f MiB per 1000 batches (95%% interval %.1f to %.1f, "
                          "the floor of RSS over the measured part of %d repeat%s, as fast in "
                          "their second halves): a leak, or a cache without a bound, in the "
                          "pipeline",
                          slope, g->ci_low, g->ci_high, groups, groups == 1 ? "" : "s");
    }
    free(x);
    free(y);
    free(group);
}

json_t *pb_memory_growth_to_json(const struct pb_memory_growth *g)
{
    if (!g->known)
        return NULL;
    return json_pack("{s f s f s f s I s i s b s b}", "mib_per_1000_batches",
                     g->mib_per_1000_batches, "ci95_low", g->ci_low, "ci95_high", g->ci_high,
                     "samples", (json_int_t)g->samples, "repeats", g->repeats, "significant",
                     g->significant, "judged", g->judged);
}

void pb_memory_growth_from_json(const json_t *obj, struct pb_memory_growth *g)
{
    *g = (struct pb_memory_growth){0};
    const json_t *slope = json_object_get(obj, "mib_per_1000_batches");
    if (!json_is_object(obj) || !json_is_number(slope))
        return;
    g->known = true;
    g->mib_per_1000_batches = json_number_value(slope);
    g->ci_low = json_number_value(json_object_get(obj, "ci95_low"));
    g->ci_high = json_number_value(json_object_get(obj, "ci95_high"));
    g->samples = (size_t)json_integer_value(json_object_get(obj, "samples"));
    g->repeats = (int)json_integer_value(json_object_get(obj, "repeats"));
    g->significant = json_is_true(json_object_get(obj, "significant"));
    const json_t *judged = json_object_get(obj, "judged");
    g->judged = judged ? json_is_true(judged) : true; /* older results judged every run */
}
