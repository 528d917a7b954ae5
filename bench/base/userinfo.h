/* Passwords in URLs, kept out of everything pbench shows or stores.
 *
 * A dataset URL may carry a user and password (`http://user:PASS@host/data/`
 * in dataset.path, dataset.endpoint or dataset.manifest). The config layer
 * takes that `user:PASS@` out of the value as it parses it (the option type
 * PB_OPT_URL, bench/base/opt.h), so the spec, the result, the table, the
 * trace, the served page and every message hold the URL without it. The
 * user and password are kept here instead, by the URL's origin
 * (scheme://host[:port]), with the option that gave them, and only the
 * requests to that origin (pipelines/remote.c) ask for them.
 *
 * A process-wide table of a few entries, behind a lock: written while the
 * config is read, read by each request's set-up. Nothing here allocates. */
#ifndef PB_USERINFO_H
#define PB_USERINFO_H

#include <stdbool.h>
#include <stddef.h>

/* Origins whose user and password are kept at once; a new origin beyond
 * these replaces the oldest. */
#define PB_USERINFO_MAX 8

/* Takes the userinfo (what comes before the last '@' of the authority) out
 * of url in place when url is scheme://user[:password]@host/..., and keeps
 * it, percent-decoded, for url's origin; source names where it came from
 * ("dataset.path"), for pb_userinfo_find. A later one for the same origin
 * replaces it. Returns true when one was taken out; url is untouched when
 * it is no URL or has no userinfo. */
bool pb_userinfo_take(char *url, const char *source);

/* The user and password kept for url's origin (url holds no userinfo):
 * true with them in user and password (each cut to its buffer) and the
 * option that gave them in source; false, all three "", when none is
 * kept. Any buffer may be NULL with its length 0. */
bool pb_userinfo_find(const char *url, char *user, size_t userlen, char *password,
                      size_t passwordlen, char *source, size_t sourcelen);

/* Copies text into out (outlen > 0 bytes) with the userinfo of every URL in
 * it written as three stars (the authority "user:PASS@host" of a URL becomes
 * "***@host"). For messages that quote what the user typed. Returns out. */
char *pb_userinfo_redact(const char *text, char *out, size_t outlen);

/* pb_userinfo_redact over a message in place (its first 4095 bytes): for
 * the errors of the functions that read what the user typed. */
void pb_userinfo_redact_msg(char *msg, size_t msglen);

/* Forgets every kept user and password, their bytes overwritten (tests, and
 * the end of a session that wants none left in memory). */
void pb_userinfo_forget_all(void);

#endif
