/* A toy object model on the objmon C ABI: a few thousand objects with headers (each
 * object's class id in the header's host bits), several pthreads locking, nesting, waiting and
 * notifying, run once per protocol.
 * Exit status 0 iff every check passed. Usage: toy_vm [protocol...] (default: all), each
 * protocol's run followed by its deadlock phase.
 *
 * Like a real VM, an attached thread that blocks outside objmon (here: joining a thread
 * while holding a lock, spinning on a flag) does so in native (objmon_enter_native /
 * objmon_leave_native): with membarrier denied, `biased` revokes a running owner's bias by
 * a handshake that would otherwise wait for it forever (.ci/valgrind.sh runs this under
 * tests/c/no_membarrier.c). */
#include "objmon.h"

#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define N_OBJECTS 4096
#define N_WORKERS 4
#define ROUNDS 20000
#define N_ITEMS 2000

typedef struct object {
    objmon_header header; /* the VM's header slot; its host bits hold the object's "class" */
    int64_t value;        /* only touched while holding the object's monitor */
} object;

/* The toy VM's class id of heap object i, kept in the header's host bits (no second word). */
static uint32_t class_of(int i, const objmon_runtime *r) {
    return (uint32_t)i & ((1u << objmon_host_bits_width(r)) - 1);
}

static object *heap;
static objmon_runtime *rt;
static object queue_obj; /* a one-slot queue guarded by its own monitor */
static int64_t queue_slot, consumed_sum;
static int failures;

#define CHECK(call)                                                                         \
    do {                                                                                    \
        objmon_status s_ = (call);                                                          \
        if (s_ != OBJMON_OK) {                                                              \
            fprintf(stderr, "%s:%d: %s -> %s\n", __FILE__, __LINE__, #call,                 \
                    objmon_strerror(s_));                                                   \
            __atomic_add_fetch(&failures, 1, __ATOMIC_RELAXED);                             \
            return NULL;                                                                    \
        }                                                                                   \
    } while (0)

#define EXPECT(cond)                                                                        \
    do {                                                                                    \
        if (!(cond)) {                                                                      \
            fprintf(stderr, "%s:%d: expected %s\n", __FILE__, __LINE__, #cond);             \
            __atomic_add_fetch(&failures, 1, __ATOMIC_RELAXED);                             \
        }                                                                                   \
    } while (0)

static uint32_t next_rand(uint32_t *s) {
    *s ^= *s << 13;
    *s ^= *s >> 17;
    *s ^= *s << 5;
    return *s;
}

/* Random pairs of objects, locked in address order (no deadlock), the first one nested. */
static void *worker(void *arg) {
    uint32_t seed = (uint32_t)(uintptr_t)arg * 2654435761u + 1;
    objmon_thread *me;
    CHECK(objmon_thread_attach(rt, &me));
    for (int r = 0; r < ROUNDS; r++) {
        object *a = &heap[next_rand(&seed) % N_OBJECTS];
        object *b = &heap[next_rand(&seed) % N_OBJECTS];
        if (a > b) { object *t = a; a = b; b = t; }
        CHECK(objmon_enter(me, &a->header));
        CHECK(objmon_enter(me, &a->header)); /* nested */
        if (objmon_lock_count(me, &a->header) != 2) {
            fprintf(stderr, "lock count %u != 2\n", objmon_lock_count(me, &a->header));
            failures++;
        }
        if (b != a) CHECK(objmon_enter(me, &b->header));
        a->value += 1;
        if (b != a) b->value += 1; else a->value += 1;
        if (b != a) CHECK(objmon_exit(me, &b->header));
        CHECK(objmon_exit(me, &a->header));
        CHECK(objmon_exit(me, &a->header));
    }
    CHECK(objmon_thread_detach(me, NULL));
    return NULL;
}

static void *producer(void *arg) {
    objmon_thread *me;
    (void)arg;
    CHECK(objmon_thread_attach(rt, &me));
    for (int64_t i = 1; i <= N_ITEMS; i++) {
        CHECK(objmon_monitor_enter(me, &queue_obj.header)); /* JNI style */
        while (queue_slot != 0) CHECK(objmon_wait(me, &queue_obj.header, 0, NULL));
        queue_slot = i;
        CHECK(objmon_notify_all(me, &queue_obj.header));
        CHECK(objmon_monitor_exit(me, &queue_obj.header));
    }
    CHECK(objmon_thread_detach(me, NULL));
    return NULL;
}

static void *consumer(void *arg) {
    objmon_thread *me;
    (void)arg;
    CHECK(objmon_thread_attach(rt, &me));
    for (int i = 0; i < N_ITEMS; i++) {
        CHECK(objmon_enter(me, &queue_obj.header));
        while (queue_slot == 0) {
            objmon_wait_outcome o;
            CHECK(objmon_wait(me, &queue_obj.header, 50 * 1000 * 1000, &o)); /* 50 ms */
        }
        consumed_sum += queue_slot;
        queue_slot = 0;
        CHECK(objmon_notify(me, &queue_obj.header));
        CHECK(objmon_exit(me, &queue_obj.header));
    }
    CHECK(objmon_thread_detach(me, NULL));
    return NULL;
}

/* Identity hashes: hashers take them of objects in every lock state (unlocked, nested under
 * their own lock, held or waited on by another thread) while a waiter keeps waiting on some;
 * the first hash seen per object is recorded and every later answer must equal it. */
#define N_HASHED 256
#define HASH_ROUNDS 4000
static uint32_t first_hash[N_HASHED];
static int hash_waiting_done;

static void record_hash(int i, uint32_t v) {
    uint32_t expected = 0;
    if (v == 0) {
        fprintf(stderr, "object %d: hash 0\n", i);
        __atomic_add_fetch(&failures, 1, __ATOMIC_RELAXED);
    } else if (!__atomic_compare_exchange_n(&first_hash[i], &expected, v, 0, __ATOMIC_SEQ_CST,
                                            __ATOMIC_SEQ_CST) && expected != v) {
        fprintf(stderr, "object %d: hash %#x, first seen %#x\n", i, v, expected);
        __atomic_add_fetch(&failures, 1, __ATOMIC_RELAXED);
    }
}

static void *hasher(void *arg) {
    uint32_t seed = (uint32_t)(uintptr_t)arg * 2246822519u + 7;
    objmon_thread *me;
    CHECK(objmon_thread_attach(rt, &me));
    for (int r = 0; r < HASH_ROUNDS; r++) {
        int i = (int)(next_rand(&seed) % N_HASHED);
        unsigned depth = next_rand(&seed) % 3;
        for (unsigned d = 0; d < depth; d++) CHECK(objmon_enter(me, &heap[i].header));
        uint32_t v = 0;
        CHECK(objmon_identity_hash(me, &heap[i].header, &v));
        record_hash(i, v);
        if (objmon_lock_count(me, &heap[i].header) != depth) {
            fprintf(stderr, "hashing changed the lock count\n");
            __atomic_add_fetch(&failures, 1, __ATOMIC_RELAXED);
        }
        for (unsigned d = 0; d < depth; d++) CHECK(objmon_exit(me, &heap[i].header));
    }
    CHECK(objmon_thread_detach(me, NULL));
    return NULL;
}

/* Waits (briefly) on the first few hashed objects over and over, so that they are inflated,
 * owned by a waiter, or in its wait set while the hashers hash them. */
static void *hash_waiter(void *arg) {
    objmon_thread *me;
    (void)arg;
    CHECK(objmon_thread_attach(rt, &me));
    for (int r = 0; !__atomic_load_n(&hash_waiting_done, __ATOMIC_SEQ_CST); r++) {
        object *o = &heap[r % 8];
        CHECK(objmon_enter(me, &o->header));
        CHECK(objmon_wait(me, &o->header, 100 * 1000, NULL)); /* 100 us */
        CHECK(objmon_exit(me, &o->header));
    }
    CHECK(objmon_thread_detach(me, NULL));
    return NULL;
}

/* Hashes one object from another thread while the caller holds it. */
static void *hash_one(void *arg) {
    objmon_thread *me;
    object *o = arg;
    uint32_t *v = malloc(sizeof *v);
    *v = 0;
    CHECK(objmon_thread_attach(rt, &me));
    CHECK(objmon_identity_hash(me, &o->header, v));
    CHECK(objmon_thread_detach(me, NULL));
    return v;
}

/* A moving GC: an object first hashed by another thread while its owner held it (thin,
 * biased and fable keep that hash in a table keyed by address), then copied to a new address
 * while no thread is inside objmon; objmon_relocate reports the move and the hash follows. */
static void relocation_check(void) {
    static object from, to;
    objmon_thread *owner;
    pthread_t th;
    void *res = NULL;
    EXPECT(objmon_header_init_host(rt, &from.header, 1) == OBJMON_OK); /* class 1 */
    if (objmon_thread_attach(rt, &owner) != OBJMON_OK) {
        failures++;
        return;
    }
    EXPECT(objmon_enter(owner, &from.header) == OBJMON_OK);
    /* Blocks outside objmon while holding `from`, which the other thread hashes (under
     * `biased` that revokes our bias): in native. */
    EXPECT(objmon_enter_native(owner) == OBJMON_OK);
    pthread_create(&th, NULL, hash_one, &from);
    pthread_join(th, &res);
    EXPECT(objmon_leave_native(owner) == OBJMON_OK);
    uint32_t theirs = res ? *(uint32_t *)res : 0, moved = 0;
    free(res);
    EXPECT(objmon_exit(owner, &from.header) == OBJMON_OK);
    memcpy(&to.header, &from.header, sizeof to.header); /* the collector copies the word */
    EXPECT(objmon_relocate(rt, &from.header, &to.header) == OBJMON_OK);
    objmon_header_init(rt, &from.header); /* the old copy is garbage; reuse the slot */
    EXPECT(objmon_identity_hash(owner, &to.header, &moved) == OBJMON_OK);
    EXPECT(theirs != 0 && moved == theirs);
    uint32_t class = 0;
    EXPECT(objmon_header_host_bits(rt, &to.header, &class) == OBJMON_OK && class == 1);
    EXPECT(objmon_relocate(NULL, &from.header, &to.header) == OBJMON_E_NULL);
    objmon_thread_detach(owner, NULL);
    objmon_header_reclaim(rt, &to.header);
    objmon_header_reclaim(rt, &from.header);
}

static void hash_phase(void) {
    pthread_t th[4];
    /* First hash taken by another thread while the owner holds the lock (once, then nested);
     * the owner, and anybody after the release, must get the same value. Held once by an
     * owner in native, `thin`'s hasher parks the hash at once (the release settles it). */
    for (int k = 0; k < 2; k++) {
        object *o = &heap[N_HASHED + k];
        objmon_thread *owner;
        void *res = NULL;
        if (objmon_thread_attach(rt, &owner) != OBJMON_OK) {
            failures++;
            return;
        }
        for (int d = 0; d <= k % 2; d++) EXPECT(objmon_enter(owner, &o->header) == OBJMON_OK);
        EXPECT(objmon_enter_native(owner) == OBJMON_OK); /* blocks in pthread_join */
        pthread_create(&th[0], NULL, hash_one, o);
        pthread_join(th[0], &res);
        EXPECT(objmon_leave_native(owner) == OBJMON_OK);
        uint32_t theirs = res ? *(uint32_t *)res : 0, mine = 0, after = 0;
        free(res);
        EXPECT(objmon_identity_hash(owner, &o->header, &mine) == OBJMON_OK);
        for (int d = 0; d <= k % 2; d++) EXPECT(objmon_exit(owner, &o->header) == OBJMON_OK);
        EXPECT(objmon_identity_hash(owner, &o->header, &after) == OBJMON_OK);
        EXPECT(theirs != 0 && theirs == mine && mine == after);
        objmon_thread_detach(owner, NULL);
    }
    relocation_check();
    memset(first_hash, 0, sizeof first_hash);
    hash_waiting_done = 0;
    pthread_create(&th[3], NULL, hash_waiter, NULL);
    for (uintptr_t i = 0; i < 3; i++) pthread_create(&th[i], NULL, hasher, (void *)i);
    for (int i = 0; i < 3; i++) pthread_join(th[i], NULL);
    __atomic_store_n(&hash_waiting_done, 1, __ATOMIC_SEQ_CST);
    pthread_join(th[3], NULL);
    objmon_thread *me;
    if (objmon_thread_attach(rt, &me) != OBJMON_OK) {
        failures++;
        return;
    }
    for (int i = 0; i < N_HASHED; i++) {
        uint32_t v = 0, p = 0;
        EXPECT(objmon_peek_identity_hash(rt, &heap[i].header, &p) == OBJMON_OK);
        EXPECT(p == first_hash[i]); /* 0 = never hashed; nothing is locked now */
        EXPECT(objmon_identity_hash(me, &heap[i].header, &v) == OBJMON_OK);
        record_hash(i, v);
    }
    EXPECT(objmon_identity_hash(NULL, &heap[0].header, NULL) == OBJMON_E_NULL);
    objmon_thread_detach(me, NULL);
}

static int run(const char *protocol) {
    objmon_config cfg = {0};
    printf("%-18s running\n", protocol);
    objmon_status s = objmon_runtime_new(protocol, &cfg, &rt);
    if (s == OBJMON_E_UNSUPPORTED) {
        printf("%-18s skipped: %s\n", protocol, objmon_strerror(s));
        return 0;
    }
    if (s != OBJMON_OK) {
        fprintf(stderr, "runtime_new(%s): %s\n", protocol, objmon_strerror(s));
        return 1;
    }
    failures = 0;
    heap = calloc(N_OBJECTS, sizeof(object));
    for (int i = 0; i < N_OBJECTS; i++)
        EXPECT(objmon_header_init_host(rt, &heap[i].header, class_of(i, rt)) == OBJMON_OK);
    objmon_header_init(rt, &queue_obj.header);
    queue_slot = consumed_sum = 0;

    /* Misuse is an error code, not a crash. */
    objmon_thread *me;
    if (objmon_thread_attach(rt, &me) != OBJMON_OK) return 1;
    EXPECT(objmon_exit(me, &heap[0].header) == OBJMON_E_ILLEGAL_MONITOR_STATE);
    EXPECT(objmon_notify(me, &heap[0].header) == OBJMON_E_ILLEGAL_MONITOR_STATE);
    EXPECT(objmon_wait(me, &heap[0].header, -1, NULL) == OBJMON_E_INVALID_TIMEOUT);
    EXPECT(objmon_enter(NULL, &heap[0].header) == OBJMON_E_NULL);
    uint16_t owner = 99;
    EXPECT(objmon_enter(me, &heap[0].header) == OBJMON_OK);
    EXPECT(objmon_owner_of(rt, &heap[0].header, &owner) == OBJMON_OK);
    EXPECT(owner == objmon_thread_id(me));
    /* A timed wait that nobody notifies times out. */
    objmon_wait_outcome o = OBJMON_NOTIFIED;
    EXPECT(objmon_wait(me, &heap[0].header, 1000000, &o) == OBJMON_OK && o == OBJMON_TIMED_OUT);
    /* Interrupt before wait: returns at once with OBJMON_E_INTERRUPTED. */
    EXPECT(objmon_interrupt(rt, objmon_thread_id(me)) == OBJMON_OK);
    EXPECT(objmon_wait(me, &heap[0].header, 0, NULL) == OBJMON_E_INTERRUPTED);
    EXPECT(!objmon_thread_interrupted(me));
    EXPECT(objmon_exit(me, &heap[0].header) == OBJMON_OK);
    /* Detach releases unstructured locks. */
    EXPECT(objmon_monitor_enter(me, &heap[1].header) == OBJMON_OK);
    size_t released = 0;
    EXPECT(objmon_thread_detach(me, &released) == OBJMON_OK && released == 1);
    EXPECT(objmon_owner_of(rt, &heap[1].header, &owner) == OBJMON_OK && owner == 0);

    pthread_t th[N_WORKERS + 2];
    for (uintptr_t i = 0; i < N_WORKERS; i++) pthread_create(&th[i], NULL, worker, (void *)i);
    pthread_create(&th[N_WORKERS], NULL, producer, NULL);
    pthread_create(&th[N_WORKERS + 1], NULL, consumer, NULL);
    for (int i = 0; i < N_WORKERS + 2; i++) pthread_join(th[i], NULL);

    int64_t total = 0;
    for (int i = 0; i < N_OBJECTS; i++) {
        total += heap[i].value;
        EXPECT(objmon_owner_of(rt, &heap[i].header, &owner) == OBJMON_OK && owner == 0);
    }
    EXPECT(total == (int64_t)N_WORKERS * ROUNDS * 2);
    EXPECT(consumed_sum == (int64_t)N_ITEMS * (N_ITEMS + 1) / 2);

    hash_phase();
    /* End of the phase: no deadlock, and a thread dump (nobody attached: just the title). */
    size_t n_edges = 99, dump_len = 0;
    char dump[256];
    const objmon_header *dump_objs[2] = {&heap[0].header, &queue_obj.header};
    EXPECT(objmon_find_deadlocks(rt, NULL, 0, &n_edges) == OBJMON_OK && n_edges == 0);
    EXPECT(objmon_thread_dump(rt, dump_objs, 2, dump, sizeof dump, &dump_len) == OBJMON_OK);
    EXPECT(strstr(dump, "Full thread dump") != NULL && dump_len == strlen(dump));

    /* Every object kept its class through the locking, waiting, hashing and moving. */
    for (int i = 0; i < N_OBJECTS; i++) {
        uint32_t c = UINT32_MAX;
        EXPECT(objmon_header_host_bits(rt, &heap[i].header, &c) == OBJMON_OK);
        EXPECT(c == class_of(i, rt));
    }
    objmon_stats st;
    EXPECT(objmon_stats_get(rt, &st) == OBJMON_OK && st.attached_threads == 0);
    for (int i = 0; i < N_OBJECTS; i++) objmon_header_reclaim(rt, &heap[i].header);
    objmon_header_reclaim(rt, &queue_obj.header);
    EXPECT(objmon_stats_get(rt, &st) == OBJMON_OK && st.live_monitors == 0);
    printf("%-18s ok: %lld increments, %d items, %llu inflations\n", protocol,
           (long long)total, N_ITEMS, (unsigned long long)st.inflations);
    free(heap);
    objmon_runtime_free(rt);
    return failures != 0;
}

/* A deliberate two-thread deadlock, found by objmon_find_deadlocks and then left as it is:
 * its threads stay blocked (never joined) until the process exits; its runtime and objects
 * are leaked with them. */
typedef struct deadlock {
    objmon_runtime *rt;
    object obj[2];
    int ready;
    uint16_t ids[2];
} deadlock;

typedef struct deadlocker_arg {
    deadlock *d;
    int i;
} deadlocker_arg;

static void *deadlocker(void *arg) {
    deadlock *d = ((deadlocker_arg *)arg)->d;
    int i = ((deadlocker_arg *)arg)->i;
    objmon_thread *me;
    CHECK(objmon_thread_attach(d->rt, &me));
    d->ids[i] = objmon_thread_id(me);
    CHECK(objmon_enter(me, &d->obj[i].header));
    __atomic_add_fetch(&d->ready, 1, __ATOMIC_SEQ_CST);
    CHECK(objmon_enter_native(me)); /* spins outside objmon, holding obj[i] */
    while (__atomic_load_n(&d->ready, __ATOMIC_SEQ_CST) < 2) sched_yield();
    CHECK(objmon_leave_native(me));
    CHECK(objmon_enter(me, &d->obj[1 - i].header)); /* never returns */
    fprintf(stderr, "a deadlocked enter returned\n");
    __atomic_add_fetch(&failures, 1, __ATOMIC_RELAXED);
    return NULL;
}

static int deadlock_phase(const char *protocol) {
    deadlock *d = calloc(1, sizeof(deadlock));
    static deadlocker_arg args[64][2];
    static int phase;
    objmon_status s = objmon_runtime_new(protocol, NULL, &d->rt);
    if (s == OBJMON_E_UNSUPPORTED) return 0;
    if (s != OBJMON_OK || phase >= 64) return 1;
    for (int i = 0; i < 2; i++) objmon_header_init(d->rt, &d->obj[i].header);
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    for (int i = 0; i < 2; i++) {
        pthread_t th;
        args[phase][i] = (deadlocker_arg){d, i};
        pthread_create(&th, &attr, deadlocker, &args[phase][i]);
    }
    phase++;
    objmon_deadlock_edge e[4];
    size_t n = 0;
    time_t give_up = time(NULL) + 20;
    while (n == 0 && time(NULL) < give_up) {
        if (objmon_find_deadlocks(d->rt, e, 4, &n) != OBJMON_OK) return 1;
        if (n == 0) sched_yield();
    }
    int before = failures;
    EXPECT(n == 2);
    if (n == 2) {
        EXPECT(e[0].cycle == 0 && e[1].cycle == 0);
        EXPECT(e[0].held_by == e[1].thread && e[1].held_by == e[0].thread);
        for (int k = 0; k < 2; k++) {
            int mine = e[k].thread == d->ids[0] ? 0 : 1;
            EXPECT(e[k].thread == d->ids[mine]);
            EXPECT(e[k].object == (uintptr_t)&d->obj[1 - mine].header);
        }
    }
    printf("%-18s deadlock of threads %u and %u found and left\n", protocol, d->ids[0], d->ids[1]);
    return failures != before;
}

/* Monitor events through the C callback: a timed-out wait, a notified wait naming its
 * notifier, notify counts, statistics on request; the callback runs on the event's thread,
 * outside objmon's locks (it calls objmon itself), and stops when cleared. */
#define MAX_EVENTS 256
typedef struct event_log {
    pthread_mutex_t mu;
    const objmon_runtime *rt;
    const objmon_header *probe; /* the callback asks objmon about it: re-entry is allowed */
    size_t n;
    objmon_event ev[MAX_EVENTS];
} event_log;

static void on_event(const objmon_event *e, void *user) {
    event_log *elog = user;
    uint16_t owner;
    objmon_owner_of(elog->rt, elog->probe, &owner); /* a call into objmon from the callback */
    pthread_mutex_lock(&elog->mu);
    if (elog->n < MAX_EVENTS) elog->ev[elog->n++] = *e;
    pthread_mutex_unlock(&elog->mu);
}

static object ev_obj;
static int waiter_in;
static uint16_t waiter_id;

static void *event_waiter(void *arg) {
    objmon_runtime *r = arg;
    objmon_thread *me;
    CHECK(objmon_thread_attach(r, &me));
    waiter_id = objmon_thread_id(me);
    CHECK(objmon_enter(me, &ev_obj.header));
    __atomic_store_n(&waiter_in, 1, __ATOMIC_SEQ_CST);
    objmon_wait_outcome o = OBJMON_TIMED_OUT;
    CHECK(objmon_wait(me, &ev_obj.header, 0, &o)); /* until notified */
    EXPECT(o == OBJMON_NOTIFIED);
    CHECK(objmon_exit(me, &ev_obj.header));
    objmon_thread_detach(me, NULL);
    return NULL;
}

/* The events of `log` of `kind` on thread `thread` (0: any), the last one in `*last`. */
static size_t count_events(event_log *elog, uint32_t kind, uint16_t thread,
                           const objmon_event **last) {
    size_t c = 0;
    for (size_t i = 0; i < elog->n; i++)
        if (elog->ev[i].kind == kind && (thread == 0 || elog->ev[i].thread == thread)) {
            c++;
            *last = &elog->ev[i];
        }
    return c;
}

static int events_phase(const char *protocol) {
    int before = failures;
    objmon_runtime *r, *quiet;
    objmon_config cfg = {0};
    cfg.events = 1;
    if (objmon_runtime_new(protocol, &cfg, &r) != OBJMON_OK) return 1;
    if (objmon_runtime_new(protocol, NULL, &quiet) != OBJMON_OK) return 1;
    EXPECT(objmon_set_event_callback(quiet, on_event, NULL, NULL) == OBJMON_E_EVENTS_OFF);
    objmon_runtime_free(quiet);
    static event_log elog;
    memset(&elog, 0, sizeof elog);
    pthread_mutex_init(&elog.mu, NULL);
    elog.rt = r;
    elog.probe = &ev_obj.header;
    uint64_t zero[OBJMON_EVENT_KINDS] = {0};
    EXPECT(objmon_set_event_callback(r, on_event, &elog, zero) == OBJMON_OK);
    objmon_header_init(r, &ev_obj.header);
    objmon_thread *me;
    if (objmon_thread_attach(r, &me) != OBJMON_OK) return 1;
    uint16_t my_id = objmon_thread_id(me);
    const objmon_event *e = NULL;

    /* A timed wait that nobody notifies: one MONITOR_WAIT, TIMED_OUT, its timeout. */
    EXPECT(objmon_enter(me, &ev_obj.header) == OBJMON_OK);
    objmon_wait_outcome o = OBJMON_NOTIFIED;
    EXPECT(objmon_wait(me, &ev_obj.header, 1000000, &o) == OBJMON_OK && o == OBJMON_TIMED_OUT);
    EXPECT(objmon_exit(me, &ev_obj.header) == OBJMON_OK);
    EXPECT(count_events(&elog, OBJMON_EVENT_MONITOR_WAIT, my_id, &e) == 1);
    if (e) {
        EXPECT(e->detail == OBJMON_WAIT_END_TIMED_OUT && e->other_thread == 0);
        EXPECT(e->timeout_nanos == 1000000); /* the timeout asked */
        EXPECT(e->object == (uintptr_t)&ev_obj.header && e->monitor != 0);
    }

    /* A waiter notified by this thread names it; the notify says it woke one. */
    pthread_t w;
    __atomic_store_n(&waiter_in, 0, __ATOMIC_SEQ_CST);
    pthread_create(&w, NULL, event_waiter, r);
    while (!__atomic_load_n(&waiter_in, __ATOMIC_SEQ_CST)) sched_yield();
    /* The waiter holds the monitor until its wait lets go: then it is in the wait set. */
    EXPECT(objmon_enter(me, &ev_obj.header) == OBJMON_OK);
    EXPECT(objmon_notify(me, &ev_obj.header) == OBJMON_OK);
    EXPECT(objmon_exit(me, &ev_obj.header) == OBJMON_OK);
    pthread_join(w, NULL);
    e = NULL;
    EXPECT(count_events(&elog, OBJMON_EVENT_MONITOR_WAIT, waiter_id, &e) == 1);
    if (e) EXPECT(e->detail == OBJMON_WAIT_END_NOTIFIED && e->other_thread == my_id);
    e = NULL;
    EXPECT(count_events(&elog, OBJMON_EVENT_MONITOR_NOTIFY, my_id, &e) == 1);
    if (e) EXPECT(e->woken == 1 && e->parked_or_all == 0);
    /* Our enter may have waited for the waiter: if so, it names it. */
    e = NULL;
    if (count_events(&elog, OBJMON_EVENT_MONITOR_ENTER, my_id, &e) > 0)
        EXPECT(e->other_thread == 0 || e->other_thread == waiter_id);

    /* Statistics on request, on this thread. */
    EXPECT(objmon_report_statistics(r) == OBJMON_OK);
    e = NULL;
    EXPECT(count_events(&elog, OBJMON_EVENT_MONITOR_STATISTICS, 0, &e) == 1);
    if (e) EXPECT(e->thread == 0 && e->deflations <= e->inflations);

    /* Cleared: nothing more. */
    size_t n = elog.n;
    EXPECT(objmon_set_event_callback(r, NULL, NULL, NULL) == OBJMON_OK);
    EXPECT(objmon_enter(me, &ev_obj.header) == OBJMON_OK);
    EXPECT(objmon_wait(me, &ev_obj.header, 1000, NULL) == OBJMON_OK);
    EXPECT(objmon_exit(me, &ev_obj.header) == OBJMON_OK);
    EXPECT(objmon_report_statistics(r) == OBJMON_OK);
    EXPECT(elog.n == n);
    objmon_thread_detach(me, NULL);
    objmon_header_reclaim(r, &ev_obj.header);
    objmon_runtime_free(r);
    printf("%-18s events ok: %zu delivered\n", protocol, n);
    return failures != before;
}

int main(int argc, char **argv) {
    int bad = 0;
    setvbuf(stdout, NULL, _IONBF, 0); /* progress must survive a hang and a kill */
    /* The header compiled in and the library linked (maybe an installed one) agree. */
    if (objmon_version() != OBJMON_VERSION) {
        fprintf(stderr, "objmon.h is %d.%d.%d but the library is %u.%u.%u\n",
                OBJMON_VERSION_MAJOR, OBJMON_VERSION_MINOR, OBJMON_VERSION_PATCH,
                objmon_version() >> 16, objmon_version() >> 8 & 0xff, objmon_version() & 0xff);
        return 1;
    }
    EXPECT(objmon_runtime_new("no-such-protocol", NULL, &rt) == OBJMON_E_UNKNOWN_PROTOCOL);
    if (argc > 1) {
        for (int i = 1; i < argc; i++) bad |= run(argv[i]);
        for (int i = 1; i < argc; i++) bad |= events_phase(argv[i]);
        for (int i = 1; i < argc; i++) bad |= deadlock_phase(argv[i]);
    } else {
        for (size_t i = 0; i < objmon_protocol_count(); i++) bad |= run(objmon_protocol_name(i));
        for (size_t i = 0; i < objmon_protocol_count(); i++)
            bad |= events_phase(objmon_protocol_name(i));
        /* Last, since each leaves two deadlocked threads behind. */
        for (size_t i = 0; i < objmon_protocol_count(); i++)
            bad |= deadlock_phase(objmon_protocol_name(i));
    }
    return bad || failures;
}
