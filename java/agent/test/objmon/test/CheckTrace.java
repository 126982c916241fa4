package objmon.test;

import java.io.DataInputStream;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;

/**
 * An independent decoder of the trace format (FORMAT.md) that checks a recording of
 * {@link MonitorCounts} against the counts the program wrote: {@code CheckTrace TRACE EXPECTED}.
 * Also checks, for the whole trace (JDK classes included), that sequence numbers are unique and
 * increase within each thread, that replaying all events in sequence order never has two
 * threads owning one monitor, and that every thread ends with every monitor released.
 * Exits 1 on any mismatch.
 */
public final class CheckTrace {
    static final String[] KIND = {"?", "ENTER", "EXIT", "MENTER", "MEXIT", "MEXIT_EXC", "WAIT",
        "WAIT_END", "NOTIFY", "NOTIFY_ALL"};

    record Ev(long seq, long time, int tid, int kind, long obj, long a, long b) {}

    byte[] d;
    int p;

    long varint() {
        long v = 0;
        int shift = 0;
        while (true) {
            int b = d[p++] & 0xFF;
            v |= (long) (b & 0x7F) << shift;
            if ((b & 0x80) == 0) {
                return v;
            }
            shift += 7;
        }
    }

    long zigzag() {
        long v = varint();
        return (v >>> 1) ^ -(v & 1);
    }

    public static void main(String[] args) throws IOException {
        new CheckTrace().run(Path.of(args[0]), Path.of(args[1]));
    }

    void run(Path trace, Path expected) throws IOException {
        d = Files.readAllBytes(trace);
        if (!new String(d, 0, 8, StandardCharsets.US_ASCII).equals("OBJMONT1")) {
            fail("bad magic");
        }
        p = 8;
        varint(); // version
        varint(); // start nanoTime
        varint(); // start wall ms
        int ol = (int) varint();
        p += ol;
        List<Ev> evs = new ArrayList<>();
        Map<Long, Integer> objClass = new HashMap<>();
        Map<Integer, String> className = new HashMap<>();
        Map<String, Long> stats = new TreeMap<>();
        Map<Integer, String> threadName = new HashMap<>();
        boolean end = false;
        while (p < d.length && !end) {
            int tag = d[p++] & 0xFF;
            switch (tag) {
                case 1 -> {
                    int tid = (int) varint();
                    int len = (int) varint();
                    int stop = p + len;
                    long seq = 0, time = 0;
                    while (p < stop) {
                        int k = d[p++] & 0xFF;
                        if (k == 0x40) {
                            long o = varint();
                            objClass.put(o, (int) varint());
                        } else if (k == 0x41) {
                            int c = (int) varint();
                            int n = (int) varint();
                            className.put(c, new String(d, p, n, StandardCharsets.UTF_8));
                            p += n;
                        } else if (k >= 1 && k <= 9) {
                            seq += varint();
                            time += zigzag();
                            long o = varint();
                            long a = 0, b = 0;
                            if (k == 6) {
                                a = zigzag();
                                b = zigzag();
                            } else if (k == 7) {
                                b = d[p++] & 0xFF;
                            }
                            evs.add(new Ev(seq, time, tid, k, o, a, b));
                        } else {
                            fail("unknown event kind " + k);
                        }
                    }
                    if (p != stop) {
                        fail("block overrun");
                    }
                }
                case 2 -> {
                    int tid = (int) varint();
                    varint();
                    int n = (int) varint();
                    threadName.put(tid, new String(d, p, n, StandardCharsets.UTF_8));
                    p += n;
                }
                case 3 -> {
                    int n = (int) varint();
                    for (int i = 0; i < n; i++) {
                        int l = (int) varint();
                        String k = new String(d, p, l, StandardCharsets.UTF_8);
                        p += l;
                        stats.put(k, varint());
                    }
                }
                case 0xFF -> end = true;
                default -> fail("unknown block tag " + tag);
            }
        }
        if (!end) {
            fail("no END record");
        }
        // Per-thread sequence order, and global uniqueness.
        Map<Integer, Long> lastSeq = new HashMap<>();
        for (Ev e : evs) {
            Long l = lastSeq.put(e.tid, e.seq);
            if (l != null && l >= e.seq) {
                fail("thread " + e.tid + " sequence not increasing at " + e.seq);
            }
        }
        evs.sort((x, y) -> Long.compare(x.seq, y.seq));
        for (int i = 1; i < evs.size(); i++) {
            if (evs.get(i).seq == evs.get(i - 1).seq) {
                fail("duplicate sequence number " + evs.get(i).seq);
            }
        }
        // Replay ownership in sequence order; aggregate per class.
        Map<Long, long[]> own = new HashMap<>(); // obj -> {owner tid, count}
        Map<String, Long> actual = new HashMap<>();
        Map<String, Integer> maxDepth = new HashMap<>();
        Map<String, Set<Integer>> threads = new HashMap<>();
        Map<String, Long> waitCount = new HashMap<>(); // saved counts of waiting (tid,obj)
        int violations = 0;
        for (Ev e : evs) {
            String cn = className.getOrDefault(objClass.getOrDefault(e.obj, -1), "?");
            actual.merge(cn + " " + KIND[e.kind], 1L, Long::sum);
            long[] o = own.computeIfAbsent(e.obj, k -> new long[] {0, 0});
            switch (e.kind) {
                case 1, 3 -> {
                    if (o[1] > 0 && o[0] != e.tid) {
                        violations++;
                    }
                    o[0] = e.tid;
                    o[1]++;
                    maxDepth.merge(cn, (int) o[1], Math::max);
                    threads.computeIfAbsent(cn, k -> new HashSet<>()).add(e.tid);
                }
                case 2, 4, 5 -> {
                    if (o[1] <= 0 || o[0] != e.tid) {
                        violations++;
                    }
                    o[1]--;
                }
                case 6 -> {
                    if (o[1] > 0 && o[0] == e.tid) {
                        waitCount.put(e.tid + "/" + e.obj, o[1]);
                        o[1] = 0;
                    }
                    if (e.a == 2 && e.b == 0) {
                        actual.merge(cn + " WAIT_TIMEOUT_2MS", 1L, Long::sum);
                    }
                }
                case 7 -> {
                    Long c = waitCount.remove(e.tid + "/" + e.obj);
                    if (c != null) {
                        if (o[1] > 0 && o[0] != e.tid) {
                            violations++;
                        }
                        o[0] = e.tid;
                        o[1] = c;
                    }
                    if (e.b == 1) {
                        actual.merge(cn + " WAIT_INTERRUPTED", 1L, Long::sum);
                    }
                }
                default -> { }
            }
        }
        long held = own.values().stream().filter(o -> o[1] != 0).count();
        int bad = 0;
        for (String line : Files.readAllLines(expected)) {
            String[] f = line.trim().split(" ");
            if (f.length != 3) {
                continue;
            }
            long want = Long.parseLong(f[2]);
            long got;
            if (f[1].equals("maxdepth")) {
                got = maxDepth.getOrDefault(f[0], 0);
            } else if (f[1].equals("threads")) {
                got = threads.getOrDefault(f[0], Set.of()).size();
            } else {
                got = actual.getOrDefault(f[0] + " " + f[1], 0L);
            }
            String ok = got == want ? "ok  " : "FAIL";
            if (got != want) {
                bad++;
            }
            System.out.printf("%s %-60s %-18s expected %8d recorded %8d%n", ok, f[0], f[1], want, got);
        }
        System.out.printf("trace: %d events, %d threads, %d objects, %d classes; ownership violations %d; "
                + "monitors still held at exit %d%n", evs.size(), threadName.size(), objClass.size(),
                className.size(), violations, held);
        for (Map.Entry<String, Long> s : stats.entrySet()) {
            if (!s.getKey().startsWith("allocs.tid.")) {
                System.out.printf("  stat %-40s %d%n", s.getKey(), s.getValue());
            }
        }
        if (violations != 0) {
            bad++;
        }
        if (bad != 0) {
            fail(bad + " mismatches");
        }
        System.out.println("CheckTrace: all counts exact");
    }

    static void fail(String m) {
        System.out.println("CheckTrace: FAIL: " + m);
        System.exit(1);
    }
}
