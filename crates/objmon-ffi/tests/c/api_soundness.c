/* Regression tests of the C API's contracts (strerror, detach, double attach, two runtimes,
 * foreign threads, poll and native), one protocol per
 * run: api_soundness <protocol> (api_soundness --list: the protocol names). Driven by
 * tests/c_api_soundness.rs under a watchdog, and run under valgrind by .ci/valgrind.sh.
 * Exit status 0 iff every check passed; each failed check prints its line. */
#include "objmon.h"

#include <limits.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "expect.h"


static objmon_runtime *rt;

/* Regression: objmon_strerror takes an integer; a value that is no status is "unknown status"
 * (as strerror answers "Unknown error"), never a wild pointer. */
static void strerror_of_any_int(void) {
    EXPECT(strcmp(objmon_strerror(OBJMON_OK), "ok") == 0);
    EXPECT(strcmp(objmon_strerror(OBJMON_E_NULL), "null pointer argument") == 0);
    const int bad[] = {42, -1, INT_MAX, INT_MIN, 1000};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        const char *m = objmon_strerror(bad[i]);
        EXPECT(m != NULL && strcmp(m, "unknown status") == 0);
    }
}

/* ---- Regression: detach with a structured lock held is refused, never passed on. */

typedef struct {
    objmon_header *h;
    uint16_t id;
    uint32_t count;
    int acquired;
} inheritor;

/* A fresh thread: which id it gets, whether it believes it holds `h`, whether it can take it. */
static void *inherit(void *arg) {
    inheritor *r = arg;
    objmon_thread *me;
    bool got = false;
    if (objmon_thread_attach(rt, &me) != OBJMON_OK) return NULL;
    r->id = objmon_thread_id(me);
    r->count = objmon_lock_count(me, r->h);
    EXPECT(objmon_try_enter(me, r->h, &got) == OBJMON_OK);
    r->acquired = got;
    if (got) EXPECT(objmon_exit(me, r->h) == OBJMON_OK);
    EXPECT(objmon_thread_detach(me, NULL) == OBJMON_OK);
    return NULL;
}

static void detach_with_structured_lock(void) {
    objmon_header *h = calloc(1, sizeof *h);
    objmon_header_init(rt, h);
    objmon_thread *me;
    EXPECT(objmon_thread_attach(rt, &me) == OBJMON_OK);
    uint16_t my_id = objmon_thread_id(me);
    EXPECT(objmon_enter(me, h) == OBJMON_OK);
    EXPECT(objmon_enter(me, h) == OBJMON_OK);
    size_t released = 99;
    objmon_status s = objmon_thread_detach(me, &released);
    EXPECT(s == OBJMON_E_LOCKS_HELD);
    if (s == OBJMON_OK) {
        /* The old behaviour: the handle is gone, the lock stays with the id. Show that the
         * next thread inherits it (the bug), then stop: `me` is dangling. */
        inheritor r = {h, 0, 0, 0};
        pthread_t th;
        pthread_create(&th, NULL, inherit, &r);
        pthread_join(th, NULL);
        EXPECT(r.id != my_id || r.count == 0);
        EXPECT(r.acquired == 0); /* nobody released it: a second thread must not get it */
        return;
    }
    /* Refused: still attached, still the owner; release and detach for real. */
    EXPECT(objmon_lock_count(me, h) == 2);
    EXPECT(objmon_exit(me, h) == OBJMON_OK);
    EXPECT(objmon_thread_detach(me, NULL) == OBJMON_E_LOCKS_HELD);
    EXPECT(objmon_exit(me, h) == OBJMON_OK);
    /* More structured exits than enters: the handle's count does not go below zero. */
    EXPECT(objmon_exit(me, h) == OBJMON_E_ILLEGAL_MONITOR_STATE);
    /* An unstructured hold is released by detach (JNI's DetachCurrentThread); a structured
     * exit cannot take an unstructured level away. */
    EXPECT(objmon_monitor_enter(me, h) == OBJMON_OK);
    EXPECT(objmon_enter(me, h) == OBJMON_OK);
    EXPECT(objmon_exit(me, h) == OBJMON_OK);
    EXPECT(objmon_exit(me, h) == OBJMON_E_ILLEGAL_MONITOR_STATE);
    EXPECT(objmon_lock_count(me, h) == 1);
    released = 0;
    EXPECT(objmon_thread_detach(me, &released) == OBJMON_OK && released == 1);
    inheritor r = {h, 0, 0, 0};
    pthread_t th;
    pthread_create(&th, NULL, inherit, &r);
    pthread_join(th, NULL);
    EXPECT(r.count == 0 && r.acquired == 1);
    uint16_t owner = 99;
    EXPECT(objmon_owner_of(rt, h, &owner) == OBJMON_OK && owner == 0);
    objmon_header_reclaim(rt, h);
    free(h);
}

/* ---- Regression: attaching twice on one OS thread gives the same handle (counted). */

static void attach_twice(void) {
    objmon_header h;
    objmon_header_init(rt, &h);
    objmon_thread *a, *b;
    EXPECT(objmon_thread_attach(rt, &a) == OBJMON_OK);
    EXPECT(objmon_thread_attach(rt, &b) == OBJMON_OK);
    EXPECT(a == b);
    EXPECT(objmon_thread_id(a) == objmon_thread_id(b));
    EXPECT(objmon_enter(a, &h) == OBJMON_OK);
    bool got = false;
    EXPECT(objmon_try_enter(b, &h, &got) == OBJMON_OK && got); /* recursive: same identity */
    EXPECT(objmon_lock_count(a, &h) == 2);
    EXPECT(objmon_exit(b, &h) == OBJMON_OK);
    EXPECT(objmon_exit(a, &h) == OBJMON_OK);
    /* The first detach ends one attach; the handle stays valid until the last. */
    EXPECT(objmon_thread_detach(b, NULL) == OBJMON_OK);
    if (a == b) {
        EXPECT(objmon_enter(a, &h) == OBJMON_OK);
        EXPECT(objmon_exit(a, &h) == OBJMON_OK);
    }
    EXPECT(objmon_thread_detach(a, NULL) == OBJMON_OK);
    objmon_stats st;
    EXPECT(objmon_stats_get(rt, &st) == OBJMON_OK && st.attached_threads == 0);
    /* After the last detach, attaching again is a new attach. */
    objmon_thread *c;
    EXPECT(objmon_thread_attach(rt, &c) == OBJMON_OK);
    EXPECT(objmon_stats_get(rt, &st) == OBJMON_OK && st.attached_threads == 1);
    EXPECT(objmon_thread_detach(c, NULL) == OBJMON_OK);
    objmon_header_reclaim(rt, &h);
}

/* ---- Regression: a header initialised by one runtime and used with another. */

/* The protocols whose header leaves objmon_header room for a runtime tag (4-byte words). */
static int tags_headers(const char *p) {
    return !strcmp(p, "thin") || !strcmp(p, "fat") || !strcmp(p, "cacao") ||
           !strcmp(p, "cacao-seed") || !strcmp(p, "monitor-cache");
}

static void two_runtimes(void) {
    objmon_runtime *rt2;
    EXPECT(objmon_runtime_new(protocol, NULL, &rt2) == OBJMON_OK);
    objmon_header h;
    objmon_header_init(rt, &h);
    objmon_thread *a, *b;
    EXPECT(objmon_thread_attach(rt, &a) == OBJMON_OK);
    EXPECT(objmon_thread_attach(rt2, &b) == OBJMON_OK); /* same OS thread, other runtime */
    EXPECT(a != b);
    EXPECT(objmon_enter(a, &h) == OBJMON_OK);
    if (tags_headers(protocol)) {
        /* Both runtimes' first thread has id 1: without the tag rt2 would think b owns it. */
        EXPECT(objmon_notify(b, &h) == OBJMON_E_FOREIGN_HEADER);
        EXPECT(objmon_wait(b, &h, 1000, NULL) == OBJMON_E_FOREIGN_HEADER);
        uint16_t owner = 99;
        EXPECT(objmon_owner_of(rt2, &h, &owner) == OBJMON_E_FOREIGN_HEADER);
        uint32_t hash = 0;
        EXPECT(objmon_peek_identity_hash(rt2, &h, &hash) == OBJMON_E_FOREIGN_HEADER);
        EXPECT(objmon_header_reclaim(rt2, &h) == OBJMON_E_FOREIGN_HEADER);
        /* Its own runtime still answers. */
        EXPECT(objmon_owner_of(rt, &h, &owner) == OBJMON_OK && owner == objmon_thread_id(a));
        EXPECT(objmon_notify(a, &h) == OBJMON_OK);
    }
    EXPECT(objmon_exit(a, &h) == OBJMON_OK);
    EXPECT(objmon_thread_detach(b, NULL) == OBJMON_OK);
    EXPECT(objmon_thread_detach(a, NULL) == OBJMON_OK);
    EXPECT(objmon_header_reclaim(rt, &h) == OBJMON_OK);
    EXPECT(objmon_runtime_free(rt2) == OBJMON_OK);
}

/* ---- Regression: a handle used from a thread that did not attach it. */

typedef struct {
    objmon_thread *t;
    objmon_header *h;
    objmon_status enter, exit_, detach, wait, notify, poll, native;
    uint32_t count;
    uint16_t id;
} stranger;

static void *use_foreign_handle(void *arg) {
    stranger *s = arg;
    s->enter = objmon_enter(s->t, s->h);
    s->exit_ = objmon_exit(s->t, s->h);
    s->wait = objmon_wait(s->t, s->h, 1000, NULL);
    s->notify = objmon_notify(s->t, s->h);
    s->count = objmon_lock_count(s->t, s->h);
    s->id = objmon_thread_id(s->t);
    s->poll = objmon_poll(s->t);
    s->native = objmon_enter_native(s->t);
    s->detach = objmon_thread_detach(s->t, NULL);
    return NULL;
}

static void wrong_thread(void) {
    objmon_header h;
    objmon_header_init(rt, &h);
    objmon_thread *me;
    EXPECT(objmon_thread_attach(rt, &me) == OBJMON_OK);
    EXPECT(objmon_enter(me, &h) == OBJMON_OK);
    stranger s = {.t = me, .h = &h};
    pthread_t th;
    pthread_create(&th, NULL, use_foreign_handle, &s);
    pthread_join(th, NULL);
    EXPECT(s.enter == OBJMON_E_WRONG_THREAD);
    EXPECT(s.exit_ == OBJMON_E_WRONG_THREAD);
    EXPECT(s.wait == OBJMON_E_WRONG_THREAD);
    EXPECT(s.notify == OBJMON_E_WRONG_THREAD);
    EXPECT(s.poll == OBJMON_E_WRONG_THREAD);
    EXPECT(s.native == OBJMON_E_WRONG_THREAD);
    EXPECT(s.detach == OBJMON_E_WRONG_THREAD);
    EXPECT(s.count == 0 && s.id == 0);
    /* Nothing happened to the owner's state: still held once, still attached. */
    EXPECT(objmon_lock_count(me, &h) == 1);
    EXPECT(objmon_exit(me, &h) == OBJMON_OK);
    EXPECT(objmon_thread_detach(me, NULL) == OBJMON_OK);
    objmon_header_reclaim(rt, &h);
}

/* ---- Regression: poll and native transitions, pairs enforced. */

static void native_pairs(void) {
    objmon_header h;
    objmon_header_init(rt, &h);
    objmon_thread *me;
    EXPECT(objmon_thread_attach(rt, &me) == OBJMON_OK);
    EXPECT(objmon_poll(me) == OBJMON_OK);
    EXPECT(objmon_leave_native(me) == OBJMON_E_NOT_IN_NATIVE);
    EXPECT(objmon_enter(me, &h) == OBJMON_OK); /* a lock held across native stays held */
    EXPECT(objmon_enter_native(me) == OBJMON_OK);
    EXPECT(objmon_enter_native(me) == OBJMON_E_IN_NATIVE);
    /* In native the thread makes no monitor call: refused, nothing done. */
    EXPECT(objmon_enter(me, &h) == OBJMON_E_IN_NATIVE);
    EXPECT(objmon_exit(me, &h) == OBJMON_E_IN_NATIVE);
    EXPECT(objmon_notify(me, &h) == OBJMON_E_IN_NATIVE);
    EXPECT(objmon_poll(me) == OBJMON_E_IN_NATIVE);
    EXPECT(objmon_thread_detach(me, NULL) == OBJMON_E_IN_NATIVE);
    EXPECT(objmon_lock_count(me, &h) == 1); /* reading is allowed */
    EXPECT(objmon_leave_native(me) == OBJMON_OK);
    EXPECT(objmon_leave_native(me) == OBJMON_E_NOT_IN_NATIVE);
    EXPECT(objmon_exit(me, &h) == OBJMON_OK);
    EXPECT(objmon_poll(NULL) == OBJMON_E_NULL);
    EXPECT(objmon_thread_detach(me, NULL) == OBJMON_OK);
    objmon_header_reclaim(rt, &h);
}

/* ---- A moving GC relocates an object held unstructured: the handle's record follows it
 * (detach must release the object at its new address, never touch the old one). Not under
 * `cacao`, `cacao-seed` and `monitor-cache`: they find a held object's monitor by its
 * address, which the core does not move (objmon_relocate's documentation), so a locked
 * object cannot move. */

static void relocate_unstructured(void) {
    if (!strcmp(protocol, "cacao") || !strcmp(protocol, "cacao-seed") ||
        !strcmp(protocol, "monitor-cache"))
        return;
    objmon_header *from = calloc(1, sizeof *from), *to = calloc(1, sizeof *to);
    objmon_header_init(rt, from);
    objmon_thread *me;
    EXPECT(objmon_thread_attach(rt, &me) == OBJMON_OK);
    EXPECT(objmon_monitor_enter(me, from) == OBJMON_OK);
    EXPECT(objmon_monitor_enter(me, from) == OBJMON_OK);
    memcpy(to, from, sizeof *to); /* the collector copies the word, at a safepoint */
    EXPECT(objmon_relocate(rt, from, to) == OBJMON_OK);
    free(from); /* the old copy is garbage (valgrind reports any later access) */
    EXPECT(objmon_lock_count(me, to) == 2);
    EXPECT(objmon_monitor_exit(me, to) == OBJMON_OK);
    size_t released = 0;
    EXPECT(objmon_thread_detach(me, &released) == OBJMON_OK && released == 1);
    uint16_t owner = 99;
    EXPECT(objmon_owner_of(rt, to, &owner) == OBJMON_OK && owner == 0);
    objmon_header_reclaim(rt, to);
    free(to);
}

/* ---- The host's bits of the header, per protocol: as many as documented, kept
 * through locking, inflation (a wait), hashing, a move and reclaim; too wide a value refused;
 * `stack` answers DISPLACED only while stack-locked. */

static unsigned expected_host_width(const char *p) {
    if (!strcmp(p, "tasuki")) return 16;
    if (!strncmp(p, "lightweight", 11) || !strcmp(p, "stack")) return 7;
    return 8;
}

/* The host value in `h`, or `bad` if it cannot be read now (`stack` while stack-locked). */
static uint32_t host_value(const objmon_header *h, uint32_t bad) {
    uint32_t v = 0xdeadbeef;
    objmon_status s = objmon_header_host_bits(rt, h, &v);
    if (s == OBJMON_E_HOST_BITS_DISPLACED && !strcmp(protocol, "stack")) return bad;
    EXPECT(s == OBJMON_OK);
    return v;
}

static void host_bits(void) {
    unsigned w = objmon_host_bits_width(rt);
    EXPECT(w == expected_host_width(protocol));
    EXPECT(objmon_host_bits_width(NULL) == 0);
    objmon_header *h = calloc(1, sizeof *h), *to = calloc(1, sizeof *to);
    EXPECT(host_value(h, 0) == 0); /* all-zero: the value 0 */
    EXPECT(objmon_header_init_host(rt, h, 1u << w) == OBJMON_E_HOST_BITS_TOO_WIDE);
    EXPECT(objmon_header_init_host(rt, h, UINT32_MAX) == OBJMON_E_HOST_BITS_TOO_WIDE);
    EXPECT(objmon_header_init_host(NULL, h, 1) == OBJMON_E_NULL);
    objmon_thread *me;
    EXPECT(objmon_thread_attach(rt, &me) == OBJMON_OK);
    uint32_t all = (1u << w) - 1;
    uint32_t values[2 + 16];
    size_t n = 0;
    values[n++] = all;
    values[n++] = 0x5555u & all;
    for (unsigned b = 0; b < w; b++) values[n++] = 1u << b;
    for (size_t i = 0; i < n; i++) {
        uint32_t v = values[i];
        EXPECT(objmon_header_init_host(rt, h, v) == OBJMON_OK);
        EXPECT(host_value(h, 0) == v);
        EXPECT(objmon_enter(me, h) == OBJMON_OK);
        EXPECT(host_value(h, v) == v); /* locked (stack: displaced) */
        EXPECT(objmon_enter(me, h) == OBJMON_OK);
        EXPECT(objmon_wait(me, h, 1000, NULL) == OBJMON_OK); /* inflates, but for cacao & co */
        EXPECT(host_value(h, v) == v);
        uint32_t hash = 0;
        EXPECT(objmon_identity_hash(me, h, &hash) == OBJMON_OK && hash != 0);
        EXPECT(host_value(h, v) == v);
        EXPECT(objmon_exit(me, h) == OBJMON_OK);
        EXPECT(objmon_exit(me, h) == OBJMON_OK);
        EXPECT(host_value(h, 0) == v); /* unlocked: readable under every protocol */
        memcpy(to, h, sizeof *to); /* an unlocked, hashed object moves */
        EXPECT(objmon_relocate(rt, h, to) == OBJMON_OK);
        EXPECT(host_value(to, 0) == v);
        EXPECT(objmon_header_reclaim(rt, to) == OBJMON_OK);
        EXPECT(host_value(to, 0) == v);
        /* The stale copy: its monitor went with the move and was freed above; reclaiming
         * it again must be a no-op (a debug build of the old code panicked here, caught
         * at the boundary, while a release build put one index twice on the free list). */
        EXPECT(objmon_header_reclaim(rt, h) == OBJMON_OK);
    }
    if (tags_headers(protocol)) {
        objmon_runtime *rt2;
        EXPECT(objmon_runtime_new(protocol, NULL, &rt2) == OBJMON_OK);
        EXPECT(objmon_header_init_host(rt, h, 1) == OBJMON_OK);
        uint32_t v = 0;
        EXPECT(objmon_header_host_bits(rt2, h, &v) == OBJMON_E_FOREIGN_HEADER);
        EXPECT(objmon_runtime_free(rt2) == OBJMON_OK);
    }
    EXPECT(objmon_thread_detach(me, NULL) == OBJMON_OK);
    free(h);
    free(to);
}

int main(int argc, char **argv) {
    setvbuf(stdout, NULL, _IONBF, 0);
    if (argc != 2) {
        fprintf(stderr, "usage: api_soundness <protocol>\n");
        return 2;
    }
    if (!strcmp(argv[1], "--list")) { /* the protocol names, one a line */
        for (size_t i = 0; i < objmon_protocol_count(); i++) puts(objmon_protocol_name(i));
        return 0;
    }
    protocol = argv[1];
    if (objmon_runtime_new(protocol, NULL, &rt) != OBJMON_OK) {
        fprintf(stderr, "no runtime for %s\n", protocol);
        return 2;
    }
    strerror_of_any_int();
    printf("%s: strerror done\n", protocol);
    detach_with_structured_lock();
    printf("%s: detach done\n", protocol);
    attach_twice();
    printf("%s: attach twice done\n", protocol);
    two_runtimes();
    printf("%s: two runtimes done\n", protocol);
    wrong_thread();
    printf("%s: wrong thread done\n", protocol);
    native_pairs();
    printf("%s: native pairs done\n", protocol);
    relocate_unstructured();
    printf("%s: relocation done\n", protocol);
    host_bits();
    printf("%s: host bits done\n", protocol);
    EXPECT(objmon_version() == OBJMON_VERSION); /* header and library agree */
    objmon_runtime_free(rt);
    printf("%s: %s\n", protocol, failures ? "FAILED" : "ok");
    return failures != 0;
}
