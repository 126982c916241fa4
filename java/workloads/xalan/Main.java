import java.io.StringReader;
import java.io.StringWriter;
import java.util.ArrayList;
import java.util.List;
import javax.xml.transform.Templates;
import javax.xml.transform.Transformer;
import javax.xml.transform.stream.StreamResult;
import javax.xml.transform.stream.StreamSource;

/**
 * Workload "xalan": Apache Xalan-J's interpretive XSLT processor (not the JDK's XSLTC)
 * compiles one stylesheet into Templates, then 2 threads each transform a generated catalogue
 * of 1,500 records 4 times (sorting, grouping by key, numbering, string functions), as
 * DaCapo's xalan runs several transformer threads.
 */
public final class Main {
    static final int THREADS = 2, RECORDS = 1500, REPEATS = 4;

    static final String XSL = """
        <xsl:stylesheet version="1.0" xmlns:xsl="http://www.w3.org/1999/XSL/Transform">
          <xsl:output method="html" indent="yes"/>
          <xsl:key name="by-cat" match="item" use="@cat"/>
          <xsl:template match="/catalog">
            <html><body>
              <xsl:for-each select="item[generate-id() = generate-id(key('by-cat', @cat)[1])]">
                <xsl:sort select="@cat"/>
                <h2><xsl:value-of select="@cat"/> (<xsl:value-of select="count(key('by-cat', @cat))"/>)</h2>
                <table>
                  <xsl:for-each select="key('by-cat', @cat)">
                    <xsl:sort select="price" data-type="number" order="descending"/>
                    <xsl:if test="position() &lt;= 20">
                      <tr><td><xsl:number value="position()" format="i"/></td>
                          <td><xsl:value-of select="translate(name, 'abcdefghij', 'ABCDEFGHIJ')"/></td>
                          <td><xsl:value-of select="format-number(price, '#,##0.00')"/></td>
                          <td><xsl:value-of select="string-length(concat(name, descr))"/></td></tr>
                    </xsl:if>
                  </xsl:for-each>
                </table>
              </xsl:for-each>
              <p>Total: <xsl:value-of select="format-number(sum(item/price), '#,##0.00')"/></p>
            </body></html>
          </xsl:template>
        </xsl:stylesheet>
        """;

    static String catalog(int seed) {
        StringBuilder b = new StringBuilder("<catalog>");
        java.util.Random r = new java.util.Random(seed);
        for (int i = 0; i < RECORDS; i++) {
            b.append("<item cat=\"c").append(r.nextInt(25)).append("\"><name>item").append(i)
                    .append("abc</name><price>").append(r.nextInt(100000) / 100.0)
                    .append("</price><descr>").append("lorem ipsum ".repeat(1 + r.nextInt(5)))
                    .append("</descr></item>");
        }
        return b.append("</catalog>").toString();
    }

    public static void main(String[] args) throws Exception {
        org.apache.xalan.processor.TransformerFactoryImpl f = new org.apache.xalan.processor.TransformerFactoryImpl();
        Templates tpl = f.newTemplates(new StreamSource(new StringReader(XSL)));
        long[] out = new long[THREADS];
        List<Thread> ts = new ArrayList<>();
        for (int t = 0; t < THREADS; t++) {
            final int me = t;
            Thread th = new Thread(() -> {
                try {
                    String xml = catalog(me);
                    for (int k = 0; k < REPEATS; k++) {
                        Transformer tr = tpl.newTransformer();
                        StringWriter w = new StringWriter();
                        tr.transform(new StreamSource(new StringReader(xml)), new StreamResult(w));
                        out[me] += w.getBuffer().length();
                    }
                } catch (Exception e) {
                    throw new RuntimeException(e);
                }
            }, "xslt-" + t);
            ts.add(th);
            th.start();
        }
        for (Thread t : ts) {
            t.join();
        }
        System.out.println("xalan: " + (out[0] + out[1]) + " chars of HTML");
    }
}
