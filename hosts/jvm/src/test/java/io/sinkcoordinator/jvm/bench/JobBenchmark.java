package io.sinkcoordinator.jvm.bench;

import io.sinkcoordinator.jvm.BackendException;
import io.sinkcoordinator.jvm.Config;
import io.sinkcoordinator.jvm.Coordinator;
import io.sinkcoordinator.jvm.CoordinatorException;
import io.sinkcoordinator.jvm.CoordinatorRuntime;
import io.sinkcoordinator.jvm.Entry;
import io.sinkcoordinator.jvm.ManualClock;
import io.sinkcoordinator.jvm.Outcome;
import io.sinkcoordinator.jvm.Storage;
import io.sinkcoordinator.jvm.WriterEvent;
import java.nio.charset.StandardCharsets;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.OptionalLong;
import java.util.concurrent.TimeUnit;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.Warmup;

/**
 * Issue 10's realistic job (BENCHMARKS.md) through the Java binding on Chicory, the workloads of
 * testkit/benches/perf.rs so that the figures divide by criterion's Rust-wasmtime ones: P = 256
 * writers, each reporting 4 committables of 200 B per checkpoint, a checkpoint's events as one
 * {@code events} batch ({@code events-packed} on 0.2.2+), the coordinator's state taken and the
 * checkpoint completed (one snapshot committed) every cycle; storage in memory keeping the latest
 * 4 snapshots. The entries are built outside the measured op (a host has them in hand).
 *
 * <ul>
 *   <li>{@code cycle}: one checkpoint cycle (criterion's {@code job_p256/component});
 *   <li>{@code eventsBatch}: only the batch, its checkpoint and completion in the per-invocation
 *       setup ({@code events_batch_p256/component}); ÷ 256 = per batched event.
 * </ul>
 */
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.MICROSECONDS)
@Fork(value = 1, jvmArgsAppend = {"-Xss8m"})
@Warmup(iterations = 12, time = 3)
@Measurement(iterations = 5, time = 3)
public class JobBenchmark {
  public static final int WRITERS = 256;
  static final int COMMITTABLES = 4;
  static final int BYTES = 200;

  /** In-memory storage keeping only the latest snapshot records, as perf::BenchStorage. */
  static final class BenchStorage implements Storage {
    private final Map<String, byte[]> map = new HashMap<>();
    private final ArrayDeque<String> snapshots = new ArrayDeque<>();

    @Override
    public byte[] get(String key) {
      byte[] v = map.get(key);
      return v == null ? null : v.clone();
    }

    @Override
    public boolean putIfAbsent(String key, byte[] value) {
      if (map.containsKey(key)) {
        return false;
      }
      map.put(key, value.clone());
      if (key.startsWith("snapshot/")) {
        snapshots.add(key);
        if (snapshots.size() > 4) {
          map.remove(snapshots.poll());
        }
      }
      return true;
    }

    @Override
    public void put(String key, byte[] value) {
      map.put(key, value.clone());
    }

    @Override
    public void delete(String key) {
      map.remove(key);
    }

    @Override
    public List<String> list(String prefix) throws BackendException {
      List<String> keys = new ArrayList<>();
      for (String k : map.keySet()) {
        if (k.startsWith(prefix)) {
          keys.add(k);
        }
      }
      keys.sort(null); // ASCII keys: String order is byte order
      return keys;
    }
  }

  /** Writer s's event for checkpoint c: distinct 200-byte committables and a watermark. */
  static WriterEvent event(int s, long c) {
    List<byte[]> committables = new ArrayList<>(COMMITTABLES);
    for (int i = 0; i < COMMITTABLES; i++) {
      byte[] b = new byte[BYTES];
      Arrays.fill(b, (byte) 'x');
      byte[] tag = (s + "/" + c + "/" + i).getBytes(StandardCharsets.US_ASCII);
      System.arraycopy(tag, 0, b, 0, tag.length);
      committables.add(b);
    }
    return new WriterEvent(s, 0, new Entry(c, committables, OptionalLong.of(c * 1000), false));
  }

  static List<WriterEvent> events(long c) {
    List<WriterEvent> out = new ArrayList<>(WRITERS);
    for (int s = 0; s < WRITERS; s++) {
      out.add(event(s, c));
    }
    return out;
  }

  /** One running job per trial: the coordinator, its next checkpoint and that one's events. */
  @State(Scope.Thread)
  public static class Job {
    @Param({"COMPILED", "INTERPRETER"})
    public String mode;

    Coordinator coordinator;
    long checkpoint;
    List<WriterEvent> next;
    boolean pending;

    @Setup(Level.Trial)
    public void start() throws CoordinatorException {
      CoordinatorRuntime rt = CoordinatorRuntime.bundled(CoordinatorRuntime.Mode.valueOf(mode));
      coordinator =
          new Coordinator(Config.of(WRITERS, "bench"), new BenchStorage(), new ManualClock(0), null, rt);
      coordinator.start();
    }

    void complete(long cp) throws CoordinatorException {
      coordinator.checkpoint(cp);
      Outcome o = coordinator.checkpointComplete(cp);
      if (o.committed().size() != 1) {
        throw new AssertionError("checkpoint " + cp + ": " + o.committed().size() + " snapshots");
      }
    }

    @Setup(Level.Invocation)
    public void prepare() throws CoordinatorException {
      if (pending) {
        // eventsBatch left its checkpoint open: complete it outside the measured op
        complete(checkpoint);
        pending = false;
      }
      next = events(checkpoint + 1);
    }
  }

  @Benchmark
  public Outcome cycle(Job job) throws CoordinatorException {
    long cp = ++job.checkpoint;
    Outcome batch = job.coordinator.events(job.next);
    job.complete(cp);
    return batch;
  }

  @Benchmark
  public Outcome eventsBatch(Job job) throws CoordinatorException {
    job.checkpoint++;
    job.pending = true;
    return job.coordinator.events(job.next);
  }
}
