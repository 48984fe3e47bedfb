package io.sinkcoordinator.flink.cluster;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.ServerSocket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.configuration.GlobalConfiguration;
import org.apache.flink.runtime.clusterframework.TaskExecutorProcessSpec;
import org.apache.flink.runtime.clusterframework.TaskExecutorProcessUtils;
import org.apache.flink.runtime.jobmanager.JobManagerProcessSpec;
import org.apache.flink.runtime.jobmanager.JobManagerProcessUtils;
import org.apache.flink.runtime.util.config.memory.ProcessMemoryUtils;

/**
 * A standalone Flink cluster of separate JVM processes on loopback, started from Flink's own
 * entry points on the classpath Maven resolved (the jars flink-dist's {@code lib/} would hold):
 * an application-mode JobManager ({@code StandaloneApplicationClusterEntryPoint}, which runs the
 * job's {@code main}) and TaskManagers ({@code TaskManagerRunner}), all reading one {@code
 * config.yaml}. What Flink's {@code bin/} scripts add is done here: the JVM memory options and
 * the TaskManagers' memory settings computed from the configuration (as {@code BashJavaUtils}
 * does for {@code jobmanager.sh} and {@code taskmanager.sh}), a log file per process.
 *
 * <p>Every process started is killed by {@link #close} and by a shutdown hook, so that none
 * outlives the test, even when it fails or its JVM is stopped.
 */
final class StandaloneCluster implements AutoCloseable {
    static final String JOB_MANAGER =
            "org.apache.flink.container.entrypoint.StandaloneApplicationClusterEntryPoint";
    static final String TASK_MANAGER = "org.apache.flink.runtime.taskexecutor.TaskManagerRunner";
    private static final String CHECKPOINTS = "checkpoints";
    private static final String SAVEPOINTS = "savepoints";

    /**
     * The module-access options of Flink's default {@code env.java.opts.all} (the distribution's
     * config.yaml) that a job of Java 17 may need: Flink's serializers reflect into JDK classes.
     */
    private static final List<String> JAVA_17_OPENS =
            Arrays.stream(new String[] {
                        "java.base/java.lang", "java.base/java.lang.reflect", "java.base/java.net",
                        "java.base/java.io", "java.base/java.nio", "java.base/sun.nio.ch",
                        "java.base/java.text", "java.base/java.time", "java.base/java.util",
                        "java.base/java.util.concurrent", "java.base/java.util.concurrent.atomic",
                        "java.base/java.util.concurrent.locks"
                    })
                    .map(p -> "--add-opens=" + p + "=ALL-UNNAMED")
                    .toList();

    /** One process of the cluster: its JVM and where its output goes. */
    record Node(String name, Process process, Path log, Path out) {
        /** {@code kill -9}: no shutdown hook of Flink runs, nothing is cleaned up. */
        void kill() throws InterruptedException {
            process.destroyForcibly();
            if (!process.waitFor(30, TimeUnit.SECONDS)) {
                throw new IllegalStateException(name + " (pid " + process.pid() + ") survived SIGKILL");
            }
        }

        /** The last {@code lines} lines of the process's log (and of its stdout/stderr). */
        String tail(int lines) {
            StringBuilder sb = new StringBuilder();
            for (Path file : List.of(log, out)) {
                sb.append("---- ").append(file).append(" (last ").append(lines).append(" lines)\n");
                try {
                    List<String> all = Files.exists(file)
                            ? Files.readAllLines(file, StandardCharsets.UTF_8) : List.of();
                    all.subList(Math.max(0, all.size() - lines), all.size())
                            .forEach(l -> sb.append(l).append('\n'));
                } catch (IOException | UncheckedIOException e) {
                    sb.append("(unreadable: ").append(e).append(")\n");
                }
            }
            return sb.toString();
        }
    }

    final Path checkpoints;
    final Path savepoints;
    final int restPort;
    private final Path conf;
    private final Path logs;
    private final String classpath;
    private final Path log4j;
    /** Added to every process's environment (the object store's settings). */
    private final Map<String, String> env;
    private final List<String> jvmOptions;
    private final List<Node> nodes = new ArrayList<>();
    private final Thread killer = new Thread(this::killAll, "standalone-cluster-killer");

    /**
     * A cluster whose files (configuration, logs, checkpoints, savepoints, temporary files) are
     * under {@code dir}, its processes on {@code classpath}, with the JVM options {@code
     * jvmOptions} (besides the memory options), logging by {@code log4j}.
     */
    StandaloneCluster(
            Path dir, String classpath, Path log4j, List<String> jvmOptions, Map<String, String> env)
            throws IOException {
        this.conf = Files.createDirectories(dir.resolve("conf"));
        this.logs = Files.createDirectories(dir.resolve("logs"));
        this.checkpoints = dir.resolve(CHECKPOINTS);
        this.savepoints = dir.resolve(SAVEPOINTS);
        this.classpath = classpath;
        this.log4j = log4j;
        this.jvmOptions = List.copyOf(jvmOptions);
        this.env = Map.copyOf(env);
        this.restPort = freePort();
        Map<String, String> config = configuration(freePort(), restPort, dir);
        StringBuilder yaml = new StringBuilder("# written by StandaloneCluster\n");
        config.forEach((k, v) -> yaml.append(k).append(": ").append(v).append('\n'));
        Files.writeString(conf.resolve("config.yaml"), yaml);
        Runtime.getRuntime().addShutdownHook(killer);
    }

    /**
     * The cluster's config.yaml: every address on loopback, checkpoints every second into a local
     * directory, retained on cancellation (and after a JobManager dies: they are never deleted
     * by a process that is gone), restarts allowed, lost processes noticed within seconds.
     */
    static Map<String, String> configuration(int rpcPort, int restPort, Path dir) {
        Map<String, String> c = new LinkedHashMap<>();
        c.put("jobmanager.rpc.address", "127.0.0.1");
        c.put("jobmanager.bind-host", "127.0.0.1");
        c.put("jobmanager.rpc.port", Integer.toString(rpcPort));
        c.put("rest.address", "127.0.0.1");
        c.put("rest.bind-address", "127.0.0.1");
        c.put("rest.port", Integer.toString(restPort));
        c.put("taskmanager.host", "127.0.0.1");
        c.put("taskmanager.bind-host", "127.0.0.1");
        c.put("io.tmp.dirs", dir.resolve("tmp").toString());
        c.put("web.tmpdir", dir.resolve("tmp").toString()); // a killed JobManager leaves it behind

        c.put("jobmanager.memory.process.size", "768m");
        c.put("taskmanager.memory.process.size", "1g");
        // the heap state backend needs no managed memory: leave the TaskManager's heap the rest
        c.put("taskmanager.memory.managed.size", "64m");
        c.put("taskmanager.numberOfTaskSlots", "2");
        // the job's slots spread over both TaskManagers: the ResourceManager waits a moment for
        // both to register before it allocates (the test starts them before the JobManager)
        c.put("taskmanager.load-balance.mode", "SLOTS");
        c.put("slotmanager.requirement-check.delay", "1 s");

        c.put("execution.checkpointing.interval", "1 s");
        c.put("execution.checkpointing.storage", "filesystem");
        c.put("execution.checkpointing.dir", dir.resolve(CHECKPOINTS).toUri().toString());
        c.put("execution.checkpointing.savepoint-dir", dir.resolve(SAVEPOINTS).toUri().toString());
        c.put("execution.checkpointing.externalized-checkpoint-retention", "RETAIN_ON_CANCELLATION");
        c.put("execution.checkpointing.num-retained", "3");
        c.put("restart-strategy.type", "fixed-delay");
        c.put("restart-strategy.fixed-delay.attempts", "50");
        c.put("restart-strategy.fixed-delay.delay", "1 s");

        // a TaskManager killed with -9 is noticed by the JobManager's failed heartbeat RPCs
        // within seconds; a killed JobManager by the TaskManagers only when its heartbeats stop
        c.put("heartbeat.interval", "1 s");
        c.put("heartbeat.timeout", "10 s");
        // TaskManagers re-register with a restarted JobManager quickly and free the slots of the
        // job of a JobManager that is gone
        c.put("cluster.registration.error-delay", "1 s");
        c.put("cluster.registration.max-timeout", "5 s");
        c.put("taskmanager.slot.timeout", "5 s");
        // keep the finished job's status on the REST API until the test read it
        c.put("execution.shutdown-on-application-finish", "false");
        return c;
    }

    /** The configuration as the processes read it. */
    private Configuration flinkConfiguration() {
        return GlobalConfiguration.loadConfiguration(conf.toString());
    }

    /**
     * Starts an application-mode JobManager named {@code name} that runs {@code jobClass}'s main
     * with {@code args} as job {@code jobId}, restored from {@code fromSavepoint} (a savepoint or
     * a retained checkpoint's {@code chk-N} directory) unless null.
     */
    Node startJobManager(
            String name, String jobClass, String jobId, Path fromSavepoint, List<String> args)
            throws IOException {
        Configuration config = flinkConfiguration();
        JobManagerProcessSpec spec = JobManagerProcessUtils.processSpecFromConfig(config);
        List<String> jvm = split(JobManagerProcessUtils.generateJvmParametersStr(spec, config));
        List<String> main = new ArrayList<>(List.of(
                "--configDir", conf.toString(), "--job-classname", jobClass, "--job-id", jobId));
        if (fromSavepoint != null) {
            main.addAll(List.of("--fromSavepoint", fromSavepoint.toUri().toString()));
        }
        main.addAll(split(JobManagerProcessUtils.generateDynamicConfigsStr(spec)));
        main.addAll(args);
        return start(name, jvm, JOB_MANAGER, main);
    }

    /** Starts a TaskManager whose resource id (its name on the REST API) is {@code name}. */
    Node startTaskManager(String name) throws IOException {
        TaskExecutorProcessSpec spec =
                TaskExecutorProcessUtils.processSpecFromConfig(flinkConfiguration());
        List<String> jvm = split(ProcessMemoryUtils.generateJvmParametersStr(spec));
        List<String> main = new ArrayList<>(List.of(
                "--configDir", conf.toString(), "-D", "taskmanager.resource-id=" + name));
        // TaskManagerRunner requires its memory components set: taskmanager.sh passes them so
        main.addAll(split(TaskExecutorProcessUtils.generateDynamicConfigsStr(spec)));
        return start(name, jvm, TASK_MANAGER, main);
    }

    private Node start(String name, List<String> memory, String mainClass, List<String> args)
            throws IOException {
        Path log = logs.resolve(name + ".log");
        Path out = logs.resolve(name + ".out");
        List<String> command = new ArrayList<>();
        command.add(Path.of(System.getProperty("java.home"), "bin", "java").toString());
        command.addAll(memory);
        command.addAll(JAVA_17_OPENS);
        command.addAll(jvmOptions);
        command.addAll(List.of(
                "-XX:-UsePerfData",
                "-Dlog.file=" + log,
                "-Dlog4j.configurationFile=" + log4j.toUri(),
                "-cp", classpath,
                mainClass));
        command.addAll(args);
        Files.writeString(logs.resolve(name + ".command"), String.join(" ", command) + "\n");
        ProcessBuilder builder = new ProcessBuilder(command);
        builder.environment().putAll(env);
        Process process = builder
                .redirectErrorStream(true)
                .redirectOutput(out.toFile())
                .start();
        Node node = new Node(name, process, log, out);
        synchronized (nodes) {
            nodes.add(node);
        }
        return node;
    }

    /** Every process's log tail: what a failed test prints. */
    String tails(int lines) {
        StringBuilder sb = new StringBuilder();
        synchronized (nodes) {
            for (Node node : nodes) {
                sb.append("==== ").append(node.name()).append(node.process().isAlive()
                        ? " (running)" : " (exit " + node.process().exitValue() + ")").append('\n');
                sb.append(node.tail(lines));
            }
        }
        return sb.toString();
    }

    private void killAll() {
        synchronized (nodes) {
            for (Node node : nodes) {
                node.process().destroyForcibly();
            }
            for (Node node : nodes) {
                try {
                    node.process().waitFor(30, TimeUnit.SECONDS);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    return;
                }
            }
        }
    }

    @Override
    public void close() {
        killAll();
        try {
            Runtime.getRuntime().removeShutdownHook(killer);
        } catch (IllegalStateException shuttingDown) {
            // the hook is running already (the JVM is exiting): it kills them too
        }
    }

    private static List<String> split(String options) {
        return Arrays.stream(options.trim().split("\\s+")).filter(s -> !s.isEmpty()).toList();
    }

    private static int freePort() throws IOException {
        try (ServerSocket socket = new ServerSocket(0)) {
            return socket.getLocalPort();
        }
    }
}
