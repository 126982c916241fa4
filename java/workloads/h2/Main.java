import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;

/**
 * Workload "h2": the H2 database (embedded, in memory) runs a small banking workload through
 * its own JDBC API: one thread loads 5,000 accounts, then 4 threads, each on its own
 * connection, run 2,500 transactions (read two accounts, move money, append to a history
 * table), then one thread runs aggregate queries. Deterministic per thread (seeded Random).
 */
public final class Main {
    static final String URL = "jdbc:h2:mem:objmon;DB_CLOSE_DELAY=-1";
    // -Dobjmon.h2.accounts / -Dobjmon.h2.tx shrink the run (the checked-in test trace).
    static final int ACCOUNTS = Integer.getInteger("objmon.h2.accounts", 5000), THREADS = 4,
            TX = Integer.getInteger("objmon.h2.tx", 2500);

    public static void main(String[] args) throws Exception {
        try (Connection c = DriverManager.getConnection(URL, "sa", "")) {
            try (Statement s = c.createStatement()) {
                s.execute("CREATE TABLE account(id INT PRIMARY KEY, owner VARCHAR(40), balance BIGINT)");
                s.execute("CREATE TABLE history(id IDENTITY PRIMARY KEY, src INT, dst INT, amount BIGINT)");
                s.execute("CREATE INDEX history_src ON history(src)");
            }
            c.setAutoCommit(false);
            try (PreparedStatement p = c.prepareStatement("INSERT INTO account VALUES(?, ?, ?)")) {
                for (int i = 0; i < ACCOUNTS; i++) {
                    p.setInt(1, i);
                    p.setString(2, "owner-" + i);
                    p.setLong(3, 10_000);
                    p.addBatch();
                }
                p.executeBatch();
            }
            c.commit();
        }
        List<Thread> ts = new ArrayList<>();
        long[] failed = new long[THREADS];
        for (int t = 0; t < THREADS; t++) {
            final int me = t;
            Thread th = new Thread(() -> {
                Random r = new Random(42 + me);
                try (Connection c = DriverManager.getConnection(URL, "sa", "")) {
                    c.setAutoCommit(false);
                    PreparedStatement get = c.prepareStatement("SELECT balance FROM account WHERE id = ?");
                    PreparedStatement upd = c.prepareStatement("UPDATE account SET balance = balance + ? WHERE id = ?");
                    PreparedStatement hist = c.prepareStatement("INSERT INTO history(src, dst, amount) VALUES(?, ?, ?)");
                    for (int i = 0; i < TX; i++) {
                        int a = r.nextInt(ACCOUNTS), b = r.nextInt(ACCOUNTS);
                        long amount = 1 + r.nextInt(100);
                        try {
                            get.setInt(1, a);
                            try (ResultSet rs = get.executeQuery()) {
                                rs.next();
                                if (rs.getLong(1) < amount) {
                                    c.rollback();
                                    continue;
                                }
                            }
                            upd.setLong(1, -amount);
                            upd.setInt(2, a);
                            upd.executeUpdate();
                            upd.setLong(1, amount);
                            upd.setInt(2, b);
                            upd.executeUpdate();
                            hist.setInt(1, a);
                            hist.setInt(2, b);
                            hist.setLong(3, amount);
                            hist.executeUpdate();
                            c.commit();
                        } catch (java.sql.SQLException e) {
                            failed[me]++; // lock timeout / conflict: roll back and go on
                            c.rollback();
                        }
                    }
                } catch (Exception e) {
                    throw new RuntimeException(e);
                }
            }, "h2-client-" + t);
            ts.add(th);
            th.start();
        }
        for (Thread t : ts) {
            t.join();
        }
        try (Connection c = DriverManager.getConnection(URL, "sa", "");
                Statement s = c.createStatement()) {
            try (ResultSet rs = s.executeQuery("SELECT SUM(balance), COUNT(*) FROM account")) {
                rs.next();
                System.out.println("h2: total " + rs.getLong(1) + " over " + rs.getLong(2) + " accounts");
            }
            try (ResultSet rs = s.executeQuery(
                    "SELECT src, COUNT(*), SUM(amount) FROM history GROUP BY src ORDER BY 2 DESC LIMIT 3")) {
                while (rs.next()) {
                    System.out.println("h2: account " + rs.getInt(1) + " sent " + rs.getLong(2) + " times");
                }
            }
            long f = 0;
            for (long x : failed) {
                f += x;
            }
            System.out.println("h2: failed transactions " + f);
            s.execute("SHUTDOWN");
        }
    }
}
