package objmon.agent;

/**
 * Never run: its bytes are transformed once in premain so that every class the transformer
 * needs is loaded before the transformer is installed.
 */
final class WarmUp {
    private int x;
    private static int y;

    synchronized int a(Object o) throws InterruptedException {
        synchronized (o) {
            o.wait(1);
            o.wait(1, 1);
            o.wait();
            o.notify();
            o.notifyAll();
            x++;
        }
        int[] p = new int[1];
        Object[] q = new Object[1];
        int[][] r = new int[1][1];
        if (x > 3) {
            throw new IllegalStateException();
        }
        return p.length + q.length + r.length;
    }

    static synchronized void b() {
        y++;
    }
}
