//! A local S3 API server for tests: moto in server mode
//! (`tests/s3/moto_server.py`, installed by `make moto-setup` into
//! `target/moto-venv`), on a free loopback port, with the bucket
//! [`BUCKET`].
//!
//! A test that needs S3 calls [`Moto::start`] and fails with the error's
//! message when the server cannot start: S3 tests never skip silently.

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc;
use std::time::Duration;

use sink_coordinator_host::storage::{open_url_with, AnyStorage};

/// The bucket the server is started with.
pub const BUCKET: &str = "sinkcoord-test";

/// Distinguishes the tables of one process.
static TABLES: AtomicU64 = AtomicU64::new(0);

/// A running moto server; stopped when dropped.
#[derive(Debug)]
pub struct Moto {
    child: Child,
    /// Closing it tells the server to stop (also when this process dies).
    stdin: Option<ChildStdin>,
    endpoint: String,
}

/// The workspace root (the test kit's parent directory).
fn workspace() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..")
}

impl Moto {
    /// Starts a server: the venv's Python (`SINKCOORD_MOTO_PYTHON`, else
    /// `target/moto-venv/bin/python` of the workspace) runs
    /// `tests/s3/moto_server.py`.
    pub fn start() -> Result<Moto, String> {
        let root = workspace();
        let python = std::env::var_os("SINKCOORD_MOTO_PYTHON")
            .map(PathBuf::from)
            .unwrap_or_else(|| root.join("target/moto-venv/bin/python"));
        if !python.exists() {
            return Err(format!(
                "moto is not installed ({} is missing): run `make moto-setup` (tests/s3/setup.sh), which installs moto[server] from PyPI",
                python.display()
            ));
        }
        let script = root.join("tests/s3/moto_server.py");
        let mut child = Command::new(&python)
            .arg(&script)
            .arg(BUCKET)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .map_err(|e| format!("cannot run {} {}: {e}", python.display(), script.display()))?;
        let stdin = child.stdin.take();
        let stdout = child.stdout.take().ok_or("moto: no stdout")?;
        // The first line, read on a thread so that a server that hangs
        // while starting fails the test instead of blocking it.
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            let mut line = String::new();
            let read = BufReader::new(stdout).read_line(&mut line).map(|_| line);
            let _ = tx.send(read);
        });
        let line = match rx.recv_timeout(Duration::from_secs(120)) {
            Ok(Ok(line)) => line,
            Ok(Err(e)) => return Err(Self::failed(child, format!("reading its output: {e}"))),
            Err(_) => return Err(Self::failed(child, "no endpoint within 120 s".into())),
        };
        let Some(endpoint) = line.trim().strip_prefix("endpoint ") else {
            return Err(Self::failed(child, format!("unexpected output {line:?}")));
        };
        Ok(Moto {
            endpoint: endpoint.to_string(),
            child,
            stdin,
        })
    }

    fn failed(mut child: Child, why: String) -> String {
        let _ = child.kill();
        let status = child.wait().map(|s| s.to_string()).unwrap_or_default();
        format!("the moto S3 server did not start ({why}; {status}); see its stderr above")
    }

    /// `http://127.0.0.1:PORT`.
    pub fn endpoint(&self) -> &str {
        &self.endpoint
    }

    /// The `object_store` options that reach this server.
    pub fn options(&self) -> Vec<(String, String)> {
        Self::options_for(&self.endpoint)
    }

    /// The `object_store` options that reach a moto server at `endpoint`
    /// (`http://HOST:PORT`; moto accepts any credentials).
    pub fn options_for(endpoint: &str) -> Vec<(String, String)> {
        [
            ("aws_endpoint", endpoint),
            ("aws_allow_http", "true"),
            ("aws_region", "us-east-1"),
            ("aws_access_key_id", "testing"),
            ("aws_secret_access_key", "testing"),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
    }

    /// The environment that makes a process (`sinkcoord`) reach this server:
    /// the usual `AWS_*` variables.
    pub fn env(&self) -> Vec<(String, String)> {
        [
            ("AWS_ENDPOINT_URL", self.endpoint.as_str()),
            ("AWS_ALLOW_HTTP", "true"),
            ("AWS_REGION", "us-east-1"),
            ("AWS_ACCESS_KEY_ID", "testing"),
            ("AWS_SECRET_ACCESS_KEY", "testing"),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
    }

    /// A table URL no other table of this process uses:
    /// `s3://sinkcoord-test/<name>-<pid>-<n>`.
    pub fn fresh_url(&self, name: &str) -> String {
        let n = TABLES.fetch_add(1, Ordering::Relaxed);
        format!("s3://{BUCKET}/{name}-{}-{n}", std::process::id())
    }

    /// Opens the table at `url` (an `s3://` URL) on this server.
    pub fn open(&self, url: &str) -> Result<AnyStorage, String> {
        open_url_with(url, true, &self.options()).map_err(|e| e.to_string())
    }
}

impl Drop for Moto {
    fn drop(&mut self) {
        // EOF on its stdin stops the server; kill it in case it hangs.
        drop(self.stdin.take());
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A loopback TCP proxy that forwards each request to `upstream` and drops
/// the response: the server applies the request, the client sees the
/// connection close (an ambiguous failure: the write landed, the caller
/// got an error). Stops accepting when dropped.
#[derive(Debug)]
pub struct DroppingProxy {
    addr: std::net::SocketAddr,
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
}

impl DroppingProxy {
    /// Listens on a free loopback port; `upstream` is `http://HOST:PORT`.
    pub fn start(upstream: &str) -> Result<DroppingProxy, String> {
        use std::net::{TcpListener, TcpStream};
        let target = upstream
            .strip_prefix("http://")
            .unwrap_or(upstream)
            .trim_end_matches('/')
            .to_string();
        let listener = TcpListener::bind("127.0.0.1:0").map_err(|e| format!("proxy: {e}"))?;
        let addr = listener.local_addr().map_err(|e| format!("proxy: {e}"))?;
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let stopping = std::sync::Arc::clone(&stop);
        std::thread::spawn(move || {
            for client in listener.incoming() {
                if stopping.load(Ordering::Relaxed) {
                    return;
                }
                let Ok(client) = client else { continue };
                let target = target.clone();
                std::thread::spawn(move || {
                    let Ok(mut server) = TcpStream::connect(&target) else {
                        return;
                    };
                    let (Ok(mut from_client), Ok(mut to_server)) =
                        (client.try_clone(), server.try_clone())
                    else {
                        return;
                    };
                    std::thread::spawn(move || {
                        let _ = std::io::copy(&mut from_client, &mut to_server);
                    });
                    // The first bytes of the response: the request was applied.
                    let mut first = [0u8; 1];
                    let _ = std::io::Read::read(&mut server, &mut first);
                    let _ = client.shutdown(std::net::Shutdown::Both);
                    let _ = server.shutdown(std::net::Shutdown::Both);
                });
            }
        });
        Ok(DroppingProxy { addr, stop })
    }

    /// `http://127.0.0.1:PORT`.
    pub fn endpoint(&self) -> String {
        format!("http://{}", self.addr)
    }
}

impl Drop for DroppingProxy {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        // Wake the accept loop so that it sees `stop`.
        let _ = std::net::TcpStream::connect(self.addr);
    }
}
