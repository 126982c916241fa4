package objmon.agent;

import java.lang.classfile.ClassFile;
import java.lang.classfile.ClassHierarchyResolver;
import java.lang.classfile.ClassModel;
import java.lang.classfile.ClassTransform;
import java.lang.classfile.CodeBuilder;
import java.lang.classfile.CodeElement;
import java.lang.classfile.CodeModel;
import java.lang.classfile.CodeTransform;
import java.lang.classfile.Label;
import java.lang.classfile.MethodModel;
import java.lang.classfile.MethodTransform;
import java.lang.classfile.Opcode;
import java.lang.classfile.TypeKind;
import java.lang.classfile.instruction.InvokeInstruction;
import java.lang.classfile.instruction.MonitorInstruction;
import java.lang.classfile.instruction.NewMultiArrayInstruction;
import java.lang.classfile.instruction.NewObjectInstruction;
import java.lang.classfile.instruction.NewPrimitiveArrayInstruction;
import java.lang.classfile.instruction.NewReferenceArrayInstruction;
import java.lang.classfile.instruction.ReturnInstruction;
import java.lang.constant.ClassDesc;
import java.lang.constant.ConstantDescs;
import java.lang.constant.MethodTypeDesc;
import java.lang.instrument.ClassFileTransformer;
import java.lang.instrument.Instrumentation;
import java.lang.reflect.AccessFlag;
import java.security.ProtectionDomain;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The agent: {@code -javaagent:objmon-agent.jar=out=TRACE[,alloc=0|1]}.
 *
 * <p>Installs a transformer that rewrites, with {@code java.lang.classfile}, every class as it
 * is loaded, then retransforms every already loaded modifiable class. Rewrites:
 * <ul>
 *   <li>{@code monitorenter} becomes {@code dup; monitorenter; Rt.enter(o)};</li>
 *   <li>{@code monitorexit} becomes {@code dup; Rt.exit(o); monitorexit};</li>
 *   <li>a synchronized method keeps ACC_SYNCHRONIZED (retransformation may not change
 *       modifiers) and gets {@code Rt.menter(m)} first, {@code Rt.mexit(m)} before each return,
 *       and a catch-all handler around the whole original body that calls
 *       {@code Rt.mexitExc(m)} and rethrows (listed last in the exception table, so the
 *       method's own handlers still come first). m is {@code this} (copied to a fresh local
 *       at entry: the body may overwrite slot 0) or the class constant;</li>
 *   <li>call sites of {@code Object.wait()/wait(J)/wait(JI)/notify()/notifyAll()} become calls
 *       of {@code Rt.wait0/wait1/wait2/notify0/notifyAll0};</li>
 *   <li>with {@code alloc=1} (default), {@code Rt.alloc()} before each allocation bytecode.</li>
 * </ul>
 */
public final class Agent {
    private Agent() {}

    static final ClassDesc RT = ClassDesc.of("objmon.agent.Rt");
    static final MethodTypeDesc OBJ_V = MethodTypeDesc.of(ConstantDescs.CD_void, ConstantDescs.CD_Object);
    static final MethodTypeDesc V = MethodTypeDesc.of(ConstantDescs.CD_void);

    static Instrumentation inst;
    static Module rtModule;
    static final Set<Module> READS = ConcurrentHashMap.newKeySet();

    // Counters, written to the trace's STATS record.
    static final AtomicLong classesSeen = new AtomicLong();
    static final AtomicLong classesChanged = new AtomicLong();
    static final AtomicLong classesFailed = new AtomicLong();
    static final AtomicLong classesExcluded = new AtomicLong();
    static final AtomicLong classesRecursive = new AtomicLong();
    static final AtomicLong retransformFailed = new AtomicLong();
    static final AtomicLong unmodifiable = new AtomicLong();
    static final AtomicLong syncNative = new AtomicLong();
    static final AtomicLong sitesEnter = new AtomicLong();
    static final AtomicLong sitesExit = new AtomicLong();
    static final AtomicLong sitesSyncMethod = new AtomicLong();
    static final AtomicLong sitesWait = new AtomicLong();
    static final AtomicLong sitesNotify = new AtomicLong();
    static final List<String> failures = new ArrayList<>();

    public static void premain(String args, Instrumentation in) throws Exception {
        inst = in;
        String out = "objmon.trace";
        boolean alloc = true;
        if (args != null) {
            for (String kv : args.split(",")) {
                int eq = kv.indexOf('=');
                String k = eq < 0 ? kv : kv.substring(0, eq);
                String v = eq < 0 ? "1" : kv.substring(eq + 1);
                if (k.equals("out")) {
                    out = v;
                } else if (k.equals("alloc")) {
                    alloc = !v.equals("0");
                }
            }
        }
        Rt.countAllocs = alloc;
        rtModule = Rt.class.getModule();
        for (Module m : ModuleLayer.boot().modules()) {
            addReads(m);
        }
        // Load and warm everything the transformer and recorder use before any transform runs,
        // so that no class the transformer needs is loaded (untransformed) from inside it.
        Rt.open(out, args == null ? "" : args);
        Rt.State me = Rt.TL.get();
        Ids.id(new Object(), me); // an OBJ_NEW without events: harmless
        byte[] self = Agent.class.getResourceAsStream("/objmon/agent/WarmUp.class").readAllBytes();
        transformBytes(WarmUp.class.getClassLoader(), self, true);
        Transformer t = new Transformer();
        in.addTransformer(t, true);
        Runtime.getRuntime().addShutdownHook(new Thread(new Runnable() {
            @Override
            public void run() {
                try {
                    shutdown();
                } catch (Throwable e) {
                    e.printStackTrace();
                }
            }
        }, "objmon-trace-flush"));
        // Retransform what was loaded before us.
        List<Class<?>> todo = new ArrayList<>();
        for (Class<?> c : in.getAllLoadedClasses()) {
            if (c.isArray() || c.isPrimitive()) {
                continue;
            }
            if (!in.isModifiableClass(c) || c.isHidden()) {
                unmodifiable.incrementAndGet();
                continue;
            }
            if (excluded(c.getName().replace('.', '/'))) {
                continue;
            }
            todo.add(c);
        }
        for (int i = 0; i < todo.size(); i += 64) {
            List<Class<?>> batch = todo.subList(i, Math.min(todo.size(), i + 64));
            try {
                in.retransformClasses(batch.toArray(new Class<?>[0]));
            } catch (Throwable e) {
                for (Class<?> c : batch) {
                    try {
                        in.retransformClasses(c);
                    } catch (Throwable e2) {
                        retransformFailed.incrementAndGet();
                        note("retransform " + c.getName() + ": " + e2);
                    }
                }
            }
        }
        Rt.ready = true;
    }

    static void note(String s) {
        synchronized (failures) {
            if (failures.size() < 50) {
                failures.add(s);
            }
        }
    }

    static void addReads(Module m) {
        if (m.isNamed() && READS.add(m)) {
            inst.redefineModule(m, Set.of(rtModule), Map.of(), Map.of(), Set.of(), Map.of());
        }
    }

    static void shutdown() {
        long hidden = 0;
        // Classes defined after premain that no transform saw: hidden classes (lambda forms,
        // lambdas' proxies), which are never passed to transformers.
        for (Class<?> c : inst.getAllLoadedClasses()) {
            if (c.isHidden()) {
                hidden++;
            }
        }
        String[] keys = {
            "classes.seen", "classes.instrumented", "classes.failed", "classes.excluded",
            "classes.loaded_inside_transform", "classes.retransform_failed",
            "classes.unmodifiable_at_start", "classes.hidden_at_exit", "methods.synchronized_native",
            "sites.monitorenter", "sites.monitorexit", "sites.synchronized_method", "sites.wait",
            "sites.notify",
        };
        long[] vals = {
            classesSeen.get(), classesChanged.get(), classesFailed.get(), classesExcluded.get(),
            classesRecursive.get(), retransformFailed.get(), unmodifiable.get(), hidden,
            syncNative.get(), sitesEnter.get(), sitesExit.get(), sitesSyncMethod.get(),
            sitesWait.get(), sitesNotify.get(),
        };
        Rt.close(keys, vals);
        if (System.getProperty("objmon.agent.verbose") != null) {
            for (String f : failures) {
                System.err.println("objmon-agent: " + f);
            }
            for (int i = 0; i < keys.length; i++) {
                System.err.println("objmon-agent: " + keys[i] + " = " + vals[i]);
            }
        }
    }

    /** Never instrumented: the recorder itself, and Object (its wait() calls wait(0L)). */
    static boolean excluded(String internalName) {
        return internalName.startsWith("objmon/agent/") || internalName.equals("java/lang/Object");
    }

    /** Allocation counting would recurse through ThreadLocal.get in these. */
    static boolean noAllocCount(String n) {
        return n.startsWith("java/lang/ThreadLocal") || n.startsWith("java/lang/ref/")
                || n.equals("java/lang/Thread") || n.startsWith("java/util/concurrent/locks/")
                || n.startsWith("java/util/concurrent/atomic/") || n.startsWith("jdk/internal/misc/");
    }

    static final class Transformer implements ClassFileTransformer {
        @Override
        public byte[] transform(Module module, ClassLoader loader, String name,
                Class<?> redefined, ProtectionDomain pd, byte[] bytes) {
            if (name == null || excluded(name)) {
                classesExcluded.incrementAndGet();
                return null;
            }
            Rt.State s = Rt.enterBusy();
            if (s == null) {
                // Loaded while this thread was recording or transforming: left as is.
                classesRecursive.incrementAndGet();
                note("loaded inside the recorder: " + name);
                return null;
            }
            try {
                if (module != null) {
                    addReads(module);
                }
                return transformBytes(loader, bytes, false);
            } catch (Throwable e) {
                classesFailed.incrementAndGet();
                note("transform " + name + ": " + e);
                return null;
            } finally {
                s.busy = false;
            }
        }
    }

    static byte[] transformBytes(ClassLoader loader, byte[] bytes, boolean warm) {
        classesSeen.incrementAndGet();
        ClassHierarchyResolver res = ClassHierarchyResolver.ofResourceParsing(
                        loader != null ? loader : ClassLoader.getPlatformClassLoader())
                .orElse(ClassHierarchyResolver.defaultResolver());
        ClassFile cf = ClassFile.of(ClassFile.ClassHierarchyResolverOption.of(res));
        ClassModel cm = cf.parse(bytes);
        String name = cm.thisClass().asInternalName();
        boolean alloc = Rt.countAllocs && !noAllocCount(name);
        // Scan first: most classes have nothing to rewrite.
        boolean any = alloc;
        for (MethodModel m : cm.methods()) {
            if (m.flags().has(AccessFlag.SYNCHRONIZED)) {
                if (m.code().isEmpty()) {
                    syncNative.incrementAndGet();
                } else {
                    any = true;
                }
            }
            if (!any && m.code().isPresent()) {
                for (CodeElement e : m.code().get()) {
                    if (e instanceof MonitorInstruction || isWaitNotify(e) != null) {
                        any = true;
                        break;
                    }
                }
            }
            if (any) {
                break;
            }
        }
        if (!any) {
            return null;
        }
        ClassDesc self = cm.thisClass().asSymbol();
        int major = cm.majorVersion();
        boolean raise = major < 49; // no ldc of a class constant before 49
        ClassTransform ct = new ClassTransform() {
            @Override
            public void accept(java.lang.classfile.ClassBuilder cb, java.lang.classfile.ClassElement ce) {
                if (ce instanceof java.lang.classfile.MethodModel mm) {
                    boolean sync = mm.flags().has(AccessFlag.SYNCHRONIZED);
                    boolean stat = mm.flags().has(AccessFlag.STATIC);
                    cb.transformMethod(mm, new MethodTransform() {
                        @Override
                        public void accept(java.lang.classfile.MethodBuilder mb,
                                java.lang.classfile.MethodElement me) {
                            if (me instanceof CodeModel code) {
                                mb.transformCode(code, new Rewriter(sync, stat, self, alloc, warm));
                            } else {
                                mb.with(me);
                            }
                        }
                    });
                } else if (raise && ce instanceof java.lang.classfile.ClassFileVersion) {
                    // Raised to 49 so that a static synchronized method may ldc its class
                    // (49 still needs no stack maps).
                    cb.withVersion(49, 0);
                } else {
                    cb.with(ce);
                }
            }
        };
        byte[] out = cf.transformClass(cm, ct);
        if (!warm) {
            classesChanged.incrementAndGet();
        }
        return out;
    }

    /** "wait0"/"wait1"/"wait2"/"notify0"/"notifyAll0" for a call of Object's, else null. */
    static String isWaitNotify(CodeElement e) {
        if (!(e instanceof InvokeInstruction ii) || ii.opcode() == Opcode.INVOKESTATIC) {
            return null;
        }
        String n = ii.name().stringValue();
        String d = ii.type().stringValue();
        switch (n) {
            case "wait":
                return switch (d) {
                    case "()V" -> "wait0";
                    case "(J)V" -> "wait1";
                    case "(JI)V" -> "wait2";
                    default -> null;
                };
            case "notify":
                return d.equals("()V") ? "notify0" : null;
            case "notifyAll":
                return d.equals("()V") ? "notifyAll0" : null;
            default:
                return null;
        }
    }

    /** The code rewriter for one method. */
    static final class Rewriter implements CodeTransform {
        final boolean sync, stat, alloc, warm;
        final ClassDesc self;
        int slot = -1;
        Label start, end;

        Rewriter(boolean sync, boolean stat, ClassDesc self, boolean alloc, boolean warm) {
            this.sync = sync;
            this.stat = stat;
            this.self = self;
            this.alloc = alloc;
            this.warm = warm;
        }

        void loadMonitor(CodeBuilder cb) {
            if (stat) {
                cb.ldc(self);
            } else {
                cb.aload(slot);
            }
        }

        @Override
        public void atStart(CodeBuilder cb) {
            if (!sync) {
                return;
            }
            if (!warm) {
                sitesSyncMethod.incrementAndGet();
            }
            if (!stat) {
                slot = cb.allocateLocal(TypeKind.REFERENCE);
                cb.aload(0);
                cb.astore(slot);
            }
            loadMonitor(cb);
            cb.invokestatic(RT, "menter", OBJ_V);
            start = cb.newBoundLabel();
            end = cb.newLabel();
        }

        @Override
        public void accept(CodeBuilder cb, CodeElement e) {
            if (e instanceof MonitorInstruction mi) {
                if (mi.opcode() == Opcode.MONITORENTER) {
                    if (!warm) {
                        sitesEnter.incrementAndGet();
                    }
                    cb.dup();
                    cb.with(e);
                    cb.invokestatic(RT, "enter", OBJ_V);
                } else {
                    if (!warm) {
                        sitesExit.incrementAndGet();
                    }
                    cb.dup();
                    cb.invokestatic(RT, "exit", OBJ_V);
                    cb.with(e);
                }
                return;
            }
            String wn = isWaitNotify(e);
            if (wn != null) {
                InvokeInstruction ii = (InvokeInstruction) e;
                if (!warm) {
                    if (wn.startsWith("wait")) {
                        sitesWait.incrementAndGet();
                    } else {
                        sitesNotify.incrementAndGet();
                    }
                }
                MethodTypeDesc t = ii.typeSymbol().insertParameterTypes(0, ConstantDescs.CD_Object);
                cb.invokestatic(RT, wn, t);
                return;
            }
            if (sync && e instanceof ReturnInstruction) {
                loadMonitor(cb);
                cb.invokestatic(RT, "mexit", OBJ_V);
                cb.with(e);
                return;
            }
            if (alloc && (e instanceof NewObjectInstruction || e instanceof NewPrimitiveArrayInstruction
                    || e instanceof NewReferenceArrayInstruction || e instanceof NewMultiArrayInstruction)) {
                cb.invokestatic(RT, "alloc", V);
            }
            cb.with(e);
        }

        @Override
        public void atEnd(CodeBuilder cb) {
            if (!sync) {
                return;
            }
            cb.labelBinding(end);
            Label handler = cb.newBoundLabel();
            loadMonitor(cb);
            cb.invokestatic(RT, "mexitExc", OBJ_V);
            cb.athrow();
            cb.exceptionCatchAll(start, end, handler);
        }
    }
}
