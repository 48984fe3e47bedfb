package io.sinkcoordinator.flink.cluster;

import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.Optional;
import org.apache.flink.shaded.jackson2.com.fasterxml.jackson.databind.JsonNode;
import org.apache.flink.shaded.jackson2.com.fasterxml.jackson.databind.ObjectMapper;

/**
 * The JobManager's REST API (the one {@code flink} and the web UI use), with Flink's own
 * (shaded) Jackson. A request to a JobManager that is down or still starting is an empty
 * answer, not an error: callers poll.
 */
final class FlinkRest {
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final Duration CALL_TIMEOUT = Duration.ofSeconds(10);

    private final HttpClient http =
            HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(2)).build();
    private final URI base;

    FlinkRest(int port) {
        this.base = URI.create("http://127.0.0.1:" + port);
    }

    /** {@code GET path}: its JSON, or empty when the JobManager is unreachable or said not 200. */
    Optional<JsonNode> get(String path) throws InterruptedException {
        return send(HttpRequest.newBuilder(base.resolve(path)).GET());
    }

    /** {@code POST path} with a JSON body: the answer, or empty (as {@link #get}). */
    Optional<JsonNode> post(String path, String body) throws InterruptedException {
        return send(HttpRequest.newBuilder(base.resolve(path))
                .header("Content-Type", "application/json")
                .POST(HttpRequest.BodyPublishers.ofString(body)));
    }

    private Optional<JsonNode> send(HttpRequest.Builder request) throws InterruptedException {
        try {
            HttpResponse<String> response =
                    http.send(request.timeout(CALL_TIMEOUT).build(),
                            HttpResponse.BodyHandlers.ofString());
            int status = response.statusCode();
            return status >= 200 && status < 300
                    ? Optional.of(JSON.readTree(response.body())) : Optional.empty();
        } catch (IOException unreachable) {
            return Optional.empty();
        }
    }

    /**
     * The job's state ({@code RUNNING}, {@code FINISHED}, ...), or empty if the JobManager has no
     * such job (yet).
     */
    Optional<String> jobState(String jobId) throws InterruptedException {
        return get("/jobs/" + jobId).map(j -> j.path("state").asText());
    }

    /** Whether the job and every one of its tasks run (a restarted job's tasks deployed again). */
    boolean allTasksRunning(String jobId) throws InterruptedException {
        Optional<JsonNode> job = get("/jobs/" + jobId);
        if (job.isEmpty() || !"RUNNING".equals(job.get().path("state").asText())) {
            return false;
        }
        for (JsonNode vertex : job.get().path("vertices")) {
            if (!"RUNNING".equals(vertex.path("status").asText())) {
                return false;
            }
        }
        return true;
    }

    /** The job's checkpoint statistics ({@code counts}, {@code latest}, {@code history}). */
    Optional<JsonNode> checkpoints(String jobId) throws InterruptedException {
        return get("/jobs/" + jobId + "/checkpoints");
    }

    /** How many checkpoints of the job completed so far (savepoints included); -1 if unknown. */
    long completedCheckpoints(String jobId) throws InterruptedException {
        return checkpoints(jobId).map(c -> c.path("counts").path("completed").asLong(-1)).orElse(-1L);
    }

    /** The failures the scheduler recorded for the job (each one restarted tasks or the job). */
    int failures(String jobId) throws InterruptedException {
        return get("/jobs/" + jobId + "/exceptions")
                .map(e -> e.path("exceptionHistory").path("entries").size())
                .orElse(-1);
    }

    /** The registered TaskManagers' ids and their slots ({@code /taskmanagers}). */
    JsonNode taskManagers() throws InterruptedException {
        return get("/taskmanagers").map(t -> t.path("taskmanagers")).orElse(JSON.createArrayNode());
    }
}
