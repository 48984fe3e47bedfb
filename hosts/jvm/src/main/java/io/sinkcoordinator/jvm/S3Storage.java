package io.sinkcoordinator.jvm;

import java.io.UncheckedIOException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.function.Function;
import software.amazon.awssdk.auth.credentials.AwsBasicCredentials;
import software.amazon.awssdk.auth.credentials.AwsCredentialsProvider;
import software.amazon.awssdk.auth.credentials.AwsSessionCredentials;
import software.amazon.awssdk.auth.credentials.DefaultCredentialsProvider;
import software.amazon.awssdk.auth.credentials.StaticCredentialsProvider;
import software.amazon.awssdk.awscore.retry.AwsRetryStrategy;
import software.amazon.awssdk.core.checksums.RequestChecksumCalculation;
import software.amazon.awssdk.core.checksums.ResponseChecksumValidation;
import software.amazon.awssdk.core.client.config.ClientOverrideConfiguration;
import software.amazon.awssdk.core.exception.SdkException;
import software.amazon.awssdk.core.sync.RequestBody;
import software.amazon.awssdk.http.SdkHttpClient;
import software.amazon.awssdk.http.urlconnection.UrlConnectionHttpClient;
import software.amazon.awssdk.regions.Region;
import software.amazon.awssdk.retries.api.RetryStrategy;
import software.amazon.awssdk.services.s3.S3Client;
import software.amazon.awssdk.services.s3.model.NoSuchKeyException;
import software.amazon.awssdk.services.s3.model.S3Exception;
import software.amazon.awssdk.services.s3.model.S3Object;

/**
 * A table on Amazon S3 (or an S3 API: MinIO, moto) through the AWS SDK for Java v2: key {@code
 * a/b} of the table {@code s3://bucket/prefix} is the object {@code prefix/a/b}, the layout of the
 * Rust host's {@code ObjectStorage} and the Python host's {@code ObjectStoreStorage}, so {@code
 * sinkcoord inspect s3://bucket/prefix} reads a table written here and the other way round. Its
 * rules are theirs:
 *
 * <ul>
 *   <li>keys follow the rules of every backend ({@link DirectoryStorage}'s check), and an ASCII
 *       control character, which object_store refuses in an object path, is {@code invalid-key}
 *       too; values are not bounded (as on the Rust host's object stores);
 *   <li>{@code putIfAbsent} is one {@code PutObject} with {@code If-None-Match: *}, sent by a client
 *       that never retries it: 412 Precondition Failed (or 304) means the key existed ({@code
 *       false}); anything else that fails, a timeout or a 409 ConditionalRequestConflict included,
 *       is an {@code io} error, which the storage import defines as ambiguous (the write may or may
 *       not have landed; the core reads the key back);
 *   <li>{@code put} is a plain overwrite, {@code delete} of a missing key succeeds, {@code get} of
 *       one is null, {@code list} returns the keys with the prefix (text, not whole segments) in
 *       byte order of their UTF-8, relative to the table's prefix; objects whose names the key rules
 *       refuse (a directory marker {@code a/}) are not keys and are not listed;
 *   <li>the other calls are retried a few times, each call within {@link #API_CALL_TIMEOUT} (a
 *       coordinator call waits for its storage calls, and the engine retries a failed call anyway);
 *   <li>every failure is a {@link BackendException} naming the operation, the key and the table.
 * </ul>
 *
 * <p>Thread-safe (several coordinators of one table may share one). The SDK is an optional
 * dependency of this jar: a user of S3Storage declares {@code software.amazon.awssdk:s3} and
 * {@code software.amazon.awssdk:url-connection-client} (docs/hosts/jvm.md).
 */
public final class S3Storage implements Storage, AutoCloseable {
  /** The bound on one call, its retries included (the Rust host's retry timeout). */
  static final Duration API_CALL_TIMEOUT = Duration.ofSeconds(20);

  /** One try and three retries for the calls that may be repeated (the Rust host's). */
  private static final int MAX_ATTEMPTS = 4;

  private static final String AMBIGUOUS = " (the change may or may not have landed)";

  private final S3Settings settings;
  private final SdkHttpClient http;
  private final AwsCredentialsProvider credentials;
  /** Every call but the conditional create: a few retries. */
  private final S3Client client;
  /** The conditional create: never retried once sent (a retry could report its own success as "existed"). */
  private final S3Client createOnce;
  /** The objects' names start with this: the table's prefix and {@code /}, or empty. */
  private final String base;

  private S3Storage(S3Settings settings) {
    this.settings = settings;
    this.base = settings.prefix().isEmpty() ? "" : settings.prefix() + "/";
    this.http =
        UrlConnectionHttpClient.builder()
            .connectionTimeout(Duration.ofSeconds(5))
            .socketTimeout(API_CALL_TIMEOUT)
            .build();
    this.credentials =
        !settings.hasStaticCredentials()
            ? DefaultCredentialsProvider.builder().build()
            : StaticCredentialsProvider.create(
                settings.sessionToken() == null
                    ? AwsBasicCredentials.create(settings.accessKeyId(), settings.secretAccessKey())
                    : AwsSessionCredentials.create(
                        settings.accessKeyId(), settings.secretAccessKey(), settings.sessionToken()));
    this.client = client(AwsRetryStrategy.standardRetryStrategy().toBuilder().maxAttempts(MAX_ATTEMPTS).build());
    this.createOnce = client(AwsRetryStrategy.doNotRetry());
  }

  private S3Client client(RetryStrategy retry) {
    var b =
        S3Client.builder()
            .httpClient(http)
            .credentialsProvider(credentials)
            .region(Region.of(settings.region()))
            // object_store's default is path style (endpoint/bucket/key).
            .forcePathStyle(!settings.virtualHostedStyle())
            // SDK 2.30+ would add CRC32 trailers with aws-chunked bodies to every upload,
            // which not every S3 API takes; object_store sends no checksum either.
            .requestChecksumCalculation(RequestChecksumCalculation.WHEN_REQUIRED)
            .responseChecksumValidation(ResponseChecksumValidation.WHEN_REQUIRED)
            .overrideConfiguration(
                ClientOverrideConfiguration.builder()
                    .apiCallTimeout(API_CALL_TIMEOUT)
                    .retryStrategy(retry)
                    .build());
    if (settings.endpoint() != null) {
      b.endpointOverride(settings.endpoint());
    }
    return b.build();
  }

  /**
   * The table at {@code url}: {@code s3://bucket/prefix} (also {@code s3a://}; the URL's path,
   * percent-decoded, is the table's prefix; none: the bucket's root). Its settings come from the
   * environment first ({@code AWS_ENDPOINT_URL} or {@code AWS_ENDPOINT}, {@code AWS_REGION} or
   * {@code AWS_DEFAULT_REGION}, {@code AWS_ALLOW_HTTP}, {@code AWS_ACCESS_KEY_ID}, {@code
   * AWS_SECRET_ACCESS_KEY}, {@code AWS_SESSION_TOKEN}, ...), then from {@code options}, keyed by
   * object_store's names as the Rust host passes them: {@code aws_endpoint} (also {@code
   * aws_endpoint_url}, {@code endpoint}, {@code endpoint_url}), {@code aws_region} ({@code
   * region}; default {@code us-east-1}), {@code aws_access_key_id}, {@code
   * aws_secret_access_key}, {@code aws_session_token}, {@code aws_allow_http} and {@code
   * aws_virtual_hosted_style_request} ({@code "true"}/{@code "false"}; default path style).
   * Without an access key the SDK's default credentials provider chain finds the credentials. No
   * request is made here.
   *
   * @throws IllegalArgumentException a bad URL, an unknown option or a bad value (named in the
   *     message), or an {@code http://} endpoint without {@code aws_allow_http}
   */
  public static S3Storage open(String url, Map<String, String> options) {
    return open(url, options, System.getenv());
  }

  /** {@link #open(String, Map)} with {@code env} for the environment (tests). */
  static S3Storage open(String url, Map<String, String> options, Map<String, String> env) {
    return new S3Storage(S3Settings.parse(url, options == null ? Map.of() : options, env));
  }

  /** The table's URL, as given to {@link #open}. */
  public String url() {
    return settings.url();
  }

  @Override
  public void close() {
    // The clients do not close what they were handed.
    client.close();
    createOnce.close();
    http.close();
    if (credentials instanceof AutoCloseable c) {
      try {
        c.close();
      } catch (Exception e) {
        // nothing held that matters once the clients are closed
      }
    }
  }

  @Override
  public String toString() {
    return "S3Storage(" + settings.url() + ")";
  }

  /**
   * The table's prefix inside the bucket from a URL's path: one leading and one trailing {@code /}
   * dropped (as object_store's {@code Path::parse}), the rest a key by the key rules (empty: the
   * bucket's root).
   */
  static String tablePrefix(String path) throws BackendException {
    String p = path == null ? "" : path;
    p = p.startsWith("/") ? p.substring(1) : p;
    p = p.endsWith("/") ? p.substring(0, p.length() - 1) : p;
    if (!p.isEmpty()) {
      DirectoryStorage.check("table prefix", p, false);
      checkObjectPath("table prefix", p);
    }
    return p;
  }

  /** object_store refuses ASCII control characters in an object path (the Rust host's invalid-key). */
  private static void checkObjectPath(String what, String s) throws BackendException {
    for (int i = 0; i < s.length(); i++) {
      char c = s.charAt(i);
      if (c < 0x20 || c == 0x7f) {
        throw BackendException.invalidKey(
            what + " \"" + s + "\" is not a valid object path: it contains the control character U+"
                + String.format("%04X", (int) c));
      }
    }
  }

  /** The object of {@code key}, after the key rules. */
  private String object(String key) throws BackendException {
    DirectoryStorage.check("key", key, false);
    checkObjectPath("key", key);
    return base + key;
  }

  private BackendException error(String op, String key, RuntimeException e) {
    String ambiguous = op.equals("create") || op.equals("write") || op.equals("delete") ? AMBIGUOUS : "";
    return new BackendException(
        BackendException.Kind.IO,
        "cannot " + op + " \"" + key + "\" on " + settings.url() + ambiguous + ": " + e.getMessage(),
        e);
  }

  /**
   * Runs one request on the object of {@code key} (after the key rules); whatever the SDK throws
   * out of it is {@code op}'s {@code io} error, naming the key and the table.
   */
  private <T> T request(String op, String key, Function<String, T> call) throws BackendException {
    String object = object(key);
    try {
      return call.apply(object);
    } catch (SdkException | UncheckedIOException e) {
      throw error(op, key, e);
    }
  }

  @Override
  public byte[] get(String key) throws BackendException {
    return request("read", key, object -> {
      try {
        return client.getObjectAsBytes(r -> r.bucket(settings.bucket()).key(object)).asByteArray();
      } catch (NoSuchKeyException e) {
        return null;
      }
    });
  }

  @Override
  public boolean putIfAbsent(String key, byte[] value) throws BackendException {
    return request("create", key, object -> {
      try {
        createOnce.putObject(
            r -> r.bucket(settings.bucket()).key(object).ifNoneMatch("*"), RequestBody.fromBytes(value));
        return true;
      } catch (S3Exception e) {
        // 412: the key existed, its value untouched (304 from some stores, as object_store reads
        // it). Not 409 ConditionalRequestConflict: a concurrent create is in flight, and may fail.
        if (e.statusCode() == 412 || e.statusCode() == 304) {
          return false;
        }
        throw e;
      }
    });
  }

  @Override
  public void put(String key, byte[] value) throws BackendException {
    request("write", key, object ->
        client.putObject(r -> r.bucket(settings.bucket()).key(object), RequestBody.fromBytes(value)));
  }

  @Override
  public void delete(String key) throws BackendException {
    request("delete", key, object -> {
      try {
        // S3 answers 204 for a missing key too.
        return client.deleteObject(r -> r.bucket(settings.bucket()).key(object));
      } catch (NoSuchKeyException e) {
        return null; // deleting a missing key succeeds
      }
    });
  }

  @Override
  public List<String> list(String prefix) throws BackendException {
    String[] segments = DirectoryStorage.check("prefix", prefix, true);
    // The directories of the prefix are an object path; its last, partial segment is only text.
    checkObjectPath("prefix", prefix.substring(0, prefix.length() - segments[segments.length - 1].length()));
    List<String> keys = new ArrayList<>();
    try {
      // S3 lists by text prefix, which is list's contract; the SDK pages and decodes the names.
      for (S3Object o :
          client.listObjectsV2Paginator(r -> r.bucket(settings.bucket()).prefix(base + prefix)).contents()) {
        String key = keyOf(o.key());
        if (key != null) {
          keys.add(key);
        }
      }
    } catch (SdkException | UncheckedIOException e) {
      throw error("list", prefix, e);
    }
    // Byte order (a store's listing order is not relied on).
    keys.sort(MemoryStorage::byteOrder);
    return keys;
  }

  /** The key of a listed object, or null for a name that is not a key of the table. */
  private String keyOf(String name) {
    if (!name.startsWith(base)) {
      return null;
    }
    String key = name.substring(base.length());
    try {
      DirectoryStorage.check("key", key, false);
      checkObjectPath("key", key);
      return key;
    } catch (BackendException e) {
      return null;
    }
  }
}
