/* Passwords in URLs, kept out of everything pbench shows or stores (see
 * userinfo.h). */
#include "bench/base/userinfo.h"

#include <ctype.h>
#include <pthread.h>
#include <stdint.h>
#include <string.h>
#include <strings.h>

#include "bench/base/pb.h"

struct kept {
    char origin[512]; /* scheme://host[:port]; "" when the entry is free */
    char user[256];
    char password[256];
    char source[64];
    uint64_t order; /* when it was kept, to replace the oldest */
};

static struct kept kept[PB_USERINFO_MAX];
static uint64_t kept_order;
static pthread_mutex_t kept_lock = PTHREAD_MUTEX_INITIALIZER;

/* Where the authority of the URL starting at url begins (after "://"), or
 * NULL when url does not start with a scheme and "://". */
static const char *authority_of(const char *url)
{
    const char *c = url;
    if (!isalpha((unsigned char)*c))
        return NULL;
    while (isalnum((unsigned char)*c) || *c == '+' || *c == '-' || *c == '.')
        c++;
    return strncmp(c, "://", 3) == 0 ? c + 3 : NULL;
}

/* Whether c ends an authority: a path, query or fragment starts, or (in a
 * message) the text around the URL goes on. */
static bool ends_authority(char c)
{
    return c == '\0' || c == '/' || c == '?' || c == '#' || isspace((unsigned char)c) ||
           c == '"' || c == '\'' || c == '<' || c == '>' || c == '`';
}

/* The length of the authority at a, and where its last '@' is (NULL: none). */
static size_t authority_len(const char *a, const char **at_sign)
{
    size_t n = 0;
    *at_sign = NULL;
    for (; !ends_authority(a[n]); n++)
        if (a[n] == '@')
            *at_sign = a + n;
    return n;
}

static int hex_digit(char c)
{
    return c >= '0' && c <= '9'   ? c - '0'
           : c >= 'a' && c <= 'f' ? c - 'a' + 10
           : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                  : -1;
}

/* Copies [from, to) into out percent-decoded, cut to outlen. */
static void decode(const char *from, const char *to, char *out, size_t outlen)
{
    size_t w = 0;
    for (const char *c = from; c < to && w + 1 < outlen; c++) {
        int hi, lo;
        if (*c == '%' && to - c >= 3 && (hi = hex_digit(c[1])) >= 0 && (lo = hex_digit(c[2])) >= 0) {
            out[w++] = (char)(hi * 16 + lo);
            c += 2;
        } else {
            out[w++] = *c;
        }
    }
    if (outlen)
        out[w] = '\0';
}

/* url's origin (scheme://host[:port], any userinfo left out) into out;
 * false when url is no URL or its origin does not fit. */
static bool origin_of(const char *url, char *out, size_t outlen)
{
    const char *a = authority_of(url), *at;
    if (!a)
        return false;
    size_t n = authority_len(a, &at);
    const char *host = at ? at + 1 : a;
    size_t scheme = (size_t)(a - url), host_len = (size_t)(a + n - host);
    if (host_len == 0 || scheme + host_len >= outlen)
        return false;
    memcpy(out, url, scheme);
    memcpy(out + scheme, host, host_len);
    out[scheme + host_len] = '\0';
    return true;
}

static void wipe(struct kept *k)
{
    /* volatile: the compiler must not leave the secret's bytes behind. */
    volatile char *p = (volatile char *)k;
    for (size_t i = 0; i < sizeof(*k); i++)
        p[i] = 0;
}

bool pb_userinfo_take(char *url, const char *source)
{
    const char *a = authority_of(url), *at;
    if (!a)
        return false;
    authority_len(a, &at);
    if (!at)
        return false;
    char origin[sizeof(kept[0].origin)];
    bool fits = origin_of(url, origin, sizeof(origin));
    const char *colon = memchr(a, ':', (size_t)(at - a));
    pthread_mutex_lock(&kept_lock);
    struct kept *slot = NULL, *free_slot = NULL, *oldest = &kept[0];
    for (int i = 0; fits && !slot && i < PB_USERINFO_MAX; i++) {
        if (kept[i].origin[0] && strcasecmp(kept[i].origin, origin) == 0)
            slot = &kept[i];
        else if (!kept[i].origin[0] && !free_slot)
            free_slot = &kept[i];
        else if (kept[i].order < oldest->order)
            oldest = &kept[i];
    }
    slot = slot ? slot : free_slot ? free_slot : oldest;
    if (fits) {
        wipe(slot);
        pb_strlcpy(slot->origin, origin, sizeof(slot->origin));
        decode(a, colon ? colon : at, slot->user, sizeof(slot->user));
        decode(colon ? colon + 1 : at, at, slot->password, sizeof(slot->password));
        pb_strlcpy(slot->source, source ? source : "", sizeof(slot->source));
        slot->order = ++kept_order;
    }
    pthread_mutex_unlock(&kept_lock);
    /* Taken out whether or not it could be kept: a URL too long to key is
     * still never shown with its password. */
    char *from = url + (a - url), *rest = url + (at + 1 - url);
    memmove(from, rest, strlen(rest) + 1);
    return true;
}

bool pb_userinfo_find(const char *url, char *user, size_t userlen, char *password,
                      size_t passwordlen, char *source, size_t sourcelen)
{
    char origin[sizeof(kept[0].origin)];
    bool found = false;
    if (userlen)
        user[0] = '\0';
    if (passwordlen)
        password[0] = '\0';
    if (sourcelen)
        source[0] = '\0';
    if (!origin_of(url, origin, sizeof(origin)))
        return false;
    pthread_mutex_lock(&kept_lock);
    for (int i = 0; !found && i < PB_USERINFO_MAX; i++) {
        if (!kept[i].origin[0] || strcasecmp(kept[i].origin, origin) != 0)
            continue;
        found = true;
        if (userlen)
            pb_strlcpy(user, kept[i].user, userlen);
        if (passwordlen)
            pb_strlcpy(password, kept[i].password, passwordlen);
        if (sourcelen)
            pb_strlcpy(source, kept[i].source, sourcelen);
    }
    pthread_mutex_unlock(&kept_lock);
    return found;
}

char *pb_userinfo_redact(const char *text, char *out, size_t outlen)
{
    static const char stars[] = "***";
    size_t w = 0;
    for (const char *c = text; *c && w + 1 < outlen;) {
        const char *a = NULL, *at = NULL;
        /* A URL starts where a scheme does: at the text's start or after a
         * character that is not part of one. */
        bool starts = c == text || !(isalnum((unsigned char)c[-1]) || c[-1] == '+' ||
                                     c[-1] == '-' || c[-1] == '.');
        if (starts)
            a = authority_of(c);
        if (a)
            authority_len(a, &at);
        if (!at) {
            out[w++] = *c++;
            continue;
        }
        for (; c < a && w + 1 < outlen; c++)
            out[w++] = *c;
        for (size_t i = 0; i < sizeof(stars) - 1 && w + 1 < outlen; i++)
            out[w++] = stars[i];
        c = at; /* the '@' and the host are copied as they are */
    }
    out[w] = '\0';
    return out;
}

void pb_userinfo_redact_msg(char *msg, size_t msglen)
{
    char raw[4096];
    if (!msglen || !strstr(msg, "@"))
        return;
    pb_strlcpy(raw, msg, sizeof(raw));
    pb_userinfo_redact(raw, msg, msglen);
}

void pb_userinfo_forget_all(void)
{
    pthread_mutex_lock(&kept_lock);
    for (int i = 0; i < PB_USERINFO_MAX; i++)
        wipe(&kept[i]);
    pthread_mutex_unlock(&kept_lock);
}
