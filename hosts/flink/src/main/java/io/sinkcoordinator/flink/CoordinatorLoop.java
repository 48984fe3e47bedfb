package io.sinkcoordinator.flink;

import java.time.Duration;
import java.util.Map;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.function.BiConsumer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.slf4j.MDC;

/**
 * The one thread on which a {@link SinkCoordinator} instance runs everything it does with its
 * component: Flink's callbacks only enqueue a task here and return, so a slow storage (a commit,
 * its repeats, a recovery) holds up this thread and never the JobManager's main thread, which
 * Flink's {@code OperatorCoordinator} contract forbids blocking. One thread and a FIFO queue keep
 * the component's calls in exactly the order Flink made the callbacks (SEMANTICS 1), as Flink's
 * own SourceCoordinator ({@code runInEventLoop}) and Paimon's and Hudi's committers do.
 *
 * <p>Unlike those, {@link #close} drains: it runs every task queued before it, then the closing
 * task, so that a final commit or a stop-with-savepoint tag still waiting in the queue is made
 * (SEMANTICS 10, item 6). The wait is bounded; past it the loop is abandoned: the call in flight
 * (which cannot be stopped safely in the middle of a storage write) finishes, the tasks behind it
 * are dropped, and the closing task runs last, on this thread, as always.
 *
 * <p>The thread is created by {@link #start} and ends after the closing task, so an instance that
 * was closed leaves no thread behind, and one that was never started never had one.
 */
final class CoordinatorLoop {
    private static final Logger LOG = LoggerFactory.getLogger(CoordinatorLoop.class);

    /** A callback's work; {@code onDrop} completes what would otherwise wait for it forever. */
    private record Task(String what, Runnable body, Runnable onDrop, boolean last) {}

    private final String name;
    private final BiConsumer<String, Throwable> onError;
    private final BlockingQueue<Task> queue = new LinkedBlockingQueue<>();
    /** Counted down once: {@link #close} gave up waiting. */
    private final CountDownLatch abandoned = new CountDownLatch(1);

    /** Guarded by {@code this} (so that no task is queued behind the closing one), as is closed. */
    private Thread thread;

    private boolean closed;
    /** What the thread runs now (null: waiting), for the log of a close that gave up. */
    private volatile String current;

    /**
     * @param name the thread's name
     * @param onError what a task that threw does (the coordinator fails the job); called on the
     *     loop with the task's description
     */
    CoordinatorLoop(String name, BiConsumer<String, Throwable> onError) {
        this.name = name;
        this.onError = onError;
    }

    /**
     * Starts the thread, a daemon (a JobManager's exit never waits for it) with the caller's
     * logging context (Flink's job id) and the job's class loader (the component's classes).
     */
    synchronized void start(ClassLoader classLoader) {
        if (thread != null || closed) {
            throw new IllegalStateException("loop " + name + " started twice or after close");
        }
        Map<String, String> mdc = MDC.getCopyOfContextMap();
        thread = new Thread(() -> {
            if (mdc != null) {
                MDC.setContextMap(mdc);
            }
            run();
        }, name);
        thread.setDaemon(true);
        if (classLoader != null) {
            thread.setContextClassLoader(classLoader);
        }
        thread.start();
    }

    /** Queues {@code body}; after {@link #close} it is dropped (nothing else can run then). */
    void execute(String what, Runnable body) {
        execute(what, body, null);
    }

    /** The same; {@code onDrop} runs instead of {@code body} if the task is dropped. */
    void execute(String what, Runnable body, Runnable onDrop) {
        Task task = new Task(what, body, onDrop, false);
        synchronized (this) {
            if (!closed) {
                queue.add(task);
                return;
            }
        }
        LOG.info("{}: closed, {} dropped", name, what);
        drop(task);
    }

    /** Completes once every task queued before it ran (or was dropped): the loop caught up. */
    CompletableFuture<Void> idle() {
        CompletableFuture<Void> done = new CompletableFuture<>();
        execute("idle", () -> done.complete(null), () -> done.complete(null));
        return done;
    }

    /** Whether {@link #close} was called (tasks queued from now on are dropped). */
    synchronized boolean closing() {
        return closed;
    }

    /** Whether {@link #close} gave up waiting: the tasks still queued are dropped. */
    boolean abandoned() {
        return abandoned.getCount() == 0;
    }

    /**
     * Waits {@code ms} before a repeat; false (at once) if the loop was abandoned meanwhile, and
     * the caller should not repeat.
     */
    boolean pause(long ms) {
        try {
            return !abandoned.await(ms, TimeUnit.MILLISECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return false;
        }
    }

    /**
     * Runs every task queued so far, then {@code last}, on the loop, and waits for that up to
     * {@code wait}: true if it all ran in time. Past the wait the loop is abandoned (logged): the
     * call in flight finishes, the queued tasks are dropped and {@code last} runs after them, but
     * this method returns. A loop never started runs {@code last} here. Idempotent.
     */
    boolean close(Runnable last, Duration wait) {
        Thread t;
        synchronized (this) {
            if (closed) {
                return true;
            }
            closed = true;
            t = thread;
            if (t != null) {
                queue.add(new Task("close", last, null, true));
            }
        }
        if (t == null) {
            last.run();
            return true;
        }
        if (t == Thread.currentThread()) {
            // a task closing its own loop: the closing task runs when this one returns
            return false;
        }
        long waitMs = Math.max(1, wait.toMillis());
        try {
            t.join(waitMs);
        } catch (InterruptedException e) {
            // Flink interrupts a close that exceeded its own timeout: give up as below
            Thread.currentThread().interrupt();
        }
        if (!t.isAlive()) {
            return true;
        }
        LOG.error(
                "{}: close waited {} ms for the coordinator's queued calls and gave up; still in"
                        + " flight: {}; {} queued calls dropped (the component is closed after"
                        + " the call in flight returns)",
                name, waitMs, current, Math.max(0, queue.size() - 1));
        abandoned.countDown();
        return false;
    }

    private void run() {
        while (true) {
            Task task;
            try {
                task = queue.take();
            } catch (InterruptedException e) {
                // nobody but close's stop task ends this loop: an interrupt changes nothing
                continue;
            }
            if (task.last()) {
                runTask(task);
                return;
            }
            if (abandoned()) {
                drop(task);
                continue;
            }
            runTask(task);
        }
    }

    private void runTask(Task task) {
        current = task.what();
        try {
            task.body().run();
        } catch (Throwable e) {
            try {
                onError.accept(task.what(), e);
            } catch (Throwable again) {
                LOG.error("{}: the error handler of {} failed", name, task.what(), again);
            }
        } finally {
            current = null;
        }
    }

    private void drop(Task task) {
        if (task.onDrop() != null) {
            try {
                task.onDrop().run();
            } catch (Throwable e) {
                LOG.warn("{}: dropping {} failed", name, task.what(), e);
            }
        }
    }
}
