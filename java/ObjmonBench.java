// The objmon-bench benchmarks in Java, run on every JDK found by `objmon-bench report`
// (crates/objmon-bench/src/java.rs compiles this into target/ and runs it in each locking
// mode, always with -XX:-EliminateLocks so that no synchronized block is optimised away).
//
// Usage: java ObjmonBench key=value...   (all sizes are passed in by the Rust driver so that
// both sides run the same experiment). Output: one line per figure,
//   R <bench> <threads> <param> <ns per op of each repetition...>
// after four untimed warm-up repetitions (which let the JIT compile the loop).

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;

public final class ObjmonBench {
    /** The object every benchmark locks; its methods are kept out of line (CompileCommand). */
    static final class Obj {
        int v;

        synchronized void syncMethod() {
            v++;
        }

        void plainMethod() {
            v++;
        }
    }

    /** Seed 003 tree test node. */
    static final class Node {
        final Node l, r;
        int v;

        Node(int depth) {
            l = depth > 1 ? new Node(depth - 1) : null;
            r = depth > 1 ? new Node(depth - 1) : null;
        }

        synchronized long visit() {
            v++;
            return l == null ? 1 : 1 + l.visit() + r.visit();
        }
    }

    static int count;
    static volatile Object sink;
    static Map<String, String> args = new HashMap<>();

    static long arg(String k) {
        return Long.parseLong(args.get(k));
    }

    static long[] list(String k) {
        String[] p = args.get(k).split(",");
        long[] r = new long[p.length];
        for (int i = 0; i < p.length; i++) r[i] = Long.parseLong(p[i]);
        return r;
    }

    interface Run {
        double once() throws Exception; // ns per op
    }

    static void figure(String bench, long threads, long param, Run r) throws Exception {
        // Warm-up: the JIT compiles the loop (on-stack replacement), then the method that
        // runs it through the tiers; fewer rounds leave tier changes inside timed runs.
        for (int i = 0; i < 4; i++) r.once();
        int reps = (int) arg("reps");
        StringBuilder sb = new StringBuilder("R " + bench + " " + threads + " " + param);
        for (int i = 0; i < reps; i++) sb.append(' ').append(r.once());
        System.out.println(sb);
        System.out.flush();
    }

    static double perOp(long t0, long ops) {
        return (System.nanoTime() - t0) / (double) Math.max(1, ops);
    }

    public static void main(String[] a) throws Exception {
        for (String s : a) {
            int i = s.indexOf('=');
            args.put(s.substring(0, i), s.substring(i + 1));
        }
        List<String> benches = new ArrayList<>(List.of(args.get("benches").split(",")));
        final long pairs = arg("pairs");
        final Obj o = new Obj();
        for (String b : benches) {
            switch (b) {
                case "no-sync":
                    figure(b, 1, 0, () -> {
                        long t0 = System.nanoTime();
                        for (long i = 0; i < pairs; i++) count++;
                        return perOp(t0, pairs);
                    });
                    break;
                case "sync":
                    figure(b, 1, 0, () -> {
                        long t0 = System.nanoTime();
                        for (long i = 0; i < pairs; i++) {
                            synchronized (o) {
                                // Empty, as the Rust rows' loop: the lock
                                // itself is kept by -XX:-EliminateLocks.
                            }
                        }
                        return perOp(t0, pairs);
                    });
                    break;
                case "nested-sync":
                    figure(b, 1, 0, () -> {
                        synchronized (o) {
                            long t0 = System.nanoTime();
                            for (long i = 0; i < pairs; i++) {
                                synchronized (o) {
                                    // Empty, as in `sync`.
                                }
                            }
                            return perOp(t0, pairs);
                        }
                    });
                    break;
                case "multi-sync":
                    for (long n : list("multi")) {
                        Obj[] objs = new Obj[(int) n];
                        for (int i = 0; i < n; i++) objs[i] = new Obj();
                        long passes = Math.max(1, pairs / n);
                        figure(b, 1, n, () -> {
                            long t0 = System.nanoTime();
                            for (long p = 0; p < passes; p++) {
                                for (Obj x : objs) {
                                    synchronized (x) {
                                        // Empty, as in `sync`.
                                    }
                                }
                            }
                            return perOp(t0, passes * objs.length);
                        });
                    }
                    break;
                case "call":
                    figure(b, 1, 0, () -> {
                        long t0 = System.nanoTime();
                        for (long i = 0; i < pairs; i++) o.plainMethod();
                        return perOp(t0, pairs);
                    });
                    break;
                case "call-sync":
                    figure(b, 1, 0, () -> {
                        long t0 = System.nanoTime();
                        for (long i = 0; i < pairs; i++) o.syncMethod();
                        return perOp(t0, pairs);
                    });
                    break;
                case "nested-call-sync":
                    figure(b, 1, 0, () -> {
                        synchronized (o) {
                            long t0 = System.nanoTime();
                            for (long i = 0; i < pairs; i++) o.syncMethod();
                            return perOp(t0, pairs);
                        }
                    });
                    break;
                case "threads":
                    for (long n : list("threads")) {
                        long total = Math.max(pairs / 5, n);
                        figure(b, n, n, () -> contended((int) n, total / n));
                    }
                    break;
                case "cloud": {
                    int nobj = (int) arg("cloud_objects");
                    Obj[] cloud = new Obj[nobj];
                    for (int i = 0; i < nobj; i++) cloud[i] = new Obj();
                    long t = arg("cloud_threads");
                    figure(b, t, 0, () -> cloud(cloud, (int) t, arg("cloud_ms")));
                    break;
                }
                case "prod-cons":
                    figure(b, 2, 0, () -> prodCons(arg("productions")));
                    break;
                case "alloc-lock":
                    for (long k : list("alloc")) {
                        long iters = Math.max(1, pairs / (k + 1));
                        figure(b, 1, k, () -> {
                            long t0 = System.nanoTime();
                            for (long i = 0; i < iters; i++) {
                                Obj x = new Obj();
                                for (long j = 0; j < k; j++) {
                                    synchronized (x) {
                                    }
                                }
                                sink = x; // escapes: neither the object nor its locks vanish
                            }
                            return perOp(t0, iters);
                        });
                    }
                    break;
                case "mutex-test":
                    figure(b, 1, 0, () -> {
                        long t0 = System.nanoTime();
                        for (int i = 0; i < 300_000; i++) o.syncMethod();
                        return perOp(t0, 300_000);
                    });
                    break;
                case "tree-test": {
                    Node root = new Node(16);
                    long trav = arg("traversals");
                    figure(b, 1, 0, () -> {
                        long t0 = System.nanoTime();
                        long c = 0;
                        for (long i = 0; i < trav; i++) c += root.visit();
                        return perOp(t0, c);
                    });
                    break;
                }
                case "system-monitor":
                    figure(b, 2, 0, () -> systemMonitor(arg("system_calls")));
                    break;
                case "wait-notify":
                    figure(b, 2, 0, () -> waitNotify((int) arg("handovers")));
                    break;
                default:
                    System.err.println("unknown bench " + b);
            }
        }
    }

    // Times are taken inside the worker threads (first start to last end): on 2 cores the
    // main thread may not run again until the workers are done.
    static double span(long[] starts, long[] ends) {
        long a = Long.MAX_VALUE, b = Long.MIN_VALUE;
        for (long x : starts) a = Math.min(a, x);
        for (long x : ends) b = Math.max(b, x);
        return b - a;
    }

    static double contended(int n, long each) throws Exception {
        final Object lock = new Object();
        final long[] counter = {0};
        final long[] starts = new long[n], ends = new long[n];
        CyclicBarrier start = new CyclicBarrier(n);
        Thread[] ts = new Thread[n];
        for (int i = 0; i < n; i++) {
            final int me = i;
            ts[i] = new Thread(() -> {
                try {
                    start.await();
                } catch (Exception e) {
                    throw new RuntimeException(e);
                }
                starts[me] = System.nanoTime();
                for (long j = 0; j < each; j++) {
                    synchronized (lock) {
                        counter[0]++;
                    }
                }
                ends[me] = System.nanoTime();
            });
            ts[i].start();
        }
        for (Thread t : ts) t.join();
        if (counter[0] != n * each) throw new IllegalStateException("lost update");
        return span(starts, ends) / (n * each);
    }

    static double cloud(Obj[] cloud, int n, long ms) throws Exception {
        AtomicBoolean stop = new AtomicBoolean();
        AtomicLong total = new AtomicLong();
        CyclicBarrier start = new CyclicBarrier(n + 1);
        Thread[] ts = new Thread[n];
        for (int i = 0; i < n; i++) {
            final long seed = 0x9E3779B97F4A7C15L ^ (i + 1) * 0x123456789ABCL;
            ts[i] = new Thread(() -> {
                long x = seed, c = 0;
                try {
                    start.await();
                } catch (Exception e) {
                    throw new RuntimeException(e);
                }
                while (!stop.get()) {
                    for (int j = 0; j < 256; j++) {
                        x ^= x >>> 12;
                        x ^= x << 25;
                        x ^= x >>> 27;
                        long r = (x * 0x2545F4914F6CDD1DL) >>> 32;
                        Obj o = cloud[(int) ((r * cloud.length) >>> 32)];
                        synchronized (o) {
                            c++;
                        }
                    }
                }
                total.addAndGet(c);
            });
            ts[i].start();
        }
        start.await();
        long t0 = System.nanoTime();
        Thread.sleep(ms);
        stop.set(true);
        long el = System.nanoTime() - t0;
        for (Thread t : ts) t.join();
        return el / (double) Math.max(1, total.get());
    }

    static final Obj POISON = new Obj();

    static double prodCons(long n) throws Exception {
        ArrayBlockingQueue<Obj> q = new ArrayBlockingQueue<>(1024);
        CyclicBarrier start = new CyclicBarrier(2);
        final long[] starts = new long[2], ends = new long[2];
        Thread p = new Thread(() -> {
            try {
                start.await();
                starts[0] = System.nanoTime();
                for (long i = 0; i < n; i++) {
                    Obj o = new Obj();
                    synchronized (o) {
                        o.v++;
                    }
                    q.put(o);
                }
                q.put(POISON);
                ends[0] = System.nanoTime();
            } catch (Exception e) {
                throw new RuntimeException(e);
            }
        });
        Thread c = new Thread(() -> {
            try {
                start.await();
                starts[1] = System.nanoTime();
                for (Obj o = q.take(); o != POISON; o = q.take()) {
                    synchronized (o) {
                        o.v++;
                    }
                }
                ends[1] = System.nanoTime();
            } catch (Exception e) {
                throw new RuntimeException(e);
            }
        });
        p.start();
        c.start();
        p.join();
        c.join();
        return span(starts, ends) / n;
    }

    static double systemMonitor(long n) throws Exception {
        final Obj o = new Obj();
        final boolean[] done = {false};
        final AtomicBoolean waiting = new AtomicBoolean();
        Thread w = new Thread(() -> {
            synchronized (o) {
                waiting.set(true);
                while (!done[0]) {
                    try {
                        o.wait(1000);
                    } catch (InterruptedException e) {
                        return;
                    }
                }
            }
        });
        w.start();
        while (true) {
            synchronized (o) {
                if (waiting.get()) break;
            }
            Thread.yield();
        }
        long t0 = System.nanoTime();
        for (long i = 0; i < n; i++) o.syncMethod();
        double r = perOp(t0, n);
        synchronized (o) {
            done[0] = true;
            o.notifyAll();
        }
        w.join();
        return r;
    }

    static double waitNotify(int rounds) throws Exception {
        final Object o = new Object();
        final int[] turn = {0};
        CyclicBarrier start = new CyclicBarrier(2);
        Thread[] ts = new Thread[2];
        long t0 = System.nanoTime();
        for (int me = 0; me < 2; me++) {
            final int m = me;
            ts[me] = new Thread(() -> {
                try {
                    start.await();
                    synchronized (o) {
                        for (int i = 0; i < rounds; i++) {
                            while (turn[0] != m) o.wait(100);
                            turn[0] = 1 - m;
                            o.notifyAll();
                        }
                    }
                } catch (Exception e) {
                    throw new RuntimeException(e);
                }
            });
            ts[me].start();
        }
        for (Thread t : ts) t.join();
        return perOp(t0, 2L * rounds);
    }
}
