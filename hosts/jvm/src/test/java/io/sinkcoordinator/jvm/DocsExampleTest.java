package io.sinkcoordinator.jvm;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.OptionalLong;
import org.junit.jupiter.api.Test;

/** The minimal example of docs/hosts/jvm.md, as written there (keep the two in step). */
class DocsExampleTest {
  @Test
  void theMinimalExample() throws Exception {
    // --- docs/hosts/jvm.md: begin
    MemoryStorage storage = new MemoryStorage(); // or new DirectoryStorage(Path.of("/tmp/table"))
    Coordinator coordinator = new Coordinator(Config.of(1, "job-1"), storage);
    coordinator.start();

    Writer writer = new Writer(0);
    byte[] file = "file-1.parquet".getBytes(StandardCharsets.UTF_8);
    Entry entry = writer.report(1, List.of(file), OptionalLong.empty(), false);
    // A checkpoint's events in one crossing (one event alone: coordinator.event(0, 0, entry)).
    coordinator.events(List.of(new WriterEvent(0, 0, entry)));
    byte[] state = coordinator.checkpoint(1); // the coordinator's state for checkpoint 1
    Outcome outcome = coordinator.checkpointComplete(1); // commits checkpoint 1
    if (outcome.committedUpTo().isPresent()) {
      writer.committed(outcome.committedUpTo().getAsLong()); // the writer drops what is committed
    }

    Snapshot snapshot = new Table(storage).listSnapshots().get(0);
    System.out.println(outcome.committed() + " " + snapshot.identifier());
    // --- docs/hosts/jvm.md: end
    assertEquals(List.of(1L), outcome.committed());
    assertEquals(1, snapshot.identifier());
    assertArrayEquals(file, snapshot.committables().get(0).bytes());
    assertEquals(0, snapshot.committables().get(0).subtask());
    assertEquals(true, state.length > 0);
  }

  /** The warm-up runs its whole synthetic job: restores and fresh tables included. */
  @Test
  void theWarmUpRunsThroughRestores() {
    long cycles = CoordinatorRuntime.bundled().warmUp(java.time.Duration.ofSeconds(3));
    assertEquals(true, cycles > 130, "cycles " + cycles); // at least two restores
    // it stops at the first failure: a count that is not a whole cycle would mean one
  }

  /** A memory cap turns a runaway allocation into a trap, not an OutOfMemoryError. */
  @Test
  void aMemoryCapTraps() throws Exception {
    CoordinatorRuntime capped = CoordinatorRuntime.bundled().withMaxMemoryBytes(4 << 20);
    Coordinator c = new Coordinator(Config.of(1, "u"), new MemoryStorage(), Clock.system(), null, capped);
    c.start();
    Entry big = new Entry(1, List.of(new byte[8 << 20]), OptionalLong.empty(), false);
    assertThrows(ComponentTrapException.class, () -> c.event(0, 0, big));
    assertThrows(ComponentTrapException.class, c::state);
  }
}
