import javax.tools.JavaCompiler;
import javax.tools.ToolProvider;
import java.io.File;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

/**
 * Workload "javac": the JDK's own compiler (javax.tools, in this JVM) compiles a fixed slice of
 * the JDK's own sources, java.base's java/util/[A-E]*.java (34 files), as seeds 000 and 003
 * ran javac. Args: SRC_ROOT (holding java.base/java/util/...) OUT_DIR.
 */
public final class Main {
    public static void main(String[] args) {
        File util = new File(args[0], "java.base/java/util");
        File[] files = util.listFiles((d, n) -> n.endsWith(".java") && n.charAt(0) >= 'A' && n.charAt(0) <= 'E');
        Arrays.sort(files);
        List<String> a = new ArrayList<>(List.of("-proc:none", "-nowarn", "-implicit:none",
                "-XDignore.symbol.file", "--patch-module", "java.base=" + new File(args[0], "java.base"),
                "-d", args[1]));
        for (File f : files) {
            a.add(f.getPath());
        }
        JavaCompiler c = ToolProvider.getSystemJavaCompiler();
        int rc = c.run(null, null, null, a.toArray(new String[0]));
        System.out.println("javac: " + files.length + " files, rc " + rc);
        if (rc != 0) {
            System.exit(rc);
        }
    }
}
