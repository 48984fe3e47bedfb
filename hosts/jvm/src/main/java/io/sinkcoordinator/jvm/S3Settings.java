package io.sinkcoordinator.jvm;

import java.net.URI;
import java.net.URISyntaxException;
import java.util.Locale;
import java.util.Map;
import java.util.TreeMap;

/**
 * What {@link S3Storage#open} reads from a table URL, the environment and the options: the names
 * and rules of the Rust host's store ({@code object_store}'s {@code AmazonS3Builder}: {@code
 * from_env}, then {@code with_url}, then one {@code with_config} per option), for the settings
 * this binding supports. Free of SDK types, so that a bad URL or option is refused before a client
 * is built.
 */
record S3Settings(
    String url,
    String bucket,
    String prefix,
    URI endpoint,
    String region,
    String accessKeyId,
    String secretAccessKey,
    String sessionToken,
    boolean virtualHostedStyle) {

  /** The region when none is given (object_store's default). */
  static final String DEFAULT_REGION = "us-east-1";

  /** The settings an option or an {@code AWS_*} variable may set. */
  private enum Setting {
    ENDPOINT,
    S3_ENDPOINT,
    REGION,
    DEFAULT_REGION,
    ACCESS_KEY_ID,
    SECRET_ACCESS_KEY,
    SESSION_TOKEN,
    ALLOW_HTTP,
    VIRTUAL_HOSTED_STYLE
  }

  /** object_store's names (AmazonS3ConfigKey and its aliases) of the supported settings. */
  private static final Map<String, Setting> KEYS =
      Map.ofEntries(
          Map.entry("aws_endpoint", Setting.ENDPOINT),
          Map.entry("aws_endpoint_url", Setting.ENDPOINT),
          Map.entry("endpoint", Setting.ENDPOINT),
          Map.entry("endpoint_url", Setting.ENDPOINT),
          Map.entry("aws_endpoint_url_s3", Setting.S3_ENDPOINT),
          Map.entry("aws_region", Setting.REGION),
          Map.entry("region", Setting.REGION),
          Map.entry("aws_default_region", Setting.DEFAULT_REGION),
          Map.entry("default_region", Setting.DEFAULT_REGION),
          Map.entry("aws_access_key_id", Setting.ACCESS_KEY_ID),
          Map.entry("access_key_id", Setting.ACCESS_KEY_ID),
          Map.entry("aws_secret_access_key", Setting.SECRET_ACCESS_KEY),
          Map.entry("secret_access_key", Setting.SECRET_ACCESS_KEY),
          Map.entry("aws_session_token", Setting.SESSION_TOKEN),
          Map.entry("aws_token", Setting.SESSION_TOKEN),
          Map.entry("session_token", Setting.SESSION_TOKEN),
          Map.entry("token", Setting.SESSION_TOKEN),
          Map.entry("aws_allow_http", Setting.ALLOW_HTTP),
          Map.entry("allow_http", Setting.ALLOW_HTTP),
          Map.entry("aws_virtual_hosted_style_request", Setting.VIRTUAL_HOSTED_STYLE),
          Map.entry("virtual_hosted_style_request", Setting.VIRTUAL_HOSTED_STYLE));

  /**
   * The settings of the table at {@code url} ({@code s3://bucket/prefix} or {@code s3a://...}):
   * the {@code AWS_*} variables of {@code env} that name a supported setting (others are ignored,
   * as object_store does), then {@code options} (an unknown key is refused).
   *
   * @throws IllegalArgumentException naming the URL, option or variable that is wrong
   */
  static S3Settings parse(String url, Map<String, String> options, Map<String, String> env) {
    if (url == null) {
      throw new IllegalArgumentException("table URL is null");
    }
    Map<Setting, String> given = new java.util.EnumMap<>(Setting.class);
    Map<Setting, String> from = new java.util.EnumMap<>(Setting.class);
    // Sorted, so that of two names of one setting the later wins every time
    // (AWS_ENDPOINT_URL over AWS_ENDPOINT).
    for (Map.Entry<String, String> e : new TreeMap<>(env).entrySet()) {
      if (e.getKey().startsWith("AWS_")) {
        Setting s = KEYS.get(e.getKey().toLowerCase(Locale.ROOT));
        if (s != null) {
          given.put(s, e.getValue());
          from.put(s, "environment variable " + e.getKey());
        }
      }
    }
    for (Map.Entry<String, String> e : options.entrySet()) {
      Setting s = KEYS.get(e.getKey());
      if (s == null) {
        throw new IllegalArgumentException(
            "table " + url + ": unknown option \"" + e.getKey() + "\" (S3Storage takes "
                + String.join(", ", new java.util.TreeSet<>(KEYS.keySet())) + ")");
      }
      if (e.getValue() == null) {
        throw new IllegalArgumentException("table " + url + ": option \"" + e.getKey() + "\" is null");
      }
      given.put(s, e.getValue());
      from.put(s, "option \"" + e.getKey() + "\"");
    }

    URI parsed;
    try {
      parsed = new URI(url);
    } catch (URISyntaxException e) {
      throw new IllegalArgumentException("table URL \"" + url + "\": " + e.getMessage(), e);
    }
    String scheme = parsed.getScheme();
    if (scheme == null || !(scheme.equals("s3") || scheme.equals("s3a"))) {
      throw new IllegalArgumentException(
          "table URL \"" + url + "\": S3Storage opens s3://bucket/prefix (or s3a://), not "
              + (scheme == null ? "a URL without a scheme" : scheme + "://"));
    }
    // A bucket name that is not a host name (an underscore) is a registry authority to URI.
    String bucket = parsed.getHost() != null ? parsed.getHost() : parsed.getAuthority();
    if (bucket == null || bucket.isEmpty()) {
      throw new IllegalArgumentException("table URL \"" + url + "\": no bucket (s3://bucket/prefix)");
    }
    if (parsed.getQuery() != null || parsed.getFragment() != null || bucket.contains("@")
        || bucket.contains(":") || parsed.getPort() != -1) {
      throw new IllegalArgumentException(
          "table URL \"" + url + "\": only s3://bucket/prefix (no port, user, query or fragment)");
    }
    String prefix;
    try {
      prefix = S3Storage.tablePrefix(parsed.getPath());
    } catch (BackendException e) {
      throw new IllegalArgumentException("table URL \"" + url + "\": the table's path: " + e.getMessage(), e);
    }

    boolean allowHttp = bool(url, given, from, Setting.ALLOW_HTTP);
    boolean virtualHosted = bool(url, given, from, Setting.VIRTUAL_HOSTED_STYLE);
    // The S3 endpoint takes precedence over the generic one (object_store).
    Setting endpointSetting = given.containsKey(Setting.S3_ENDPOINT) ? Setting.S3_ENDPOINT : Setting.ENDPOINT;
    URI endpoint = endpoint(url, given.get(endpointSetting), from.get(endpointSetting), allowHttp);
    String region = given.getOrDefault(Setting.REGION, given.getOrDefault(Setting.DEFAULT_REGION, DEFAULT_REGION));
    String keyId = given.get(Setting.ACCESS_KEY_ID);
    String secret = given.get(Setting.SECRET_ACCESS_KEY);
    if ((keyId == null) != (secret == null)) {
      throw new IllegalArgumentException(
          "table " + url + ": " + (keyId == null ? "a secret access key without an access key id"
              : "an access key id without a secret access key")
              + " (give both aws_access_key_id and aws_secret_access_key, or neither)");
    }
    return new S3Settings(
        url, bucket, prefix, endpoint, region, keyId, secret, given.get(Setting.SESSION_TOKEN), virtualHosted);
  }

  /** object_store's reading of a boolean setting (false when not given). */
  private static boolean bool(String url, Map<Setting, String> given, Map<Setting, String> from, Setting s) {
    String v = given.get(s);
    if (v == null) {
      return false;
    }
    return switch (v.toLowerCase(Locale.ROOT)) {
      case "1", "true", "on", "yes", "y" -> true;
      case "0", "false", "off", "no", "n" -> false;
      default -> throw new IllegalArgumentException(
          "table " + url + ": " + from.get(s) + " is \"" + v + "\", not a boolean (true or false)");
    };
  }

  /** The endpoint, or null for AWS's own; plain HTTP only when allowed (as object_store). */
  private static URI endpoint(String url, String text, String from, boolean allowHttp) {
    if (text == null) {
      return null;
    }
    URI e;
    try {
      e = new URI(text);
    } catch (URISyntaxException ex) {
      throw new IllegalArgumentException("table " + url + ": " + from + " \"" + text + "\": " + ex.getMessage(), ex);
    }
    String scheme = e.getScheme() == null ? "" : e.getScheme().toLowerCase(Locale.ROOT);
    if (!(scheme.equals("http") || scheme.equals("https")) || e.getHost() == null) {
      throw new IllegalArgumentException(
          "table " + url + ": " + from + " \"" + text + "\" is not an http:// or https:// URL");
    }
    if (scheme.equals("http") && !allowHttp) {
      throw new IllegalArgumentException(
          "table " + url + ": " + from + " \"" + text
              + "\" is plain HTTP, which is refused unless aws_allow_http is true (option aws_allow_http=true or AWS_ALLOW_HTTP=true)");
    }
    return e;
  }

  /** The credentials are given (else the SDK's default provider chain finds them). */
  boolean hasStaticCredentials() {
    return accessKeyId != null;
  }

  @Override
  public String toString() {
    // Never the secret.
    return "S3Settings[" + url + ", endpoint " + endpoint + ", region " + region + "]";
  }
}
