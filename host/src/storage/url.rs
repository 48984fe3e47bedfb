//! Opening a table by URL: `file:///path` or a plain path (a local
//! directory), `memory://`, `s3://bucket/prefix`, `gs://bucket/prefix`,
//! `az://container/prefix`.

use std::fmt;
use std::path::{Path, PathBuf};

use sink_coordinator::{Storage, StorageError};

use super::local::LocalDirStorage;
#[cfg(feature = "object-store")]
use super::object::ObjectStorage;

/// Where a table lives, parsed from the text an operator gives.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TableUrl {
    /// A local directory: a plain path or `file:///path`
    /// ([`LocalDirStorage`]: fsync, symlink-safe key confinement).
    Dir(PathBuf),
    /// `memory://`: `object_store`'s in-memory store (one process, one handle).
    Memory,
    /// An object store: `s3://` (also `s3a://`), `gs://`, `az://` (also
    /// `azure://`, `abfs://`, `abfss://`, `adl://`); the table is the objects
    /// under the URL's path.
    Object {
        /// The URL as given.
        url: String,
        /// `s3`, `gs` or `azure`.
        service: &'static str,
        /// The table's prefix inside the bucket or container.
        prefix: String,
    },
}

/// A table URL that cannot be parsed or opened.
#[derive(Debug)]
pub struct UrlError {
    message: String,
    source: Option<Box<dyn std::error::Error + Send + Sync>>,
}

impl UrlError {
    fn new(message: impl Into<String>) -> Self {
        UrlError {
            message: message.into(),
            source: None,
        }
    }

    fn with_source(
        message: impl Into<String>,
        source: impl std::error::Error + Send + Sync + 'static,
    ) -> Self {
        UrlError {
            message: message.into(),
            source: Some(Box::new(source)),
        }
    }
}

impl fmt::Display for UrlError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.source {
            Some(source) => write!(f, "{}: {source}", self.message),
            None => f.write_str(&self.message),
        }
    }
}

impl std::error::Error for UrlError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.source
            .as_deref()
            .map(|s| s as &(dyn std::error::Error + 'static))
    }
}

impl TableUrl {
    /// Parses a table location. Text without `://` is a local path.
    pub fn parse(text: &str) -> Result<Self, UrlError> {
        if !text.contains("://") {
            if text.is_empty() {
                return Err(UrlError::new("empty table location"));
            }
            return Ok(TableUrl::Dir(PathBuf::from(text)));
        }
        let url = url::Url::parse(text)
            .map_err(|e| UrlError::with_source(format!("table URL {text:?}"), e))?;
        match url.scheme() {
            "file" => {
                if url
                    .host_str()
                    .is_some_and(|h| !h.is_empty() && h != "localhost")
                {
                    return Err(UrlError::new(format!(
                        "table URL {text:?}: a file URL names no host (file:///path)"
                    )));
                }
                url.to_file_path()
                    .map(TableUrl::Dir)
                    .map_err(|()| UrlError::new(format!("table URL {text:?} is not a local path")))
            }
            "memory" => match (url.host_str().unwrap_or(""), url.path().trim_matches('/')) {
                ("", "") => Ok(TableUrl::Memory),
                _ => Err(UrlError::new(format!(
                    "table URL {text:?}: memory:// takes no path"
                ))),
            },
            scheme => {
                let service = match scheme {
                    "s3" | "s3a" => "s3",
                    "gs" => "gs",
                    "az" | "azure" | "abfs" | "abfss" | "adl" => "azure",
                    _ => {
                        return Err(UrlError::new(format!(
                        "table URL {text:?}: unknown scheme {scheme:?} (file, memory, s3, gs, az)"
                    )))
                    }
                };
                Self::object(text, &url, service)
            }
        }
    }

    #[cfg(feature = "object-store")]
    fn object(text: &str, url: &url::Url, service: &'static str) -> Result<Self, UrlError> {
        let (_, path) = object_store::ObjectStoreScheme::parse(url)
            .map_err(|e| UrlError::with_source(format!("table URL {text:?}"), e))?;
        let prefix = path.as_ref().to_string();
        super::keys::check_prefix(&prefix).map_err(|e| {
            UrlError::with_source(format!("table URL {text:?}: the table's path"), e)
        })?;
        Ok(TableUrl::Object {
            url: text.to_string(),
            service,
            prefix,
        })
    }

    #[cfg(not(feature = "object-store"))]
    fn object(text: &str, _url: &url::Url, _service: &'static str) -> Result<Self, UrlError> {
        Err(UrlError::new(format!(
            "table URL {text:?}: this build has no object store support (feature `object-store`)"
        )))
    }

    /// The local directory, if the table is one.
    pub fn dir(&self) -> Option<&Path> {
        match self {
            TableUrl::Dir(dir) => Some(dir),
            _ => None,
        }
    }

    /// Opens the table. `create`: a missing local directory is made (an
    /// object store needs nothing made); otherwise it must exist. Object
    /// stores read their settings from the environment (`AWS_*`,
    /// `GOOGLE_*`, `AZURE_*`, as `object_store`'s builders do), then from
    /// `options` (the same keys, e.g. `aws_endpoint`, `aws_allow_http`).
    pub fn open(&self, create: bool, options: &[(String, String)]) -> Result<AnyStorage, UrlError> {
        match self {
            TableUrl::Dir(dir) => {
                let opened = if create {
                    LocalDirStorage::open(dir)
                } else {
                    LocalDirStorage::open_existing(dir)
                };
                opened.map(AnyStorage::Dir).map_err(|e| {
                    UrlError::with_source(format!("cannot open the table {}", dir.display()), e)
                })
            }
            #[cfg(feature = "object-store")]
            TableUrl::Memory => ObjectStorage::in_memory()
                .map(AnyStorage::Object)
                .map_err(|e| UrlError::with_source("cannot open memory://", e)),
            #[cfg(feature = "object-store")]
            TableUrl::Object {
                url,
                service,
                prefix,
            } => {
                let store = object::build(url, service, options)?;
                ObjectStorage::new(store, prefix, url.clone())
                    .map(AnyStorage::Object)
                    .map_err(|e| UrlError::with_source(format!("cannot open the table {url}"), e))
            }
            #[cfg(not(feature = "object-store"))]
            _ => {
                let _ = options;
                Err(UrlError::new(
                    "this build has no object store support (feature `object-store`)",
                ))
            }
        }
    }
}

impl fmt::Display for TableUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TableUrl::Dir(dir) => write!(f, "{}", dir.display()),
            TableUrl::Memory => f.write_str("memory://"),
            TableUrl::Object { url, .. } => f.write_str(url),
        }
    }
}

#[cfg(feature = "object-store")]
mod object {
    use std::sync::Arc;
    use std::time::Duration;

    use object_store::{ObjectStore, RetryConfig};

    use super::UrlError;

    /// A few retries within seconds: a coordinator call waits for its
    /// storage calls, and a failing call is retried by the engine anyway.
    /// (A conditional create is never retried after it was sent.)
    fn retry() -> RetryConfig {
        RetryConfig {
            max_retries: 3,
            retry_timeout: Duration::from_secs(20),
            ..RetryConfig::default()
        }
    }

    fn bad_option(url: &str, key: &str, e: object_store::Error) -> UrlError {
        UrlError::with_source(format!("table {url}: option {key:?}"), e)
    }

    /// The store of `url` (its bucket or container), configured from the
    /// environment, then `options`.
    pub(super) fn build(
        url: &str,
        service: &str,
        options: &[(String, String)],
    ) -> Result<Arc<dyn ObjectStore>, UrlError> {
        // The three builders share these methods but no trait.
        macro_rules! configured {
            ($builder:ty) => {{
                let mut b = <$builder>::from_env().with_url(url).with_retry(retry());
                for (k, v) in options {
                    b = b.with_config(k.parse().map_err(|e| bad_option(url, k, e))?, v);
                }
                b.build().map(|s| Arc::new(s) as _)
            }};
        }
        let built: object_store::Result<Arc<dyn ObjectStore>> = match service {
            "s3" => configured!(object_store::aws::AmazonS3Builder),
            "gs" => configured!(object_store::gcp::GoogleCloudStorageBuilder),
            _ => configured!(object_store::azure::MicrosoftAzureBuilder),
        };
        built.map_err(|e| UrlError::with_source(format!("cannot open the table {url}"), e))
    }
}

/// Opens the table at `location` (see [`TableUrl::parse`]), creating a
/// missing local directory; object stores are configured from the
/// environment.
pub fn open_url(location: &str) -> Result<AnyStorage, UrlError> {
    open_url_with(location, true, &[])
}

/// Like [`open_url`], with `create` (see [`TableUrl::open`]) and options for
/// an object store's builder.
pub fn open_url_with(
    location: &str,
    create: bool,
    options: &[(String, String)],
) -> Result<AnyStorage, UrlError> {
    TableUrl::parse(location)?.open(create, options)
}

/// A table opened by URL: a local directory or an object store.
#[derive(Debug)]
pub enum AnyStorage {
    /// A local directory.
    Dir(LocalDirStorage),
    /// An object store (also `memory://`).
    #[cfg(feature = "object-store")]
    Object(ObjectStorage),
}

impl AnyStorage {
    /// Like `list`, but a local directory reports symbolic links and
    /// unreadable directories as problems instead of failing
    /// ([`LocalDirStorage::list_tolerant`]); an object store has neither.
    pub fn list_tolerant(
        &mut self,
        prefix: &str,
    ) -> Result<(Vec<String>, Vec<String>), StorageError> {
        match self {
            AnyStorage::Dir(s) => s.list_tolerant(prefix),
            #[cfg(feature = "object-store")]
            AnyStorage::Object(s) => s.list(prefix).map(|keys| (keys, Vec::new())),
        }
    }

    /// When the value at `key` was last written, in milliseconds since the
    /// Unix epoch (`None`: no such key).
    pub fn modified_ms(&self, key: &str) -> Result<Option<u64>, StorageError> {
        match self {
            AnyStorage::Dir(s) => s.modified_ms(key),
            #[cfg(feature = "object-store")]
            AnyStorage::Object(s) => s.modified_ms(key),
        }
    }

    /// Temporary files of dead writers removed when a local directory was
    /// opened (none for an object store).
    pub fn removed_temp_files(&self) -> &[String] {
        match self {
            AnyStorage::Dir(s) => s.removed_temp_files(),
            #[cfg(feature = "object-store")]
            AnyStorage::Object(_) => &[],
        }
    }

    fn inner(&mut self) -> &mut dyn Storage {
        match self {
            AnyStorage::Dir(s) => s,
            #[cfg(feature = "object-store")]
            AnyStorage::Object(s) => s,
        }
    }
}

impl Storage for AnyStorage {
    fn get(&mut self, key: &str) -> Result<Option<Vec<u8>>, StorageError> {
        self.inner().get(key)
    }
    fn put_if_absent(&mut self, key: &str, value: &[u8]) -> Result<bool, StorageError> {
        self.inner().put_if_absent(key, value)
    }
    fn put(&mut self, key: &str, value: &[u8]) -> Result<(), StorageError> {
        self.inner().put(key, value)
    }
    fn delete(&mut self, key: &str) -> Result<(), StorageError> {
        self.inner().delete(key)
    }
    fn list(&mut self, prefix: &str) -> Result<Vec<String>, StorageError> {
        self.inner().list(prefix)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_locations() {
        assert_eq!(
            TableUrl::parse("demo-table").unwrap(),
            TableUrl::Dir("demo-table".into())
        );
        assert_eq!(
            TableUrl::parse("file:///tmp/t").unwrap(),
            TableUrl::Dir("/tmp/t".into())
        );
        assert_eq!(TableUrl::parse("memory://").unwrap(), TableUrl::Memory);
        assert!(TableUrl::parse("file://host/tmp/t").is_err());
        assert!(TableUrl::parse("ftp://x/y").is_err());
        assert!(TableUrl::parse("").is_err());
        assert!(TableUrl::parse("memory://x").is_err());
    }

    #[cfg(feature = "object-store")]
    #[test]
    fn parses_object_store_urls() {
        match TableUrl::parse("s3://bucket/tables/orders/").unwrap() {
            TableUrl::Object {
                service, prefix, ..
            } => {
                assert_eq!((service, prefix.as_str()), ("s3", "tables/orders"));
            }
            other => panic!("{other:?}"),
        }
        match TableUrl::parse("gs://bucket").unwrap() {
            TableUrl::Object {
                service, prefix, ..
            } => assert_eq!((service, prefix.as_str()), ("gs", "")),
            other => panic!("{other:?}"),
        }
        match TableUrl::parse("az://container/t").unwrap() {
            TableUrl::Object { service, .. } => assert_eq!(service, "azure"),
            other => panic!("{other:?}"),
        }
    }

    #[cfg(feature = "object-store")]
    #[test]
    fn opens_memory_and_object_stores_without_touching_the_network() {
        let mut st = open_url("memory://").unwrap();
        assert!(st.put_if_absent("tag/a", b"1").unwrap());
        // Building an S3 client reads settings only; no request is made.
        let opts = [
            ("aws_endpoint".to_string(), "http://127.0.0.1:9".to_string()),
            ("aws_allow_http".to_string(), "true".to_string()),
            ("aws_region".to_string(), "us-east-1".to_string()),
        ];
        assert!(open_url_with("s3://bucket/t", true, &opts).is_ok());
        assert!(
            open_url_with("s3://bucket/t", true, &[("no_such_key".into(), "x".into())]).is_err()
        );
    }
}
