package objmon.test;

import java.io.PrintWriter;
import java.util.ArrayList;
import java.util.List;

/**
 * A program with known monitor-operation counts. Each scenario locks objects of its own class,
 * so that the checker can count the recorded events per class. Counts that depend on timing
 * (how many times a {@code while (!cond) wait()} loop waited) are counted by the program
 * itself. Writes the expected counts to {@code args[0]}: lines {@code CLASS KIND COUNT} and
 * {@code CLASS maxdepth D}.
 */
public final class MonitorCounts {
    static final int N = 1000; // synchronized-block entries on one object
    static final int NEST_REPS = 10, NEST_DEPTH = 5; // nested synchronized blocks
    static final int THROWS = 7; // blocks left by an exception
    static final int M = 300, M_THROW = 11, M_SELF_CATCH = 13, M_REC_REPS = 5, M_REC_DEPTH = 4;
    static final int S = 200, S_THROW = 9;
    static final int TIMED = 20, TIMED_NS = 5;
    static final int THREADS = 4, PER_THREAD = 5000, PER_THREAD_CALLS = 700;
    static final int PUTS = 200;
    static final int GATE_WAITERS = 3, GATE_ROUNDS = 10;

    static final class BlockLock {}
    static final class NestLock {}
    static final class ThrowLock {}
    static final class SharedLock {}
    static final class WaitLock {}
    static final class Mailbox {
        int items;
        int waits;
    }
    static final class Gate {
        int generation;
        int waits;
    }
    static final class Sleeper {
        int waits;
        boolean woke;
    }

    /** Instance synchronized methods. */
    static final class Counter {
        int n;

        synchronized void inc() {
            n++;
        }

        synchronized void boom() {
            n++;
            if (n > 0) {
                throw new IllegalStateException("boom");
            }
        }

        synchronized int selfCatch() {
            try {
                if (n >= 0) {
                    throw new IllegalArgumentException("caught inside");
                }
            } catch (IllegalArgumentException e) {
                n++;
            }
            return n;
        }

        synchronized void rec(int d) {
            n++;
            if (d > 1) {
                rec(d - 1);
            }
        }
    }

    /** Static synchronized methods: the monitor is Statics.class. */
    static final class Statics {
        static int n;

        static synchronized void sinc() {
            n++;
        }

        static synchronized long sboom() {
            n++;
            if (n > 0) {
                throw new UnsupportedOperationException("sboom");
            }
            return n;
        }
    }

    /** Shared by the threads: synchronized methods called concurrently. */
    static final class SharedCounter {
        long n;

        synchronized void add() {
            n++;
        }
    }

    static int sink;

    static void nest(Object o, int d) {
        synchronized (o) {
            sink++;
            if (d > 1) {
                nest(o, d - 1);
            }
        }
    }

    public static void main(String[] args) throws Exception {
        List<String> exp = new ArrayList<>();
        String p = MonitorCounts.class.getName() + "$";

        // 1. N entries of a synchronized block on one object.
        BlockLock a = new BlockLock();
        for (int i = 0; i < N; i++) {
            synchronized (a) {
                sink++;
            }
        }
        exp.add(p + "BlockLock ENTER " + N);
        exp.add(p + "BlockLock EXIT " + N);
        exp.add(p + "BlockLock maxdepth 1");

        // 2. Nested blocks on one object, depth NEST_DEPTH.
        NestLock nl = new NestLock();
        for (int i = 0; i < NEST_REPS; i++) {
            nest(nl, NEST_DEPTH);
        }
        exp.add(p + "NestLock ENTER " + NEST_REPS * NEST_DEPTH);
        exp.add(p + "NestLock EXIT " + NEST_REPS * NEST_DEPTH);
        exp.add(p + "NestLock maxdepth " + NEST_DEPTH);

        // 3. Blocks left by an exception (javac's handler runs monitorexit).
        ThrowLock tl = new ThrowLock();
        for (int i = 0; i < THROWS; i++) {
            try {
                synchronized (tl) {
                    sink++;
                    if (sink > 0) {
                        throw new RuntimeException("out of the block");
                    }
                }
            } catch (RuntimeException e) {
                sink--;
            }
        }
        exp.add(p + "ThrowLock ENTER " + THROWS);
        exp.add(p + "ThrowLock EXIT " + THROWS);

        // 4. Instance synchronized methods: normal, exceptional, self-catching, recursive.
        Counter c = new Counter();
        for (int i = 0; i < M; i++) {
            c.inc();
        }
        for (int i = 0; i < M_THROW; i++) {
            try {
                c.boom();
            } catch (IllegalStateException e) {
                sink++;
            }
        }
        for (int i = 0; i < M_SELF_CATCH; i++) {
            c.selfCatch();
        }
        for (int i = 0; i < M_REC_REPS; i++) {
            c.rec(M_REC_DEPTH);
        }
        int calls = M + M_THROW + M_SELF_CATCH + M_REC_REPS * M_REC_DEPTH;
        exp.add(p + "Counter MENTER " + calls);
        exp.add(p + "Counter MEXIT " + (calls - M_THROW));
        exp.add(p + "Counter MEXIT_EXC " + M_THROW);
        exp.add(p + "Counter maxdepth " + M_REC_DEPTH);

        // 5. Static synchronized methods, some throwing.
        for (int i = 0; i < S; i++) {
            Statics.sinc();
        }
        for (int i = 0; i < S_THROW; i++) {
            try {
                Statics.sboom();
            } catch (UnsupportedOperationException e) {
                sink++;
            }
        }
        String sc = "java.lang.Class<" + Statics.class.getName() + ">";
        exp.add(sc + " MENTER " + (S + S_THROW));
        exp.add(sc + " MEXIT " + S);
        exp.add(sc + " MEXIT_EXC " + S_THROW);

        // 6. Timed waits that time out (nobody notifies WaitLock).
        WaitLock w = new WaitLock();
        for (int i = 0; i < TIMED; i++) {
            synchronized (w) {
                w.wait(2);
            }
        }
        for (int i = 0; i < TIMED_NS; i++) {
            synchronized (w) {
                w.wait(1, 500000);
            }
        }
        exp.add(p + "WaitLock ENTER " + (TIMED + TIMED_NS));
        exp.add(p + "WaitLock WAIT " + (TIMED + TIMED_NS));
        exp.add(p + "WaitLock WAIT_END " + (TIMED + TIMED_NS));
        exp.add(p + "WaitLock WAIT_TIMEOUT_2MS " + TIMED);

        // 7. Threads: contended blocks and synchronized methods on shared objects.
        SharedLock sl = new SharedLock();
        SharedCounter scn = new SharedCounter();
        Thread[] ts = new Thread[THREADS];
        for (int t = 0; t < THREADS; t++) {
            ts[t] = new Thread(() -> {
                for (int i = 0; i < PER_THREAD; i++) {
                    synchronized (sl) {
                        sink++;
                    }
                }
                for (int i = 0; i < PER_THREAD_CALLS; i++) {
                    scn.add();
                }
            }, "worker-" + t);
            ts[t].start();
        }
        for (Thread t : ts) {
            t.join();
        }
        exp.add(p + "SharedLock ENTER " + THREADS * PER_THREAD);
        exp.add(p + "SharedLock EXIT " + THREADS * PER_THREAD);
        exp.add(p + "SharedLock threads " + THREADS);
        exp.add(p + "SharedCounter MENTER " + THREADS * PER_THREAD_CALLS);
        exp.add(p + "SharedCounter MEXIT " + THREADS * PER_THREAD_CALLS);

        // 8. Producer/consumer with notify; the consumer counts its own waits.
        Mailbox mb = new Mailbox();
        Thread consumer = new Thread(() -> {
            for (int i = 0; i < PUTS; i++) {
                synchronized (mb) {
                    while (mb.items == 0) {
                        mb.waits++;
                        try {
                            mb.wait();
                        } catch (InterruptedException e) {
                            throw new RuntimeException(e);
                        }
                    }
                    mb.items--;
                }
            }
        }, "consumer");
        consumer.start();
        for (int i = 0; i < PUTS; i++) {
            synchronized (mb) {
                mb.items++;
                mb.notify();
            }
        }
        consumer.join();
        exp.add(p + "Mailbox ENTER " + 2 * PUTS);
        exp.add(p + "Mailbox EXIT " + 2 * PUTS);
        exp.add(p + "Mailbox NOTIFY " + PUTS);
        exp.add(p + "Mailbox WAIT " + mb.waits);
        exp.add(p + "Mailbox WAIT_END " + mb.waits);

        // 9. notifyAll: waiters wait for each generation of a gate.
        Gate g = new Gate();
        Thread[] ws = new Thread[GATE_WAITERS];
        int[] ready = {0};
        for (int k = 0; k < GATE_WAITERS; k++) {
            ws[k] = new Thread(() -> {
                for (int r = 1; r <= GATE_ROUNDS; r++) {
                    synchronized (g) {
                        ready[0]++;
                        g.notifyAll(); // tells main one more waiter is in
                        while (g.generation < r) {
                            g.waits++;
                            try {
                                g.wait();
                            } catch (InterruptedException e) {
                                throw new RuntimeException(e);
                            }
                        }
                    }
                }
            }, "gate-" + k);
            ws[k].start();
        }
        int mainWaits = 0;
        for (int r = 1; r <= GATE_ROUNDS; r++) {
            synchronized (g) {
                while (ready[0] < GATE_WAITERS * r) {
                    mainWaits++;
                    g.wait();
                }
                g.generation = r;
                g.notifyAll();
            }
        }
        for (Thread t : ws) {
            t.join();
        }
        exp.add(p + "Gate NOTIFY_ALL " + (GATE_ROUNDS + GATE_ROUNDS * GATE_WAITERS));
        exp.add(p + "Gate WAIT " + (g.waits + mainWaits));
        exp.add(p + "Gate ENTER " + (GATE_ROUNDS + GATE_ROUNDS * GATE_WAITERS));

        // 10. An interrupted wait.
        Sleeper sp = new Sleeper();
        Thread sleeper = new Thread(() -> {
            synchronized (sp) {
                try {
                    while (true) {
                        sp.waits++;
                        sp.wait();
                    }
                } catch (InterruptedException e) {
                    sp.woke = true;
                }
            }
        }, "sleeper");
        sleeper.start();
        while (sleeper.getState() != Thread.State.WAITING) {
            Thread.sleep(1);
        }
        sleeper.interrupt();
        sleeper.join();
        exp.add(p + "Sleeper WAIT " + sp.waits);
        exp.add(p + "Sleeper WAIT_INTERRUPTED 1");

        try (PrintWriter pw = new PrintWriter(args[0])) {
            for (String e : exp) {
                pw.println(e);
            }
        }
        System.out.println("MonitorCounts done: " + exp.size() + " expectations, sink " + sink);
    }
}
