import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import org.apache.lucene.analysis.standard.StandardAnalyzer;
import org.apache.lucene.document.Document;
import org.apache.lucene.document.Field;
import org.apache.lucene.document.IntPoint;
import org.apache.lucene.document.StringField;
import org.apache.lucene.document.TextField;
import org.apache.lucene.index.DirectoryReader;
import org.apache.lucene.index.IndexWriter;
import org.apache.lucene.index.IndexWriterConfig;
import org.apache.lucene.index.Term;
import org.apache.lucene.search.BooleanClause;
import org.apache.lucene.search.BooleanQuery;
import org.apache.lucene.search.TermQuery;
import org.apache.lucene.search.IndexSearcher;
import org.apache.lucene.search.Query;
import org.apache.lucene.search.TopDocs;
import org.apache.lucene.store.ByteBuffersDirectory;

/**
 * Workload "lucene": Apache Lucene indexes 8,000 synthetic documents (Zipf-distributed words
 * from a fixed 5,000-word vocabulary, seeded) from 4 indexing threads into an in-memory
 * directory with a small RAM buffer (so it flushes and merges concurrently), then runs 200
 * queries from 2 searcher threads.
 */
public final class Main {
    static final int THREADS = 4, DOCS = 2000, WORDS = 5000, QUERIES = 100;

    static String word(int i) {
        StringBuilder b = new StringBuilder();
        int x = i + 7;
        while (x > 0) {
            b.append((char) ('a' + x % 23));
            x /= 23;
        }
        return b.toString();
    }

    static int zipf(Random r) {
        return (int) Math.min(WORDS - 1, Math.floor(Math.exp(r.nextDouble() * Math.log(WORDS))) - 1);
    }

    public static void main(String[] args) throws Exception {
        ByteBuffersDirectory dir = new ByteBuffersDirectory();
        IndexWriterConfig cfg = new IndexWriterConfig(new StandardAnalyzer());
        cfg.setRAMBufferSizeMB(4);
        try (IndexWriter w = new IndexWriter(dir, cfg)) {
            List<Thread> ts = new ArrayList<>();
            for (int t = 0; t < THREADS; t++) {
                final int me = t;
                Thread th = new Thread(() -> {
                    Random r = new Random(7 + me);
                    try {
                        for (int i = 0; i < DOCS; i++) {
                            StringBuilder body = new StringBuilder();
                            int n = 50 + r.nextInt(150);
                            for (int k = 0; k < n; k++) {
                                body.append(word(zipf(r))).append(' ');
                            }
                            Document d = new Document();
                            d.add(new StringField("id", me + "-" + i, Field.Store.YES));
                            d.add(new IntPoint("len", n));
                            d.add(new TextField("body", body.toString(), Field.Store.NO));
                            w.addDocument(d);
                        }
                    } catch (Exception e) {
                        throw new RuntimeException(e);
                    }
                }, "indexer-" + t);
                ts.add(th);
                th.start();
            }
            for (Thread t : ts) {
                t.join();
            }
            w.forceMerge(1);
        }
        try (DirectoryReader reader = DirectoryReader.open(dir)) {
            IndexSearcher s = new IndexSearcher(reader);
            long[] hits = new long[2];
            List<Thread> ts = new ArrayList<>();
            for (int t = 0; t < 2; t++) {
                final int me = t;
                Thread th = new Thread(() -> {
                    Random r = new Random(99 + me);
                    try {
                        for (int q = 0; q < QUERIES; q++) {
                            Query query = new BooleanQuery.Builder()
                                    .add(new TermQuery(new Term("body", word(zipf(r)))), BooleanClause.Occur.MUST)
                                    .add(new TermQuery(new Term("body", word(zipf(r)))), BooleanClause.Occur.SHOULD)
                                    .add(new TermQuery(new Term("body", word(zipf(r)))), BooleanClause.Occur.SHOULD)
                                    .build();
                            TopDocs top = s.search(query, 10);
                            hits[me] += top.totalHits.value;
                        }
                    } catch (Exception e) {
                        throw new RuntimeException(e);
                    }
                }, "searcher-" + t);
                ts.add(th);
                th.start();
            }
            for (Thread t : ts) {
                t.join();
            }
            System.out.println("lucene: " + reader.numDocs() + " docs, hits " + (hits[0] + hits[1]));
        }
    }
}
