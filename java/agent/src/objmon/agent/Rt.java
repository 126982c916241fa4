package objmon.agent;

import java.io.FileOutputStream;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.ReentrantLock;

/**
 * The recorder's runtime: the static methods that instrumented code calls, the per-thread
 * buffers and the trace file. Loaded by the bootstrap loader (the agent jar is on the
 * Boot-Class-Path) so that instrumented JDK classes can call it.
 *
 * <p>Rules this class keeps so that it never records itself nor recurses:
 * <ul>
 *   <li>it never uses {@code synchronized}, lambdas or string concatenation (the agent is
 *       compiled with {@code -XDstringConcat=inline});</li>
 *   <li>every entry point sets the thread's {@code busy} flag first; any monitor operation in
 *       JDK code called from here (FileChannel, ReentrantLock, ...) then sees the flag and is
 *       not recorded. Such operations are the recorder's own, not the program's.</li>
 * </ul>
 *
 * <p>Ordering: an enter is recorded after {@code monitorenter} succeeded, an exit before
 * {@code monitorexit}, a notify after it returned, a wait's begin before and its end after the
 * call: every record on an object is made while its monitor is held, so the global sequence
 * number (taken in the record) orders the records of one object exactly as the JVM ordered the
 * operations themselves.
 */
public final class Rt {
    private Rt() {}

    // Event kinds (see FORMAT.md).
    static final int ENTER = 1, EXIT = 2, MENTER = 3, MEXIT = 4, MEXIT_EXC = 5, WAIT = 6,
            WAIT_END = 7, NOTIFY = 8, NOTIFY_ALL = 9;
    static final int OBJ_NEW = 0x40, CLASS_DEF = 0x41;

    /** Outcome of a wait (WAIT_END's byte). */
    static final int W_RETURNED = 0, W_INTERRUPTED = 1, W_THREW = 2;

    static final int BUF = 1 << 16;

    static volatile boolean ready;
    static volatile boolean closed;
    static boolean countAllocs;

    static final AtomicLong SEQ = new AtomicLong(1);
    static final AtomicLong NEXT_TID = new AtomicLong(1);
    static final AtomicLong DROPPED = new AtomicLong();
    static final AtomicLong ERRORS = new AtomicLong();

    /**
     * All threads' states, so that the shutdown hook can flush them. Guarded by REG. A plain
     * array grown here: State's constructor runs inside ThreadLocal.get, before the thread has
     * a State, so it must not reach an allocation site counted by Rt.alloc (that would call
     * ThreadLocal.get again and recurse).
     */
    static State[] STATES = new State[256];
    static int NSTATES;
    static final ReentrantLock REG = new ReentrantLock();

    /** The trace file. Guarded by OUT_LOCK. */
    static FileChannel out;
    static final ReentrantLock OUT_LOCK = new ReentrantLock();

    static final ThreadLocal<State> TL = new ThreadLocal<State>() {
        @Override
        protected State initialValue() {
            return new State(Thread.currentThread());
        }
    };

    /** One thread's recorder state. */
    static final class State {
        final int tid;
        final long javaId;
        final String name;
        /** Set while the recorder (or the transformer) runs on this thread. */
        boolean busy;
        /** Guards buf/pos/last* against the shutdown hook's final flush. */
        final ReentrantLock lock = new ReentrantLock();
        byte[] buf = new byte[BUF];
        int pos;
        long lastSeq, lastTime;
        long allocs;
        boolean infoWritten;

        State(Thread t) {
            busy = true;
            tid = (int) NEXT_TID.getAndIncrement();
            javaId = t.threadId();
            name = t.getName();
            REG.lock();
            try {
                if (NSTATES == STATES.length) {
                    State[] b = new State[NSTATES * 2];
                    System.arraycopy(STATES, 0, b, 0, NSTATES);
                    STATES = b;
                }
                STATES[NSTATES++] = this;
            } finally {
                REG.unlock();
            }
            busy = false;
        }

        void varint(long v) {
            while ((v & ~0x7FL) != 0) {
                buf[pos++] = (byte) ((v & 0x7F) | 0x80);
                v >>>= 7;
            }
            buf[pos++] = (byte) v;
        }

        void zigzag(long v) {
            varint((v << 1) ^ (v >> 63));
        }

        /** Room for one more record (metadata strings are bounded by the caller). */
        void room(int n) {
            if (pos + n > buf.length) {
                flushLocked();
                if (n > buf.length) {
                    buf = new byte[n * 2];
                }
            }
        }

        /** Writes this thread's pending block to the file. Caller holds {@code lock}. */
        void flushLocked() {
            if (pos == 0 && infoWritten) {
                return;
            }
            OUT_LOCK.lock();
            try {
                if (out != null) {
                    if (!infoWritten) {
                        byte[] nm = name.getBytes(StandardCharsets.UTF_8);
                        Bytes b = new Bytes(32 + nm.length);
                        b.u8(2);
                        b.varint(tid);
                        b.varint(javaId);
                        b.varint(nm.length);
                        b.raw(nm);
                        writeAll(b.buf, b.pos);
                        infoWritten = true;
                    }
                    if (pos > 0) {
                        Bytes h = new Bytes(24);
                        h.u8(1);
                        h.varint(tid);
                        h.varint(pos);
                        writeAll(h.buf, h.pos);
                        writeAll(buf, pos);
                    }
                }
            } finally {
                OUT_LOCK.unlock();
            }
            pos = 0;
            lastSeq = 0;
            lastTime = 0;
        }
    }

    /** A small growable byte sink for file-level records. */
    static final class Bytes {
        byte[] buf;
        int pos;

        Bytes(int n) {
            buf = new byte[n];
        }

        void ensure(int n) {
            if (pos + n > buf.length) {
                byte[] b = new byte[Math.max(buf.length * 2, pos + n)];
                System.arraycopy(buf, 0, b, 0, pos);
                buf = b;
            }
        }

        void u8(int v) {
            ensure(1);
            buf[pos++] = (byte) v;
        }

        void varint(long v) {
            ensure(10);
            while ((v & ~0x7FL) != 0) {
                buf[pos++] = (byte) ((v & 0x7F) | 0x80);
                v >>>= 7;
            }
            buf[pos++] = (byte) v;
        }

        void raw(byte[] b) {
            ensure(b.length);
            System.arraycopy(b, 0, buf, pos, b.length);
            pos += b.length;
        }

        void string(String s) {
            byte[] b = s.getBytes(StandardCharsets.UTF_8);
            varint(b.length);
            raw(b);
        }
    }

    static void writeAll(byte[] b, int n) {
        try {
            ByteBuffer bb = ByteBuffer.wrap(b, 0, n);
            while (bb.hasRemaining()) {
                out.write(bb);
            }
        } catch (IOException e) {
            ERRORS.incrementAndGet();
        }
    }

    static void open(String path, String options) throws IOException {
        out = new FileOutputStream(path).getChannel();
        Bytes b = new Bytes(64);
        b.raw("OBJMONT1".getBytes(StandardCharsets.US_ASCII));
        b.varint(1); // format version
        b.varint(System.nanoTime());
        b.varint(System.currentTimeMillis());
        b.string(options);
        writeAll(b.buf, b.pos);
        // Loads the classes force() needs (JFR's FileForceEvent) now, not inside a flush where
        // they would be loaded untransformed.
        out.force(false);
    }

    /** The shutdown hook's final flush: every thread's block, then the statistics, then END. */
    static void close(String[] keys, long[] values) {
        State me = TL.get();
        me.busy = true;
        closed = true;
        REG.lock();
        try {
            for (int i = 0; i < NSTATES; i++) {
                State s = STATES[i];
                s.lock.lock();
                try {
                    s.flushLocked();
                } finally {
                    s.lock.unlock();
                }
            }
            Bytes b = new Bytes(256);
            b.u8(3);
            int n = keys.length + 3 + NSTATES;
            b.varint(n);
            for (int i = 0; i < keys.length; i++) {
                b.string(keys[i]);
                b.varint(values[i]);
            }
            b.string("events.dropped_after_close");
            b.varint(DROPPED.get());
            b.string("recorder.errors");
            b.varint(ERRORS.get());
            b.string("threads");
            b.varint(NSTATES);
            for (int i = 0; i < NSTATES; i++) {
                State s = STATES[i];
                b.string("allocs.tid." + s.tid);
                b.varint(s.allocs);
            }
            b.u8(0xFF);
            OUT_LOCK.lock();
            try {
                writeAll(b.buf, b.pos);
                out.force(true);
                out.close();
                out = null;
            } catch (IOException e) {
                ERRORS.incrementAndGet();
            } finally {
                OUT_LOCK.unlock();
            }
        } finally {
            REG.unlock();
        }
    }

    /** Runs {@code r} with this thread's recorder guard set (used by the transformer). */
    static State enterBusy() {
        State s = TL.get();
        boolean was = s.busy;
        s.busy = true;
        return was ? null : s;
    }

    // ---- recording --------------------------------------------------------------------

    private static void rec(int kind, Object o, long a, int b) {
        if (!ready) {
            return;
        }
        State s = TL.get();
        if (s.busy) {
            return;
        }
        s.busy = true;
        try {
            if (closed) {
                DROPPED.incrementAndGet();
                return;
            }
            long id = Ids.id(o, s);
            s.lock.lock();
            try {
                // Taken while the object's monitor is held: see the class comment.
                long seq = SEQ.getAndIncrement();
                long t = System.nanoTime();
                s.room(40);
                s.buf[s.pos++] = (byte) kind;
                s.varint(seq - s.lastSeq);
                s.zigzag(t - s.lastTime);
                s.lastSeq = seq;
                s.lastTime = t;
                s.varint(id);
                if (kind == WAIT) {
                    s.zigzag(a);
                    s.zigzag(b);
                } else if (kind == WAIT_END) {
                    s.buf[s.pos++] = (byte) b;
                }
            } finally {
                s.lock.unlock();
            }
        } catch (Throwable e) {
            ERRORS.incrementAndGet();
        } finally {
            s.busy = false;
        }
    }

    /** Metadata record (first sight of an object, class name). Caller is inside rec (busy). */
    static void meta(State s, long objId, int classId, String newClassName) {
        s.lock.lock();
        try {
            if (newClassName != null) {
                byte[] nm = newClassName.getBytes(StandardCharsets.UTF_8);
                s.room(24 + nm.length);
                s.buf[s.pos++] = (byte) CLASS_DEF;
                s.varint(classId);
                s.varint(nm.length);
                System.arraycopy(nm, 0, s.buf, s.pos, nm.length);
                s.pos += nm.length;
            }
            s.room(24);
            s.buf[s.pos++] = (byte) OBJ_NEW;
            s.varint(objId);
            s.varint(classId);
        } finally {
            s.lock.unlock();
        }
    }

    // ---- entry points called by instrumented code ---------------------------------------

    /** After {@code monitorenter}. */
    public static void enter(Object o) {
        rec(ENTER, o, 0, 0);
    }

    /** Before {@code monitorexit}. */
    public static void exit(Object o) {
        rec(EXIT, o, 0, 0);
    }

    /** First thing in a synchronized method's body (the JVM holds the monitor). */
    public static void menter(Object o) {
        rec(MENTER, o, 0, 0);
    }

    /** Before each return of a synchronized method. */
    public static void mexit(Object o) {
        rec(MEXIT, o, 0, 0);
    }

    /** In a synchronized method's catch-all handler, before it rethrows. */
    public static void mexitExc(Object o) {
        rec(MEXIT_EXC, o, 0, 0);
    }

    /** Replaces {@code o.wait()}. */
    public static void wait0(Object o) throws InterruptedException {
        wait2(o, 0L, 0);
    }

    /** Replaces {@code o.wait(ms)}. */
    public static void wait1(Object o, long ms) throws InterruptedException {
        if (o == null) {
            throw new NullPointerException();
        }
        rec(WAIT, o, ms, 0);
        try {
            o.wait(ms);
        } catch (InterruptedException e) {
            rec(WAIT_END, o, 0, W_INTERRUPTED);
            throw e;
        } catch (Throwable t) {
            rec(WAIT_END, o, 0, W_THREW);
            throw t;
        }
        rec(WAIT_END, o, 0, W_RETURNED);
    }

    /** Replaces {@code o.wait(ms, ns)}. */
    public static void wait2(Object o, long ms, int ns) throws InterruptedException {
        if (o == null) {
            throw new NullPointerException();
        }
        rec(WAIT, o, ms, ns);
        try {
            o.wait(ms, ns);
        } catch (InterruptedException e) {
            rec(WAIT_END, o, 0, W_INTERRUPTED);
            throw e;
        } catch (Throwable t) {
            rec(WAIT_END, o, 0, W_THREW);
            throw t;
        }
        rec(WAIT_END, o, 0, W_RETURNED);
    }

    /** Replaces {@code o.notify()}; recorded only if it returned (the caller owned o). */
    public static void notify0(Object o) {
        o.notify();
        rec(NOTIFY, o, 0, 0);
    }

    /** Replaces {@code o.notifyAll()}; recorded only if it returned. */
    public static void notifyAll0(Object o) {
        o.notifyAll();
        rec(NOTIFY_ALL, o, 0, 0);
    }

    /** Before each {@code new}, {@code newarray}, {@code anewarray}, {@code multianewarray}. */
    public static void alloc() {
        if (!ready) {
            return;
        }
        State s = TL.get();
        if (!s.busy) {
            s.allocs++;
        }
    }
}
