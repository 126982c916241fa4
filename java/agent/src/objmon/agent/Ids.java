package objmon.agent;

import java.lang.ref.WeakReference;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.ReentrantLock;

/**
 * Stable object ids: an id is assigned on an object's first monitor operation and kept while
 * the object lives; ids are never reused (a dead object's id is simply never seen again).
 *
 * <p>A weak identity map of our own, striped 64 ways, each stripe a chained hash table under
 * a {@link ReentrantLock}. {@code System.identityHashCode} is used only to pick the stripe and
 * bucket; equality is reference equality ({@code ref.get() == o}), so colliding hash codes
 * never merge two objects. Dead entries (cleared weak references) are unlinked when a chain
 * scan meets them and dropped when a stripe grows; no ReferenceQueue is needed.
 *
 * <p>Cost: one identity hash (installed once in the object header; under HotSpot's
 * lightweight locking this does not inflate a locked object), one uncontended lock and a
 * short chain scan per event, one WeakReference (~32 bytes) per live synchronized object.
 * Alternatives rejected: a field in every object (retransformation cannot add fields), JVMTI
 * tags (needs a native agent), {@code identityHashCode} alone (collides: it has 25-31 bits).
 */
final class Ids {
    private Ids() {}

    static final AtomicLong NEXT = new AtomicLong(1);
    static final int STRIPES = 64;
    static final Stripe[] S = new Stripe[STRIPES];
    static final AtomicLong NEXT_CLASS = new AtomicLong(1);
    static final ClassIds CLASSES = new ClassIds();
    static final ClassIds MIRRORS = new ClassIds();

    static {
        for (int i = 0; i < STRIPES; i++) {
            S[i] = new Stripe();
        }
    }

    static final class Ref extends WeakReference<Object> {
        final int hash;
        final long id;
        Ref next;

        Ref(Object o, int hash, long id, Ref next) {
            super(o);
            this.hash = hash;
            this.id = id;
            this.next = next;
        }
    }

    static final class Stripe {
        final ReentrantLock lock = new ReentrantLock();
        Ref[] table = new Ref[64];
        int size;
    }

    /** The object's id, assigning one (and writing OBJ_NEW) on first sight. */
    static long id(Object o, Rt.State s) {
        int h = System.identityHashCode(o);
        int mix = h ^ (h >>> 16);
        Stripe st = S[mix & (STRIPES - 1)];
        long id;
        st.lock.lock();
        try {
            Ref[] t = st.table;
            int b = (mix >>> 6) & (t.length - 1);
            Ref prev = null;
            for (Ref r = t[b]; r != null; ) {
                Object x = r.get();
                if (x == o) {
                    return r.id;
                }
                Ref next = r.next;
                if (x == null) {
                    if (prev == null) {
                        t[b] = next;
                    } else {
                        prev.next = next;
                    }
                    st.size--;
                } else {
                    prev = r;
                }
                r = next;
            }
            id = NEXT.getAndIncrement();
            t[b] = new Ref(o, h, id, t[b]);
            if (++st.size > t.length * 2) {
                grow(st);
            }
        } finally {
            st.lock.unlock();
        }
        // A Class object (the monitor of static synchronized methods) is named after the class
        // it mirrors, so that the trace tells `Foo.class` from `Bar.class`.
        String nm;
        int[] cls;
        if (o instanceof Class<?> k) {
            cls = MIRRORS.id(k);
            nm = cls[1] != 0 ? "java.lang.Class<" + k.getName() + ">" : null;
        } else {
            cls = CLASSES.id(o.getClass());
            nm = cls[1] != 0 ? o.getClass().getName() : null;
        }
        Rt.meta(s, id, cls[0], nm);
        return id;
    }

    private static void grow(Stripe st) {
        Ref[] old = st.table;
        int live = 0;
        for (Ref r : old) {
            for (; r != null; r = r.next) {
                if (r.get() != null) {
                    live++;
                }
            }
        }
        int n = old.length;
        while (live > n) {
            n *= 2;
        }
        if (live * 2 > n) {
            n *= 2;
        }
        Ref[] t = new Ref[n];
        for (Ref r : old) {
            while (r != null) {
                Ref next = r.next;
                if (r.get() != null) {
                    int mix = r.hash ^ (r.hash >>> 16);
                    int b = (mix >>> 6) & (n - 1);
                    r.next = t[b];
                    t[b] = r;
                }
                r = next;
            }
        }
        st.table = t;
        st.size = live;
    }

    /** Class ids: classes are kept strongly (they are few). */
    static final class ClassIds {
        final ReentrantLock lock = new ReentrantLock();
        Class<?>[] keys = new Class<?>[1024];
        int[] vals = new int[1024];
        int size;

        /** {id, 1 if new}. */
        int[] id(Class<?> c) {
            lock.lock();
            try {
                int mask = keys.length - 1;
                int i = System.identityHashCode(c) & mask;
                while (keys[i] != null) {
                    if (keys[i] == c) {
                        return new int[] {vals[i], 0};
                    }
                    i = (i + 1) & mask;
                }
                int id = (int) NEXT_CLASS.getAndIncrement();
                keys[i] = c;
                vals[i] = id;
                if (++size * 2 > keys.length) {
                    Class<?>[] ok = keys;
                    int[] ov = vals;
                    keys = new Class<?>[ok.length * 2];
                    vals = new int[ok.length * 2];
                    mask = keys.length - 1;
                    for (int j = 0; j < ok.length; j++) {
                        if (ok[j] != null) {
                            int k = System.identityHashCode(ok[j]) & mask;
                            while (keys[k] != null) {
                                k = (k + 1) & mask;
                            }
                            keys[k] = ok[j];
                            vals[k] = ov[j];
                        }
                    }
                }
                return new int[] {id, 1};
            } finally {
                lock.unlock();
            }
        }
    }
}
