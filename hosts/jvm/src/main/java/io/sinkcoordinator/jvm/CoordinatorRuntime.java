package io.sinkcoordinator.jvm;

import com.dylibso.chicory.runtime.Instance;
import com.dylibso.chicory.runtime.Machine;
import com.dylibso.chicory.wasm.Parser;
import com.dylibso.chicory.wasm.WasmModule;
import com.dylibso.chicory.wasm.types.ExportSection;
import com.dylibso.chicory.wasm.types.ImportSection;
import com.dylibso.chicory.wasm.types.MemoryLimits;
import io.sinkcoordinator.jvm.internal.CoordinatorModule;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.Properties;
import java.util.Set;
import java.util.TreeSet;
import java.util.function.Function;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * A loaded coordinator core module on Chicory: parsed (and compiled) once, instantiated once per
 * {@link Coordinator}, {@link Writer} and {@link Table} handle. Thread-safe; the instances it
 * makes are not (one handle, one thread at a time).
 *
 * <p>The jar bundles the core module of the checkout it was built from, already compiled to JVM
 * bytecode by Chicory's build-time compiler ({@link Mode#COMPILED}); {@link #fromFile} loads any
 * other component or core module (checked for its version first).
 */
public final class CoordinatorRuntime {
  /**
   * The WIT package versions of {@code sink:coordinator} this host runs: {@code 0.2.x} from 0.2.1
   * on, the range of the Rust host ({@code sink_coordinator_host::artifact::COMPATIBLE_VERSIONS}),
   * the npm and the Python packages (this host calls {@code events}, added in 0.2.1, and uses
   * {@code events-packed} where the module has it).
   */
  public static final String COMPATIBLE_VERSIONS = ">=0.2.1, <0.3.0";

  /** How Chicory runs the module. */
  public enum Mode {
    /**
     * JVM bytecode made at build time (the bundled module only; another module is compiled at
     * load, as {@link #RUNTIME_COMPILED}). The fastest.
     */
    COMPILED,
    /** Chicory's interpreter: no class generation at all, the slowest. */
    INTERPRETER,
    /** JVM bytecode generated when the runtime loads (Chicory's runtime compiler, ASM). */
    RUNTIME_COMPILED
  }

  private static final Pattern SEMVER =
      Pattern.compile("(0|[1-9][0-9]{0,8})\\.(0|[1-9][0-9]{0,8})\\.(0|[1-9][0-9]{0,8})");
  private static final Object BUNDLED_LOCK = new Object();
  private static CoordinatorRuntime bundledCompiled;

  private final WasmModule module;
  private final Function<Instance, Machine> machineFactory;
  private final Mode mode;
  private final String version;
  private final String sha256;
  private final int maxPages;
  private final TableFormat tableFormat;
  final Guest.Names names;

  private CoordinatorRuntime(
      WasmModule module,
      Function<Instance, Machine> machineFactory,
      Mode mode,
      String version,
      String sha256)
      throws IncompatibleComponentException {
    this.module = module;
    this.machineFactory = machineFactory;
    this.mode = mode;
    this.version = version;
    this.sha256 = sha256;
    this.maxPages = -1;
    this.tableFormat = TableFormat.NATIVE;
    this.names = new Guest.Names(version, exportNames(module), importNames(module));
  }

  private CoordinatorRuntime(CoordinatorRuntime base, int maxPages, TableFormat tableFormat) {
    this.module = base.module;
    this.machineFactory = base.machineFactory;
    this.mode = base.mode;
    this.version = base.version;
    this.sha256 = base.sha256;
    this.names = base.names;
    this.maxPages = maxPages;
    this.tableFormat = tableFormat;
  }

  /**
   * The same module with the instances' linear memory capped at {@code maxBytes} (rounded down
   * to 64 KiB pages): a guest growing past it fails its allocation and traps, as the Rust host's
   * {@code --max-memory}. Without it the cap is Chicory's (a Java array: under 2 GiB).
   */
  public CoordinatorRuntime withMaxMemoryBytes(long maxBytes) {
    if (maxBytes < 1L << 16) {
      throw new IllegalArgumentException("maxBytes below one 64 KiB page: " + maxBytes);
    }
    return new CoordinatorRuntime(this, (int) Math.min(maxBytes >>> 16, 65536), tableFormat);
  }

  /**
   * The same module, every {@link Coordinator} made on it given {@code format} by its
   * constructor ({@link Coordinator#setTableFormat}, as the Rust host's {@code
   * RuntimeOptions::table_format}). {@link TableFormat#NATIVE} (the default) makes no call; {@link
   * TableFormat#PAIMON} on a module older than 0.2.5 makes the constructor throw the {@link
   * InvalidConfigException} of {@code setTableFormat}.
   */
  public CoordinatorRuntime withTableFormat(TableFormat format) {
    return new CoordinatorRuntime(this, maxPages, Objects.requireNonNull(format, "format"));
  }

  /** The table format the constructor of every coordinator on this runtime sets. */
  public TableFormat tableFormat() {
    return tableFormat;
  }

  /** The bundled module, compiled at build time (shared: load it once per JVM). */
  public static CoordinatorRuntime bundled() {
    synchronized (BUNDLED_LOCK) {
      if (bundledCompiled == null) {
        bundledCompiled = bundled(Mode.COMPILED);
      }
      return bundledCompiled;
    }
  }

  /** The bundled module in {@code mode} (a new runtime each call). */
  public static CoordinatorRuntime bundled(Mode mode) {
    Properties props = bundledProperties();
    String sha = props.getProperty("sha256", "");
    try {
      return switch (mode) {
        case COMPILED ->
            checked(CoordinatorModule.load(), CoordinatorModule::create, mode, sha);
        case INTERPRETER -> checked(Parser.parse(bundledCore()), null, mode, sha);
        case RUNTIME_COMPILED -> {
          WasmModule m = Parser.parse(bundledCore());
          yield checked(m, RuntimeCompiler.compile(m), mode, sha);
        }
      };
    } catch (IncompatibleComponentException e) {
      // The build checked this module already: a jar built from an unsupported checkout.
      throw new IllegalStateException("the bundled core module: " + e.getMessage(), e);
    }
  }

  /** The WIT version and SHA-256 of the bundled core module (from the build). */
  public static Properties bundledProperties() {
    Properties p = new Properties();
    try (InputStream in =
        CoordinatorRuntime.class.getResourceAsStream("sink-coordinator.properties")) {
      if (in == null) {
        throw new IOException("sink-coordinator.properties is missing from the jar");
      }
      p.load(in);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    return p;
  }

  private static byte[] bundledCore() {
    try (InputStream in =
        CoordinatorRuntime.class.getResourceAsStream("sink-coordinator.core.wasm")) {
      if (in == null) {
        throw new IOException("sink-coordinator.core.wasm is missing from the jar");
      }
      return in.readAllBytes();
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  /**
   * A component ({@code sink-coordinator-<v>.wasm}) or core module ({@code .core.wasm}) file,
   * refused unless its version is within {@link #COMPATIBLE_VERSIONS}.
   */
  public static CoordinatorRuntime fromFile(Path file, Mode mode)
      throws IOException, IncompatibleComponentException {
    return fromBytes(Files.readAllBytes(file), mode);
  }

  /** As {@link #fromFile}, from the file's bytes. */
  public static CoordinatorRuntime fromBytes(byte[] bytes, Mode mode)
      throws IncompatibleComponentException {
    byte[] core;
    try {
      core = CoreModule.fromBytes(bytes);
    } catch (IllegalArgumentException e) {
      throw new IncompatibleComponentException(
          "not a sink-coordinator component: " + e.getMessage(), List.of(), e);
    }
    String sha = CoreModule.sha256(core);
    WasmModule m;
    try {
      m = Parser.parse(core);
    } catch (RuntimeException e) {
      throw new IncompatibleComponentException(
          "not a sink-coordinator component: the core module does not parse: " + e.getMessage(),
          List.of(),
          e);
    }
    // Check the version before anything is compiled or linked.
    checkVersion(exportNames(m));
    if (mode == Mode.COMPILED && sha.equals(bundledProperties().getProperty("sha256"))) {
      return checked(CoordinatorModule.load(), CoordinatorModule::create, mode, sha);
    }
    Function<Instance, Machine> factory = null;
    if (mode != Mode.INTERPRETER) {
      try {
        factory = RuntimeCompiler.compile(m);
      } catch (RuntimeException | LinkageError e) {
        throw new IncompatibleComponentException(
            "cannot compile the core module: " + e.getMessage(), List.of(), e);
      }
    }
    return checked(m, factory, mode == Mode.COMPILED ? Mode.RUNTIME_COMPILED : mode, sha);
  }

  private static CoordinatorRuntime checked(
      WasmModule m, Function<Instance, Machine> factory, Mode mode, String sha)
      throws IncompatibleComponentException {
    return new CoordinatorRuntime(m, factory, mode, checkVersion(exportNames(m)), sha);
  }

  private static List<String> exportNames(WasmModule m) {
    ExportSection s = m.exportSection();
    List<String> out = new ArrayList<>(s.exportCount());
    for (int i = 0; i < s.exportCount(); i++) {
      out.add(s.getExport(i).name());
    }
    return out;
  }

  private static List<String[]> importNames(WasmModule m) {
    ImportSection s = m.importSection();
    List<String[]> out = new ArrayList<>(s.importCount());
    for (int i = 0; i < s.importCount(); i++) {
      out.add(new String[] {s.getImport(i).module(), s.getImport(i).name()});
    }
    return out;
  }

  /**
   * The sorted, distinct versions of the {@code sink:coordinator/…@V#…} export names of a core
   * module (the component's export names, as the other hosts read them, carry the same).
   */
  public static List<String> exportedVersions(List<String> names) {
    Set<String> versions = new TreeSet<>();
    for (String n : names) {
      int at = n.indexOf('@');
      if (n.startsWith("sink:coordinator/") && at > 0) {
        int hash = n.indexOf('#', at);
        versions.add(hash < 0 ? n.substring(at + 1) : n.substring(at + 1, hash));
      }
    }
    return new ArrayList<>(versions);
  }

  /**
   * The module's version if this host runs it, else the one message of every host: {@code
   * incompatible component: this host runs sink:coordinator >=0.2.1, <0.3.0, the component is
   * sink:coordinator@0.1.0}.
   */
  public static String checkVersion(List<String> names) throws IncompatibleComponentException {
    List<String> found = exportedVersions(names);
    String wanted = "this host runs sink:coordinator " + COMPATIBLE_VERSIONS;
    if (found.isEmpty()) {
      throw new IncompatibleComponentException(
          "not a sink-coordinator component: it exports no sink:coordinator interface ("
              + wanted
              + ")",
          found,
          null);
    }
    if (found.size() > 1) {
      throw new IncompatibleComponentException(
          "incompatible component: "
              + wanted
              + ", the component exports several versions ("
              + String.join(", ", found)
              + ")",
          found,
          null);
    }
    String v = found.get(0);
    Matcher m = SEMVER.matcher(v);
    boolean ok = false;
    if (m.matches()) {
      // >=0.2.1, <0.3.0 (a pre-release or build suffix never matches the pattern)
      int major = Integer.parseInt(m.group(1));
      int minor = Integer.parseInt(m.group(2));
      int patch = Integer.parseInt(m.group(3));
      ok = major == 0 && minor == 2 && patch >= 1;
    }
    if (!ok) {
      throw new IncompatibleComponentException(
          "incompatible component: " + wanted + ", the component is sink:coordinator@" + v,
          found,
          null);
    }
    return v;
  }

  /** The module's WIT package version ({@code 0.2.3}). */
  public String version() {
    return version;
  }

  /** SHA-256 of the core module's bytes. */
  public String sha256() {
    return sha256;
  }

  public Mode mode() {
    return mode;
  }

  /** Whether the module has {@code coordinator.events-packed} (WIT 0.2.2 on). */
  public boolean hasEventsPacked() {
    return names.eventsPacked != null;
  }

  /**
   * Whether the module has {@code coordinator.set-table-format} (WIT 0.2.5 on), i.e. can write a
   * table other than the native log ({@link Coordinator#setTableFormat}).
   */
  public boolean hasSetTableFormat() {
    return names.setTableFormat != null;
  }

  /**
   * Runs a synthetic job on this runtime for about {@code duration} (batches of events, state
   * bytes, completions, a restore, writer calls, table reads, all on a {@link MemoryStorage}), so
   * that HotSpot compiles the guest's hot functions before a real coordinator needs them. Why: the
   * compiled module's functions are large JVM methods that HotSpot interprets until C2 compiles
   * them after thousands of calls, and cannot compile on-stack (docs/hosts/jvm.md), so a cold
   * coordinator's first completions can take 0.1–1 s. Call it once per JVM, off the critical
   * path (a background thread is fine: the instances it makes are its own). Never throws.
   *
   * @return the checkpoint cycles it ran (fewer than expected only if something failed)
   */
  public long warmUp(java.time.Duration duration) {
    long end = System.nanoTime() + duration.toNanos();
    int p = 16;
    long cp = 0;
    try {
      Coordinator c = null;
      MemoryStorage storage = null;
      Writer w = null;
      byte[] state = null;
      int attempt = 0;
      while (System.nanoTime() < end) {
        if (cp % 64 == 0) {
          // every 64 cycles a global failover (a new instance restored from the last state);
          // every 512 a fresh table, which bounds the memory the snapshots take
          if (cp % 512 == 0) {
            storage = new MemoryStorage();
            state = null;
            w = new Writer(0, this);
          }
          RestorePoint restore = state == null ? null : new RestorePoint(cp, state, List.of());
          attempt = restore == null ? 0 : attempt + 1;
          c = new Coordinator(Config.of(p, "warm-up"), storage, new ManualClock(cp), restore, this);
          c.start();
          if (restore != null) {
            for (int s = 0; s < p; s++) {
              c.restored(s, attempt, cp, List.of());
            }
          }
        }
        cp++;
        List<WriterEvent> events = new ArrayList<>(p);
        for (int s = 0; s < p; s++) {
          List<byte[]> committables = new ArrayList<>(4);
          for (int i = 0; i < 4; i++) {
            committables.add(new byte[200]);
          }
          events.add(new WriterEvent(s, attempt,
              new Entry(cp, committables, java.util.OptionalLong.of(cp), false)));
        }
        c.events(events);
        state = c.checkpoint(cp);
        c.checkpointComplete(cp);
        w.report(cp, List.of(new byte[64]), java.util.OptionalLong.empty(), false);
        w.committed(cp);
        w.state();
        if (cp % 16 == 0) {
          new Table(storage, Clock.system(), this).latestSnapshot();
        }
      }
    } catch (CoordinatorException | RuntimeException e) {
      // a warm-up is an optimization: whatever went wrong, the caller goes on
      return cp - 1;
    }
    return cp;
  }

  Instance instantiate(com.dylibso.chicory.runtime.ImportValues imports) {
    Instance.Builder b = Instance.builder(module).withImportValues(imports);
    if (maxPages > 0) {
      int initial = module.memorySection().map(m -> m.getMemory(0).limits().initialPages()).orElse(0);
      b = b.withMemoryLimits(new MemoryLimits(Math.min(initial, maxPages), maxPages));
    }
    if (machineFactory != null) {
      b = b.withMachineFactory(machineFactory);
    }
    return b.build();
  }

  @Override
  public String toString() {
    return "sink:coordinator@" + version + " on Chicory (" + mode + ")";
  }

  /**
   * The runtime compiler lives in its own class so that the {@code compiler} artifact (and ASM)
   * is only needed by the modes that use it.
   */
  private static final class RuntimeCompiler {
    static Function<Instance, Machine> compile(WasmModule m) {
      return com.dylibso.chicory.compiler.MachineFactoryCompiler.compile(m);
    }
  }
}
