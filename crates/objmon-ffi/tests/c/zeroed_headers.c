/* Headers straight from calloc (all-zero bytes, never passed to
 * objmon_header_init), as GC heaps and C allocators hand them out, must work as unlocked
 * headers: enter, try_enter, exit, wait with a timeout, contention, identity hash, reclaim.
 * One protocol per run: zeroed_headers <protocol>. Driven by tests/c_zeroed_headers.rs,
 * which kills a run that hangs. Exit status 0 iff every check passed. */
#include "objmon.h"

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#define N_HEADERS 64
#define N_THREADS 3
#define ROUNDS 2000

#include "expect.h"

static objmon_runtime *rt;
static objmon_header *heap; /* calloc'd: all zero, never initialised */
static int64_t counters[N_HEADERS];

static void step(const char *what) { printf("%s: %s\n", protocol, what); }

static void *contender(void *arg) {
    uint32_t seed = (uint32_t)(uintptr_t)arg * 2654435761u + 1;
    objmon_thread *me;
    if (objmon_thread_attach(rt, &me) != OBJMON_OK) {
        __atomic_add_fetch(&failures, 1, __ATOMIC_RELAXED);
        return NULL;
    }
    for (int r = 0; r < ROUNDS; r++) {
        seed ^= seed << 13;
        seed ^= seed >> 17;
        seed ^= seed << 5;
        objmon_header *h = &heap[seed % N_HEADERS];
        bool got = false;
        if (r % 3 == 0) {
            EXPECT(objmon_try_enter(me, h, &got) == OBJMON_OK);
        } else {
            EXPECT(objmon_enter(me, h) == OBJMON_OK);
            got = true;
        }
        if (got) {
            counters[seed % N_HEADERS]++;
            EXPECT(objmon_exit(me, h) == OBJMON_OK);
        }
    }
    EXPECT(objmon_thread_detach(me, NULL) == OBJMON_OK);
    return NULL;
}

int main(int argc, char **argv) {
    setvbuf(stdout, NULL, _IONBF, 0); /* the driver shows how far a hung run got */
    if (argc != 2) {
        fprintf(stderr, "usage: zeroed_headers <protocol>\n");
        return 2;
    }
    protocol = argv[1];
    if (objmon_runtime_new(protocol, NULL, &rt) != OBJMON_OK) return 2;
    heap = calloc(N_HEADERS, sizeof *heap);
    objmon_thread *me;
    EXPECT(objmon_thread_attach(rt, &me) == OBJMON_OK);

    uint16_t owner = 99;
    EXPECT(objmon_owner_of(rt, &heap[0], &owner) == OBJMON_OK && owner == 0);
    step("owner_of");
    bool got = false;
    EXPECT(objmon_try_enter(me, &heap[0], &got) == OBJMON_OK && got);
    step("try_enter");
    EXPECT(objmon_lock_count(me, &heap[0]) == (got ? 1u : 0u));
    if (got) EXPECT(objmon_exit(me, &heap[0]) == OBJMON_OK);
    step("exit");
    EXPECT(objmon_enter(me, &heap[1]) == OBJMON_OK);
    step("enter");
    EXPECT(objmon_enter(me, &heap[1]) == OBJMON_OK);
    step("nested enter");
    objmon_wait_outcome o = OBJMON_NOTIFIED;
    EXPECT(objmon_wait(me, &heap[1], 1000 * 1000, &o) == OBJMON_OK && o == OBJMON_TIMED_OUT);
    step("wait with timeout");
    EXPECT(objmon_notify_all(me, &heap[1]) == OBJMON_OK);
    EXPECT(objmon_exit(me, &heap[1]) == OBJMON_OK);
    EXPECT(objmon_exit(me, &heap[1]) == OBJMON_OK);
    EXPECT(objmon_lock_count(me, &heap[1]) == 0);
    step("exits");
    uint32_t hash = 0, again = 0;
    EXPECT(objmon_identity_hash(me, &heap[2], &hash) == OBJMON_OK && hash != 0);
    EXPECT(objmon_enter(me, &heap[2]) == OBJMON_OK);
    EXPECT(objmon_identity_hash(me, &heap[2], &again) == OBJMON_OK && again == hash);
    EXPECT(objmon_exit(me, &heap[2]) == OBJMON_OK);
    step("identity hash");
    EXPECT(objmon_thread_detach(me, NULL) == OBJMON_OK);

    pthread_t th[N_THREADS];
    for (uintptr_t i = 0; i < N_THREADS; i++) pthread_create(&th[i], NULL, contender, (void *)i);
    for (int i = 0; i < N_THREADS; i++) pthread_join(th[i], NULL);
    step("contention");
    for (int i = 0; i < N_HEADERS; i++) {
        EXPECT(objmon_owner_of(rt, &heap[i], &owner) == OBJMON_OK && owner == 0);
        EXPECT(objmon_header_reclaim(rt, &heap[i]) == OBJMON_OK);
    }
    objmon_stats st;
    EXPECT(objmon_stats_get(rt, &st) == OBJMON_OK && st.live_monitors == 0);
    free(heap);
    objmon_runtime_free(rt);
    printf("%s: %s\n", protocol, failures ? "FAILED" : "ok");
    return failures != 0;
}
