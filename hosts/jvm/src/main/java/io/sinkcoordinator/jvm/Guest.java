package io.sinkcoordinator.jvm;

import com.dylibso.chicory.runtime.ExportFunction;
import com.dylibso.chicory.runtime.HostFunction;
import com.dylibso.chicory.runtime.ImportValues;
import com.dylibso.chicory.runtime.Instance;
import com.dylibso.chicory.runtime.Memory;
import com.dylibso.chicory.wasm.types.ValType;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.OptionalLong;
import java.util.Set;

/**
 * One instance of the core module and the canonical ABI spoken by hand (docs/embedding.md): the
 * ten imports (storage, clock, resource intrinsics) served from a {@link Storage} and a {@link
 * Clock}, the handle table of the two resources, lowering arguments into memory allocated by the
 * guest's {@code cabi_realloc}, lifting results from return areas, and {@code cabi_post_*}.
 *
 * <p>Not thread-safe and not reentrant: the handles serialize calls and refuse nesting.
 */
final class Guest {
  /** The versioned export names of one module, resolved once per runtime. */
  static final class Names {
    final String version;
    final String realloc = "cabi_realloc";
    final String eventsPacked;
    /** {@code coordinator.set-table-format}, null on a module older than 0.2.5. */
    final String setTableFormat;
    final String events;
    final Set<String> exports;
    final List<String[]> imports;

    Names(String version, List<String> exportList, List<String[]> imports)
        throws IncompatibleComponentException {
      this.version = version;
      this.exports = new HashSet<>(exportList);
      this.imports = imports;
      String packed = of(Layout.COORDINATOR_EVENTS_PACKED);
      String batch = of(Layout.COORDINATOR_EVENTS);
      this.eventsPacked = exports.contains(packed) ? packed : null;
      this.events = exports.contains(batch) ? batch : null;
      String format = of(Layout.COORDINATOR_SET_TABLE_FORMAT);
      this.setTableFormat = exports.contains(format) ? format : null;
      for (String[] imp : imports) {
        if (kindOf(imp[0], imp[1]) < 0) {
          throw new IncompatibleComponentException(
              "incompatible component: unknown import " + imp[0] + " " + imp[1],
              List.of(version),
              null);
        }
      }
      if (!exports.contains(realloc) || !exports.contains("memory")) {
        throw new IncompatibleComponentException(
            "not a sink-coordinator component: no cabi_realloc or memory export",
            List.of(version),
            null);
      }
    }

    /** The core name of {@code e} in this module's version. */
    String of(Layout.Export e) {
      return "sink:coordinator/" + e.iface() + "@" + version + "#" + e.name();
    }

    int kindOf(String module, String name) {
      String v = "@" + version;
      if (module.equals("sink:coordinator/storage" + v)) {
        return switch (name) {
          case "get" -> 0;
          case "put-if-absent" -> 1;
          case "put" -> 2;
          case "delete" -> 3;
          case "list" -> 4;
          default -> -1;
        };
      }
      if (module.equals("sink:coordinator/clock" + v) && name.equals("now-ms")) {
        return 5;
      }
      if (module.equals("[export]sink:coordinator/coordinator" + v)) {
        return switch (name) {
          case "[resource-new]coordinator" -> 6;
          case "[resource-drop]coordinator" -> 7;
          default -> -1;
        };
      }
      if (module.equals("[export]sink:coordinator/writer" + v)) {
        return switch (name) {
          case "[resource-new]writer" -> 8;
          case "[resource-drop]writer" -> 9;
          default -> -1;
        };
      }
      return -1;
    }
  }

  private static final List<ValType> I32X3 = List.of(ValType.I32, ValType.I32, ValType.I32);
  private static final List<ValType> I32X5 =
      List.of(ValType.I32, ValType.I32, ValType.I32, ValType.I32, ValType.I32);
  private static final long[] NONE = new long[0];

  final Names names;
  private final Storage storage;
  private final Clock clock;
  private final Instance instance;
  private final Memory mem;
  private final ExportFunction realloc;
  private final Map<String, ExportFunction> exports = new HashMap<>();
  private final Map<Integer, Integer> coordinatorReps = new HashMap<>();
  private final Map<Integer, Integer> writerReps = new HashMap<>();
  private int nextHandle = 1;
  /** The first exception (not a BackendException) an import threw: the cause of the trap. */
  RuntimeException importFailure;

  Guest(CoordinatorRuntime runtime, Storage storage, Clock clock) {
    this.names = runtime.names;
    this.storage = storage;
    this.clock = clock;
    List<HostFunction> fns = new ArrayList<>();
    for (String[] imp : names.imports) {
      fns.add(hostFunction(imp[0], imp[1], names.kindOf(imp[0], imp[1])));
    }
    this.instance =
        runtime.instantiate(ImportValues.builder().withFunctions(new ArrayList<>(fns)).build());
    this.mem = instance.memory();
    this.realloc = instance.export(names.realloc);
  }

  // ---------------------------------------------------------------------------------------------
  // Imports
  // ---------------------------------------------------------------------------------------------

  private HostFunction hostFunction(String module, String name, int kind) {
    return switch (kind) {
      case 0 -> new HostFunction(module, name, I32X3, List.of(), (inst, a) -> get(a));
      case 1 -> new HostFunction(module, name, I32X5, List.of(), (inst, a) -> putIfAbsent(a));
      case 2 -> new HostFunction(module, name, I32X5, List.of(), (inst, a) -> put(a));
      case 3 -> new HostFunction(module, name, I32X3, List.of(), (inst, a) -> delete(a));
      case 4 -> new HostFunction(module, name, I32X3, List.of(), (inst, a) -> list(a));
      case 5 ->
          new HostFunction(
              module, name, List.of(), List.of(ValType.I64), (inst, a) -> nowMs());
      case 6 -> resourceNewImport(module, name, coordinatorReps);
      case 8 -> resourceNewImport(module, name, writerReps);
      case 7 -> resourceDropImport(module, name, coordinatorReps, Layout.COORDINATOR_DTOR);
      default -> resourceDropImport(module, name, writerReps, Layout.WRITER_DTOR);
    };
  }

  /** {@code [resource-new]}: the guest's rep gets a fresh handle. */
  private HostFunction resourceNewImport(String module, String name, Map<Integer, Integer> reps) {
    return new HostFunction(
        module,
        name,
        List.of(ValType.I32),
        List.of(ValType.I32),
        (inst, a) -> new long[] {resourceNew(reps, (int) a[0])});
  }

  /** {@code [resource-drop]}: the handle is forgotten and its rep's destructor {@code dtor} runs. */
  private HostFunction resourceDropImport(
      String module, String name, Map<Integer, Integer> reps, Layout.Export dtor) {
    return new HostFunction(
        module, name, List.of(ValType.I32), List.of(), (inst, a) -> resourceDrop(reps, dtor, a));
  }

  /**
   * Runs an import's body, which writes the ok payload of its {@code result<_, storage-error>} at
   * {@code ret}; a non-backend exception is kept as the trap's cause and rethrown.
   */
  private interface StorageCall {
    void run() throws BackendException;
  }

  /**
   * Writes a storage import's {@code result<T, storage-error>} at {@code ret}: the ok
   * discriminant after {@code call} wrote T at {@code ret + payload}, or the storage-error there.
   */
  private long[] serve(int ret, int payload, StorageCall call) {
    try {
      call.run();
      mem.writeByte(ret, (byte) 0);
    } catch (BackendException e) {
      mem.writeByte(ret, (byte) 1);
      int err = ret + payload;
      mem.writeByte(err, (byte) (e.kind() == BackendException.Kind.INVALID_KEY ? 1 : 0));
      String msg = e.getMessage() == null ? "" : e.getMessage();
      byte[] b = msg.getBytes(StandardCharsets.UTF_8);
      writeList(err + Layout.STORAGE_ERROR_PAYLOAD, lowerBytes(b), b.length);
    } catch (RuntimeException | Error e) {
      if (importFailure == null) {
        importFailure = e instanceof RuntimeException r ? r : new RuntimeException(e);
      }
      throw importFailure;
    }
    return NONE;
  }

  private long[] get(long[] a) {
    String key = string((int) a[0], (int) a[1]);
    int ret = (int) a[2];
    int payload = Layout.RESULT_OPTION_LIST_U8_STORAGE_ERROR_PAYLOAD;
    return serve(
        ret,
        payload,
        () -> {
          byte[] v = storage.get(key);
          if (v == null) {
            mem.writeByte(ret + payload, (byte) 0);
          } else {
            int p = lowerBytes(v);
            mem.writeByte(ret + payload, (byte) 1);
            writeList(ret + payload + Layout.OPTION_LIST_U8_PAYLOAD, p, v.length);
          }
        });
  }

  private long[] putIfAbsent(long[] a) {
    String key = string((int) a[0], (int) a[1]);
    byte[] value = bytes((int) a[2], (int) a[3]);
    int ret = (int) a[4];
    int payload = Layout.RESULT_BOOL_STORAGE_ERROR_PAYLOAD;
    return serve(
        ret,
        payload,
        () -> {
          boolean created = storage.putIfAbsent(key, value);
          mem.writeByte(ret + payload, (byte) (created ? 1 : 0));
        });
  }

  private long[] put(long[] a) {
    String key = string((int) a[0], (int) a[1]);
    byte[] value = bytes((int) a[2], (int) a[3]);
    int ret = (int) a[4];
    return serve(ret, Layout.RESULT_STORAGE_ERROR_PAYLOAD, () -> storage.put(key, value));
  }

  private long[] delete(long[] a) {
    String key = string((int) a[0], (int) a[1]);
    int ret = (int) a[2];
    return serve(ret, Layout.RESULT_STORAGE_ERROR_PAYLOAD, () -> storage.delete(key));
  }

  private long[] list(long[] a) {
    String prefix = string((int) a[0], (int) a[1]);
    int ret = (int) a[2];
    int payload = Layout.RESULT_LIST_STRING_STORAGE_ERROR_PAYLOAD;
    return serve(
        ret,
        payload,
        () -> {
          List<String> keys = storage.list(prefix);
          int base = alloc(Layout.LIST_ALIGN, Math.multiplyExact(Layout.LIST_SIZE, keys.size()));
          for (int i = 0; i < keys.size(); i++) {
            byte[] k = keys.get(i).getBytes(StandardCharsets.UTF_8);
            writeList(base + Layout.LIST_SIZE * i, lowerBytes(k), k.length);
          }
          writeList(ret + payload, base, keys.size());
        });
  }

  private long[] nowMs() {
    try {
      return new long[] {clock.nowMs()};
    } catch (RuntimeException e) {
      if (importFailure == null) {
        importFailure = e;
      }
      throw e;
    }
  }

  private int resourceNew(Map<Integer, Integer> reps, int rep) {
    int handle = nextHandle++;
    reps.put(handle, rep);
    return handle;
  }

  private long[] resourceDrop(Map<Integer, Integer> reps, Layout.Export dtor, long[] a) {
    Integer rep = reps.remove((int) a[0]);
    if (rep != null) {
      export(names.of(dtor)).apply(rep);
    }
    return NONE;
  }

  /** The rep of an owned coordinator handle (methods take the rep: a borrow of an own type). */
  int coordinatorRep(int handle) {
    Integer rep = coordinatorReps.get(handle);
    if (rep == null) {
      throw new IllegalStateException("no coordinator handle " + handle);
    }
    return rep;
  }

  int writerRep(int handle) {
    Integer rep = writerReps.get(handle);
    if (rep == null) {
      throw new IllegalStateException("no writer handle " + handle);
    }
    return rep;
  }

  // ---------------------------------------------------------------------------------------------
  // Calls and memory
  // ---------------------------------------------------------------------------------------------

  ExportFunction export(String name) {
    ExportFunction f = exports.get(name);
    if (f == null) {
      if (!names.exports.contains(name)) {
        throw new IllegalStateException("the module has no export " + name);
      }
      f = instance.export(name);
      exports.put(name, f);
    }
    return f;
  }

  /** Calls an export that returns one i32 (a return area, a handle, an enum). */
  int call(Layout.Export e, long... args) {
    return (int) export(names.of(e)).apply(args)[0];
  }

  /** Frees what a result at {@code ret} points to, where the function has a post-return. */
  void post(Layout.Export e, int ret) {
    if (e.postReturn()) {
      export("cabi_post_" + names.of(e)).apply(ret);
    }
  }

  /**
   * The short name of {@code e} that trap messages name a call by: {@code start}, {@code
   * constructor}, {@code list-tags}.
   */
  static String label(Layout.Export e) {
    String name = e.name();
    if (name.startsWith("[constructor]")) {
      return "constructor";
    }
    return name.substring(name.indexOf('.') + 1);
  }

  int alloc(int align, int size) {
    return (int) realloc.apply(0, 0, align, size)[0];
  }

  int lowerBytes(byte[] b) {
    int p = alloc(1, b.length);
    mem.write(p, b);
    return p;
  }

  int lowerString(String s) {
    return lowerBytes(s.getBytes(StandardCharsets.UTF_8));
  }

  /** list<list<u8>>: an array of (ptr, len) descriptors; returns its address. */
  int lowerByteLists(List<byte[]> lists) {
    int base = alloc(Layout.LIST_ALIGN, Math.multiplyExact(Layout.LIST_SIZE, lists.size()));
    for (int i = 0; i < lists.size(); i++) {
      byte[] b = lists.get(i);
      writeList(base + Layout.LIST_SIZE * i, lowerBytes(b), b.length);
    }
    return base;
  }

  /** A list or string descriptor (ptr, len) at {@code p}. */
  void writeList(int p, int ptr, int len) {
    mem.writeI32(p + Layout.LIST_PTR, ptr);
    mem.writeI32(p + Layout.LIST_LEN, len);
  }

  /** The list or string whose descriptor is at {@code p}: its bytes, copied. */
  byte[] bytesAt(int p) {
    return bytes(i32(p + Layout.LIST_PTR), i32(p + Layout.LIST_LEN));
  }

  /** The string whose descriptor is at {@code p}. */
  String stringAt(int p) {
    return new String(bytesAt(p), StandardCharsets.UTF_8);
  }

  /**
   * The committables of an entry as one {@code packed-event} block: a LEB128 count, then per
   * committable a LEB128 length and its bytes. Built in Java and copied in once, so an event costs
   * one allocation in the guest whatever its number of committables.
   */
  static byte[] packCommittables(List<byte[]> committables) {
    int size = leb128Size(committables.size());
    for (byte[] c : committables) {
      size = Math.addExact(size, Math.addExact(leb128Size(c.length), c.length));
    }
    byte[] out = new byte[size];
    int pos = writeLeb128(out, 0, committables.size());
    for (byte[] c : committables) {
      pos = writeLeb128(out, pos, c.length);
      System.arraycopy(c, 0, out, pos, c.length);
      pos += c.length;
    }
    return out;
  }

  private static int leb128Size(int n) {
    int size = 1;
    for (long v = Integer.toUnsignedLong(n); v >= 0x80; v >>>= 7) {
      size++;
    }
    return size;
  }

  private static int writeLeb128(byte[] out, int pos, int n) {
    long v = Integer.toUnsignedLong(n);
    while (v >= 0x80) {
      out[pos++] = (byte) ((v & 0x7f) | 0x80);
      v >>>= 7;
    }
    out[pos++] = (byte) v;
    return pos;
  }

  void writeI32(int addr, int v) {
    mem.writeI32(addr, v);
  }

  void writeI64(int addr, long v) {
    mem.writeLong(addr, v);
  }

  void writeU8(int addr, int v) {
    mem.writeByte(addr, (byte) v);
  }

  int u8(int addr) {
    return mem.read(addr) & 0xff;
  }

  int i32(int addr) {
    return mem.readInt(addr);
  }

  long i64(int addr) {
    return mem.readLong(addr);
  }

  /** Bytes the guest owns; checked against the memory size before anything is allocated. */
  byte[] bytes(int ptr, int len) {
    long end = Integer.toUnsignedLong(ptr) + Integer.toUnsignedLong(len);
    if (end > (long) mem.pages() * Memory.PAGE_SIZE || len < 0) {
      throw new IndexOutOfBoundsException(
          "guest range " + Integer.toUnsignedString(ptr) + "+" + Integer.toUnsignedString(len));
    }
    return len == 0 ? new byte[0] : mem.readBytes(ptr, len);
  }

  String string(int ptr, int len) {
    return new String(bytes(ptr, len), StandardCharsets.UTF_8);
  }

  /** An option&lt;u64&gt; or option&lt;s64&gt; (the same layout) at {@code p}. */
  OptionalLong optionalI64(int p) {
    return u8(p) == 0 ? OptionalLong.empty() : OptionalLong.of(i64(p + Layout.OPTION_U64_PAYLOAD));
  }

  /** The list&lt;string&gt; whose descriptor is at {@code p}. */
  List<String> strings(int p) {
    int ptr = i32(p + Layout.LIST_PTR);
    int len = i32(p + Layout.LIST_LEN);
    checkCount(ptr, len, Layout.LIST_SIZE);
    List<String> out = new ArrayList<>(len);
    for (int i = 0; i < len; i++) {
      out.add(stringAt(ptr + Layout.LIST_SIZE * i));
    }
    return out;
  }

  /** The list&lt;u64&gt; whose descriptor is at {@code p}. */
  List<Long> u64s(int p) {
    int ptr = i32(p + Layout.LIST_PTR);
    int len = i32(p + Layout.LIST_LEN);
    checkCount(ptr, len, 8);
    List<Long> out = new ArrayList<>(len);
    for (int i = 0; i < len; i++) {
      out.add(i64(ptr + 8 * i));
    }
    return out;
  }

  /** A list of {@code count} elements of {@code stride} bytes must lie inside memory. */
  void checkCount(int ptr, int count, int stride) {
    bytesInRange(ptr, (long) Integer.toUnsignedLong(count) * stride);
  }

  private void bytesInRange(int ptr, long len) {
    if (Integer.toUnsignedLong(ptr) + len > (long) mem.pages() * Memory.PAGE_SIZE) {
      throw new IndexOutOfBoundsException("guest list out of memory bounds");
    }
  }
}
