package io.sinkcoordinator.flink;

import static io.sinkcoordinator.flink.TestSupport.check;

import io.sinkcoordinator.flink.component.ComponentCoordinator;
import io.sinkcoordinator.flink.component.ComponentException;
import io.sinkcoordinator.flink.component.ComponentTable;
import io.sinkcoordinator.flink.component.ComponentWriter;
import io.sinkcoordinator.flink.component.CoordinatorConfig;
import io.sinkcoordinator.flink.component.Entry;
import io.sinkcoordinator.flink.component.Outcome;
import io.sinkcoordinator.flink.component.Snapshot;
import java.nio.charset.StandardCharsets;
import java.util.List;

/** The JNI wrappers without Flink: one writer, one coordinator, the table. */
final class ComponentTest {
    private ComponentTest() {}

    private static byte[] utf8(String s) {
        return s.getBytes(StandardCharsets.UTF_8);
    }

    /** An entry without watermark, not a savepoint's. */
    private static Entry entry(long checkpoint, byte[]... committables) {
        return new Entry(checkpoint, committables, false, 0, false);
    }

    /** A fresh coordinator of {@code user} on the table log {@code log}. */
    private static ComponentCoordinator fresh(String log, int parallelism, String user) {
        return new ComponentCoordinator(log, parallelism, CoordinatorConfig.of(user), -1, null, null);
    }

    /** A coordinator restored from {@code state} of {@code checkpoint}; subtask 0 had finished. */
    private static ComponentCoordinator restoredFrom(
            String log, String user, long checkpoint, byte[] state) {
        return new ComponentCoordinator(
                log, 2, CoordinatorConfig.of(user), checkpoint, state, new int[] {0});
    }

    /** A finished writer's END entry survives a restore through the coordinator's state. */
    static void finishedRestore() throws Exception {
        TestSupport.withTempDir("component-finished", dir -> {
            String log = dir.resolve("log").toString();
            byte[] file = utf8("data/end0");
            byte[] state;
            try (ComponentCoordinator first = fresh(log, 2, "fin")) {
                first.start();
                first.event(0, 0, entry(Entry.END, file));
                first.event(0, 0, entry(1));
                first.event(1, 0, entry(1));
                state = first.checkpoint(1);
                first.checkpointComplete(1);
                first.checkpoint(2);
            }
            try (ComponentCoordinator second = restoredFrom(log, "fin", 1, state)) {
                check("restoring".equals(second.start().state()), "restoring");
                Outcome o = second.restored(1, 1, 1, new Entry[0]);
                check("running".equals(o.state()), "running " + o);
                second.event(1, 1, entry(Entry.END));
                Outcome fin = second.checkpointComplete(2);
                check(fin.committedUpTo() == Entry.END, "final " + fin);
            }
            try (ComponentTable table = new ComponentTable(log)) {
                List<Snapshot> snapshots = table.snapshots();
                Snapshot end = snapshots.get(snapshots.size() - 1);
                check(end.identifier() == Entry.END && end.committables().length == 1,
                        "END snapshot holds the finished writer's file: " + snapshots);
            }
        });
    }

    /**
     * SEMANTICS 6.2: a finished subtask's restore events and resets are
     * ignored for the instance's lifetime, in {@code restoring} and in
     * {@code running}. Subtask 0 reported checkpoint 1 (file A) and ended
     * (file B) while subtask 1 lagged, so at checkpoint 2 the coordinator's
     * state is the only place A and B live; subtask 0 then finished. Flink
     * runs it again with empty state: its empty restore event would drop A
     * (applied, it replaces the slot's ordinary entries), its reset while
     * restoring would make the recovery wait for it, and its reset in
     * running would drop B.
     */
    static void finishedReplays() throws Exception {
        TestSupport.withTempDir("component-finished-replays", dir -> {
            String log = dir.resolve("log").toString();
            byte[] a = utf8("data/ordinary0");
            byte[] b = utf8("data/end0");
            byte[] state;
            try (ComponentCoordinator first = fresh(log, 2, "fr")) {
                first.start();
                first.event(0, 0, entry(1, a));
                first.event(0, 0, entry(Entry.END, b));
                first.event(0, 0, entry(2));
                state = first.checkpoint(2);
                Outcome o = first.checkpointComplete(2);
                check(o.committed().length == 0, "subtask 1 lags: nothing commits " + o);
            }
            Entry[] none = new Entry[0];
            try (ComponentCoordinator second = restoredFrom(log, "fr", 2, state)) {
                check("restoring".equals(second.start().state()), "restoring");
                // The finished subtask's replay while restoring: ignored.
                check("restoring".equals(second.restored(0, 1, 2, none).state()), "replay");
                check("restoring".equals(second.subtaskReset(0, 2).state()), "reset");
                Outcome o = second.restored(1, 1, 2, none);
                check("running".equals(o.state()), "the recovery waits for no finished subtask "
                        + o);
                check(o.committed().length == 1, "the recovery commits A " + o);
                // And once running: ignored again.
                second.restored(0, 2, 2, none);
                second.subtaskReset(0, 2);
                second.restored(0, 3, 2, none);
                second.event(1, 1, entry(Entry.END));
                second.event(1, 1, entry(3));
                second.checkpoint(3);
                Outcome fin = second.checkpointComplete(3);
                check(fin.committedUpTo() == Entry.END, "final " + fin);
            }
            try (ComponentTable table = new ComponentTable(log)) {
                List<Snapshot> snapshots = table.snapshots();
                check(snapshots.size() == 2, "two snapshots " + snapshots);
                check(snapshots.get(0).identifier() == 1 && snapshots.get(0).committables().length == 1
                                && new String(snapshots.get(0).committables()[0],
                                        StandardCharsets.UTF_8).equals("data/ordinary0"),
                        "checkpoint 1 holds A: " + snapshots);
                Snapshot end = snapshots.get(1);
                check(end.identifier() == Entry.END && end.committables().length == 1
                                && new String(end.committables()[0], StandardCharsets.UTF_8)
                                        .equals("data/end0"),
                        "the END snapshot holds B: " + snapshots);
            }
        });
    }

    static void roundTrip() throws Exception {
        TestSupport.withTempDir("component", dir -> {
            String log = dir.resolve("log").toString();
            byte[] file = utf8("data/a");
            try (ComponentCoordinator coordinator = fresh(log, 1, "unit");
                    ComponentWriter writer = new ComponentWriter(0)) {
                check(coordinator.committedUpTo() == -1, "committed-up-to starts as none");
                check("running".equals(coordinator.start().state()), "start runs");
                Entry e1 = writer.report(1, new byte[][] {file}, 7L, false);
                check(e1.checkpoint() == 1 && e1.hasWatermark() && e1.watermark() == 7, "entry " + e1);
                coordinator.event(0, 0, e1);
                byte[] state = coordinator.checkpoint(1);
                check(state.length > 0, "state bytes");
                Outcome o = coordinator.checkpointComplete(1);
                check(o.committed().length == 1 && o.committed()[0] == 1, "committed " + o);
                check(o.committedUpTo() == 1, "committed-up-to " + o);
                writer.committed(o.committedUpTo());
                Entry end = writer.endInput(new byte[0][], null);
                check(end.isEnd(), "END entry " + end);
                coordinator.event(0, 0, end);
                Outcome fin = coordinator.checkpointComplete(2);
                check(fin.committedUpTo() == Entry.END, "final commit " + fin);
                // A restored writer replays its buffer: here the END entry only.
                ComponentWriter second = new ComponentWriter(0);
                Entry[] replay = second.restore(writer.state(), 2);
                check(replay.length == 1 && replay[0].isEnd(), "replay " + replay.length);
                second.close();
                try {
                    coordinator.event(5, 0, entry(3));
                    check(false, "a bad event is fatal");
                } catch (ComponentException expected) {
                    check(expected.isFatal(), "kind " + expected.kind());
                    check(expected.getMessage().contains("subtask"), expected.getMessage());
                }
                check("failed".equals(coordinator.state()), "failed after a fatal error");
            }
            try (ComponentTable table = new ComponentTable(log)) {
                List<Snapshot> snapshots = table.snapshots();
                check(snapshots.size() == 2, "snapshots " + snapshots);
                check(snapshots.get(1).identifier() == Entry.END, "END " + snapshots);
                check(new String(snapshots.get(0).committables()[0], StandardCharsets.UTF_8)
                        .equals("data/a"), "committable");
            }
            try {
                new ComponentTable(dir.resolve("missing").toString());
                check(false, "a missing table is refused");
            } catch (IllegalArgumentException expected) {
                check(expected.getMessage().contains("missing"), expected.getMessage());
            }
        });
    }
}
