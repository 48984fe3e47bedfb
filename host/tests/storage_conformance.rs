//! The storage conformance suite of every host (`tests/storage/cases.json`,
//! described in `tests/storage/README.md`) against the Rust backends:
//! `LocalDirStorage` (every case), `SharedMemStorage` (no file-system or
//! bound cases) and, when the crate is built with `object-store` (as
//! `cargo test --workspace` builds it, for the test kit and the CLI turn it
//! on), `ObjectStorage` on S3 served by moto on loopback.
//!
//! The cases are data so that the Node, Python, Go and JVM hosts run the
//! very same list; this runner is the reference reading of the format.
//! Every case runs even after another fails, and the test fails at the end
//! with one line per failed step. A `full-disk` case runs on a tmpfs of
//! `options.full_disk_bytes` mounted at the table root (root on Linux),
//! unmounted after it; where the mount fails the case is skipped with one
//! line saying why.

use std::fs;
use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Barrier};

use sink_coordinator::{Storage, StorageError};
use sink_coordinator_host::storage::{
    LocalDirStorage, SharedMemStorage, ValueTooLarge, TMP_PREFIX,
};

use serde_json::Value as Json;

/// The items of an array field (none for anything else).
fn arr(v: &Json) -> &[Json] {
    v.as_array().map(Vec::as_slice).unwrap_or(&[])
}

/// The suite's deterministic large values: byte i of `{"size", "seed"}` is
/// `(seed + i + (i >> 8)) & 0xff` (README, "Values").
fn value_of(v: &Json) -> Vec<u8> {
    match v {
        Json::String(s) => s.as_bytes().to_vec(),
        Json::Object(_) => {
            let size = v.get("size").and_then(Json::as_u64).expect("value size");
            let seed = v.get("seed").and_then(Json::as_u64).expect("value seed");
            (0..size)
                .map(|i| (seed.wrapping_add(i).wrapping_add(i >> 8) & 0xff) as u8)
                .collect()
        }
        other => panic!("a value is a string or {{size, seed}}, not {other:?}"),
    }
}

/// A storage error as the suite names it.
fn kind_of(e: &StorageError) -> &'static str {
    match e {
        StorageError::InvalidKey(_) => "invalid-key",
        StorageError::Backend { source, .. }
            if source.downcast_ref::<ValueTooLarge>().is_some() =>
        {
            "value-too-large"
        }
        _ => "io",
    }
}

/// Short text of a value for failure lines.
fn show(v: &[u8]) -> String {
    if v.len() <= 40 {
        format!("{:?}", String::from_utf8_lossy(v))
    } else {
        format!("<{} bytes>", v.len())
    }
}

/// One table under test: how to open handles on it, and where it lives.
trait Table {
    fn open(&self) -> Box<dyn Storage + Send>;
    /// The table's directory (backends with the `filesystem` capability).
    fn root(&self) -> Option<&Path> {
        None
    }
    /// Releases the table after its case (every handle is dropped): `Err`
    /// says why that failed.
    fn close(&mut self) -> Result<(), String> {
        Ok(())
    }
}

/// Makes a case's table from its name and `requires`; `Err` says why the
/// case cannot run on this backend after all (a `full-disk` case whose
/// tmpfs cannot be mounted): it is skipped, with one line saying why.
type Fresh = Box<dyn Fn(&str, &[Json]) -> Result<Box<dyn Table>, String>>;

/// A backend: a factory of fresh tables and what it can do.
struct Backend {
    name: &'static str,
    capabilities: &'static [&'static str],
    fresh: Fresh,
}

/// Runs a command: `Err` with its output on one line (or its exit status,
/// or why it could not start) unless it exits 0.
fn command(program: &str, args: &[&str]) -> Result<(), String> {
    let shown = format!("{program} {}", args.join(" "));
    let out = Command::new(program)
        .args(args)
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("{shown}: {e}"))?;
    if out.status.success() {
        return Ok(());
    }
    let text =
        String::from_utf8_lossy(&out.stderr).into_owned() + &String::from_utf8_lossy(&out.stdout);
    let why = text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect::<Vec<_>>()
        .join("; ");
    Err(if why.is_empty() {
        format!("{shown}: {}", out.status)
    } else {
        format!("{shown}: {why}")
    })
}

/// Mounts a tmpfs of `bytes` at `dir` (the `full-disk` capability: root
/// on Linux).
fn mount_tmpfs(dir: &Path, bytes: u64) -> Result<(), String> {
    let size = format!("size={bytes}");
    let dir = dir.to_str().expect("a UTF-8 scratch path");
    command("mount", &["-t", "tmpfs", "-o", &size, "tmpfs", dir])
}

/// Detaches the tmpfs at `dir` (`umount -l`: even while a handle is open).
fn unmount(dir: &Path) -> Result<(), String> {
    command(
        "umount",
        &["-l", dir.to_str().expect("a UTF-8 scratch path")],
    )
}

static DIRS: AtomicU64 = AtomicU64::new(0);

/// A scratch directory holding the table (`table/`, a tmpfs mounted there
/// for a `full-disk` case) and what lies outside it (`outside/file`,
/// `outside/dir/`); unmounted and removed by `close`, or on drop.
struct DirTable {
    base: PathBuf,
    root: PathBuf,
    max_value_bytes: u64,
    mounted: bool,
}

impl DirTable {
    fn new(case: &str, max_value_bytes: u64, outside: &str) -> Self {
        let n = DIRS.fetch_add(1, Ordering::Relaxed);
        let base = std::env::temp_dir().join(format!(
            "sinkcoord-conformance-{case}-{}-{n}",
            std::process::id()
        ));
        let _ = fs::remove_dir_all(&base);
        fs::create_dir_all(base.join("outside/dir")).unwrap();
        fs::write(base.join("outside/file"), outside).unwrap();
        let root = base.join("table");
        fs::create_dir_all(&root).unwrap();
        DirTable {
            base,
            root,
            max_value_bytes,
            mounted: false,
        }
    }

    /// A table for `requires`: with `full-disk`, on a tmpfs of
    /// `full_disk_bytes` mounted at the root before the storage is opened.
    fn for_case(
        case: &str,
        requires: &[Json],
        options: &DirOptions,
    ) -> Result<Box<dyn Table>, String> {
        let mut table = DirTable::new(case, options.max_value_bytes, &options.outside);
        if requires.iter().any(|r| r.as_str() == Some("full-disk")) {
            // On failure the table (nothing mounted) is removed on drop.
            mount_tmpfs(&table.root, options.full_disk_bytes)
                .map_err(|why| format!("cannot mount a tmpfs ({why})"))?;
            table.mounted = true;
        }
        Ok(Box::new(table))
    }

    fn release(&mut self) -> Result<(), String> {
        if self.mounted {
            // Never remove through a mount that is still attached.
            unmount(&self.root)?;
            self.mounted = false;
        }
        let _ = fs::remove_dir_all(&self.base);
        Ok(())
    }
}

impl Drop for DirTable {
    fn drop(&mut self) {
        if let Err(why) = self.release() {
            eprintln!("storage conformance: {why}");
        }
    }
}

impl Table for DirTable {
    fn open(&self) -> Box<dyn Storage + Send> {
        Box::new(
            LocalDirStorage::open(&self.root)
                .unwrap()
                .with_max_value_bytes(self.max_value_bytes),
        )
    }
    fn root(&self) -> Option<&Path> {
        Some(&self.root)
    }
    fn close(&mut self) -> Result<(), String> {
        self.release()
    }
}

struct MemTable(SharedMemStorage);

impl Table for MemTable {
    fn open(&self) -> Box<dyn Storage + Send> {
        Box::new(self.0.clone())
    }
}

/// Runs one step; `Err` is the failure line.
fn step(
    table: &dyn Table,
    st: &mut Box<dyn Storage + Send>,
    s: &Json,
    options: &Json,
) -> Result<(), String> {
    let op = s.get("op").and_then(Json::as_str).expect("op");
    let expect = s
        .get("expect")
        .cloned()
        .unwrap_or(Json::Object(Default::default()));
    let key = s.get("key").and_then(Json::as_str).unwrap_or("");
    let want_error = expect.get("error").and_then(Json::as_str);
    // Compares an outcome with the expectation: an error kind, or `ok(..)`.
    let check =
        |got: Result<Option<String>, StorageError>, want: Option<String>| match (got, want_error) {
            (Err(e), Some(kind)) if kind_of(&e) == kind => Ok(()),
            (Err(e), _) => Err(format!("got {} error: {e}", kind_of(&e))),
            (Ok(got), Some(kind)) => Err(format!(
                "expected a {kind} error, got {}",
                got.unwrap_or("ok".into())
            )),
            (Ok(got), None) if got == want => Ok(()),
            (Ok(got), None) => Err(format!("expected {want:?}, got {got:?}")),
        };
    match op {
        "get" => {
            let want = if expect.get("missing").is_some() {
                None
            } else {
                expect.get("value").map(|v| show(&value_of(v)))
            };
            // Compare whole values, not their short text.
            let got = st.get(key);
            if let (Ok(Some(bytes)), Some(v)) = (&got, expect.get("value")) {
                if *bytes != value_of(v) {
                    return Err(format!(
                        "expected {}, got {}",
                        show(&value_of(v)),
                        show(bytes)
                    ));
                }
            }
            check(got.map(|v| v.map(|b| show(&b))), want)
        }
        "put-if-absent" => {
            let value = value_of(s.get("value").expect("value"));
            let want = expect
                .get("created")
                .map(|b| format!("created={}", b == &Json::Bool(true)));
            check(
                st.put_if_absent(key, &value)
                    .map(|c| Some(format!("created={c}"))),
                want,
            )
        }
        "put" => {
            let value = value_of(s.get("value").expect("value"));
            check(
                st.put(key, &value).map(|()| Some("ok".into())),
                Some("ok".into()),
            )
        }
        "delete" => check(
            st.delete(key).map(|()| Some("ok".into())),
            Some("ok".into()),
        ),
        "list" => {
            let prefix = s.get("prefix").and_then(Json::as_str).expect("prefix");
            let want = expect.get("keys").map(|k| {
                format!(
                    "{:?}",
                    arr(k)
                        .iter()
                        .map(|k| k.as_str().unwrap())
                        .collect::<Vec<_>>()
                )
            });
            check(st.list(prefix).map(|keys| Some(format!("{keys:?}"))), want)
        }
        "reopen" => {
            *st = table.open();
            Ok(())
        }
        "race" => race(table, s),
        "plant" | "plant-temp-links" => plant(table.root().expect("a directory"), s),
        // Nothing lies outside a table without a directory, and it has no
        // temporary files.
        "check-outside" | "check-no-temp" if table.root().is_none() => Ok(()),
        "check-outside" => {
            let base = table.root().expect("a directory").parent().unwrap();
            let content = options
                .get("outside_file_content")
                .and_then(Json::as_str)
                .unwrap();
            let file = fs::read(base.join("outside/file")).map_err(|e| e.to_string())?;
            let dir = fs::read_dir(base.join("outside/dir"))
                .map_err(|e| e.to_string())?
                .count();
            let missing = base.join("outside/missing").symlink_metadata().is_ok();
            if file != content.as_bytes() || dir != 0 || missing {
                return Err(format!(
                    "outside the table changed: file {}, {dir} entries in dir, missing created: {missing}",
                    show(&file)
                ));
            }
            Ok(())
        }
        "check-temp" => check_temp(table.root().expect("a directory"), &expect),
        "check-no-temp" => {
            let mut found = Vec::new();
            temp_files(table.root().expect("a directory"), &mut found);
            if found.is_empty() {
                Ok(())
            } else {
                Err(format!("temporary files left: {found:?}"))
            }
        }
        other => Err(format!("unknown op {other:?}")),
    }
}

/// A planted path with `{pid}` replaced by this process's id.
fn with_pid(path: &str) -> String {
    path.replace("{pid}", &std::process::id().to_string())
}

/// `check-temp`: the `present` paths exist below `root`, the `absent` ones do not.
fn check_temp(root: &Path, expect: &Json) -> Result<(), String> {
    for (field, want) in [("present", true), ("absent", false)] {
        for path in expect.get(field).map(arr).unwrap_or(&[]) {
            let path = with_pid(path.as_str().unwrap());
            if root.join(&path).symlink_metadata().is_ok() != want {
                return Err(format!("{path} should be {field}"));
            }
        }
    }
    Ok(())
}

/// Regular files named like temporary files, below `dir` (not through links).
fn temp_files(dir: &Path, found: &mut Vec<String>) {
    for entry in fs::read_dir(dir).into_iter().flatten().flatten() {
        let ty = entry.file_type().unwrap();
        let name = entry.file_name().to_string_lossy().into_owned();
        if ty.is_dir() {
            temp_files(&entry.path(), found);
        } else if ty.is_file() && name.starts_with(TMP_PREFIX) {
            found.push(entry.path().display().to_string());
        }
    }
}

/// The planted file-system entries of a case (README, "Planting").
fn plant(root: &Path, s: &Json) -> Result<(), String> {
    let outside = root.parent().unwrap().join("outside");
    let target = |s: &Json| match s.get("target").and_then(Json::as_str) {
        Some("outside-file") => outside.join("file"),
        Some("outside-dir") => outside.join("dir"),
        Some("outside-missing") => outside.join("missing"),
        other => panic!("unknown target {other:?}"),
    };
    if s.get("op").and_then(Json::as_str) == Some("plant-temp-links") {
        let count = s.get("count").and_then(Json::as_u64).unwrap();
        for dir in arr(s.get("dirs").unwrap()) {
            let dir = root.join(dir.as_str().unwrap());
            fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
            for n in 0..count {
                let name = format!("{TMP_PREFIX}{}.{n}", std::process::id());
                symlink(target(s), dir.join(name)).map_err(|e| e.to_string())?;
            }
        }
        return Ok(());
    }
    let path = root.join(with_pid(s.get("path").and_then(Json::as_str).unwrap()));
    fs::create_dir_all(path.parent().unwrap()).map_err(|e| e.to_string())?;
    let done = match s.get("kind").and_then(Json::as_str).unwrap() {
        "symlink" => symlink(target(s), &path),
        "dir" => fs::create_dir(&path),
        "file" => fs::write(&path, value_of(s.get("value").unwrap())),
        "sparse" => fs::File::create(&path)
            .and_then(|f| f.set_len(s.get("size").and_then(Json::as_u64).unwrap())),
        "fifo" => rustix::fs::mknodat(
            rustix::fs::CWD,
            &path,
            rustix::fs::FileType::Fifo,
            rustix::fs::Mode::from_raw_mode(0o644),
            0,
        )
        .map_err(Into::into),
        other => panic!("unknown kind {other:?}"),
    };
    done.map_err(|e| format!("cannot plant {}: {e}", path.display()))
}

/// `race`: `racers` handles, released together for each key.
fn race(table: &dyn Table, s: &Json) -> Result<(), String> {
    let prefix = s.get("prefix").and_then(Json::as_str).unwrap().to_string();
    let keys = s.get("keys").and_then(Json::as_u64).unwrap();
    let racers = s.get("racers").and_then(Json::as_u64).unwrap() as usize;
    let barrier = Arc::new(Barrier::new(racers));
    let threads: Vec<_> = (0..racers)
        .map(|r| {
            let mut st = table.open();
            let barrier = Arc::clone(&barrier);
            let prefix = prefix.clone();
            std::thread::spawn(move || {
                (0..keys)
                    .map(|k| {
                        barrier.wait();
                        st.put_if_absent(&format!("{prefix}{k}"), format!("racer-{r}").as_bytes())
                            .map_err(|e| e.to_string())
                    })
                    .collect::<Result<Vec<bool>, String>>()
            })
        })
        .collect();
    let results: Vec<Vec<bool>> = threads
        .into_iter()
        .map(|t| t.join().unwrap())
        .collect::<Result<_, _>>()?;
    let mut st = table.open();
    for k in 0..keys as usize {
        let winners: Vec<usize> = (0..racers).filter(|&r| results[r][k]).collect();
        let stored = st.get(&format!("{prefix}{k}")).map_err(|e| e.to_string())?;
        if winners.len() != 1 || stored != Some(format!("racer-{}", winners[0]).into_bytes()) {
            return Err(format!("key {k}: winners {winners:?}, stored {stored:?}"));
        }
    }
    Ok(())
}

/// The cases file: `SINKCOORD_STORAGE_CASES` if set (to check that a broken
/// expectation fails), else the repository's.
fn suite() -> Json {
    let path = std::env::var_os("SINKCOORD_STORAGE_CASES")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/storage/cases.json")
        });
    let text = fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str::<Json>(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// Runs every case that `backend` can; returns (passed, skipped, failure lines).
fn run(backend: &Backend) -> (usize, usize, Vec<String>) {
    let suite = suite();
    assert_eq!(
        suite.get("version").and_then(Json::as_u64),
        Some(1),
        "cases.json version"
    );
    let options = suite.get("options").unwrap();
    let (mut passed, mut skipped, mut failures) = (0, 0, Vec::new());
    for case in arr(suite.get("cases").unwrap()) {
        let name = case.get("name").and_then(Json::as_str).unwrap();
        let requires = case.get("requires").map(arr).unwrap_or(&[]);
        if !requires
            .iter()
            .all(|r| backend.capabilities.contains(&r.as_str().unwrap()))
        {
            skipped += 1;
            continue;
        }
        let mut table = match (backend.fresh)(name, requires) {
            Ok(table) => table,
            Err(why) => {
                eprintln!("storage conformance, {name}: skipped: {why}");
                skipped += 1;
                continue;
            }
        };
        let mut st = table.open();
        let before = failures.len();
        for (i, s) in arr(case.get("steps").unwrap()).iter().enumerate() {
            if let Err(why) = step(table.as_ref(), &mut st, s, options) {
                let op = s.get("op").and_then(Json::as_str).unwrap();
                let at = s
                    .get("key")
                    .or(s.get("prefix"))
                    .and_then(Json::as_str)
                    .unwrap_or("");
                // Long keys are clipped (on a char boundary) in the failure line.
                let at = match at.char_indices().nth(60) {
                    Some((end, _)) => format!("{:?}...", &at[..end]),
                    None => format!("{at:?}"),
                };
                failures.push(format!(
                    "{}: {name} step {i} ({op} {at}): {why}",
                    backend.name
                ));
            }
        }
        let clean = failures.len() == before;
        drop(st);
        if let Err(why) = table.close() {
            failures.push(format!("{}: {name}: {why}", backend.name));
        }
        if clean {
            passed += 1;
        }
    }
    eprintln!(
        "storage conformance, {}: {passed} passed, {} failed, {skipped} skipped",
        backend.name,
        failures.len()
    );
    (passed, skipped, failures)
}

fn assert_conforms(backend: Backend) {
    let (passed, _, failures) = run(&backend);
    assert!(passed > 0, "{}: no case ran", backend.name);
    assert!(
        failures.is_empty(),
        "{} failed steps:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

/// The suite's options for a directory table.
struct DirOptions {
    max_value_bytes: u64,
    outside: String,
    full_disk_bytes: u64,
}

fn dir_options() -> DirOptions {
    let suite = suite();
    let options = suite.get("options").unwrap();
    let number = |name: &str| options.get(name).and_then(Json::as_u64).unwrap();
    DirOptions {
        max_value_bytes: number("max_value_bytes"),
        outside: options
            .get("outside_file_content")
            .and_then(Json::as_str)
            .unwrap()
            .to_string(),
        full_disk_bytes: number("full_disk_bytes"),
    }
}

#[test]
fn local_dir_storage_conforms() {
    let options = dir_options();
    assert_conforms(Backend {
        name: "LocalDirStorage",
        capabilities: &["key-rules", "bounded", "filesystem", "full-disk"],
        fresh: Box::new(move |case, requires| DirTable::for_case(case, requires, &options)),
    });
}

#[test]
fn shared_mem_storage_conforms() {
    assert_conforms(Backend {
        name: "SharedMemStorage",
        capabilities: &["key-rules"],
        fresh: Box::new(|_, _| Ok(Box::new(MemTable(SharedMemStorage::new())))),
    });
}

#[cfg(feature = "object-store")]
mod s3 {
    //! `ObjectStorage` on moto's S3 API (`make moto-setup`): a test that
    //! cannot start the server fails with the reason, never skips.

    use std::io::{BufRead, BufReader};
    use std::process::{Child, Command, Stdio};
    use std::sync::mpsc;
    use std::time::Duration;

    use sink_coordinator::Storage;
    use sink_coordinator_host::storage::open_url_with;

    use super::{assert_conforms, Backend, Table, DIRS};

    const BUCKET: &str = "sinkcoord-conformance";

    /// A moto server; stopped when dropped (EOF on its stdin, then kill).
    struct Moto {
        child: Child,
        endpoint: String,
    }

    impl Drop for Moto {
        fn drop(&mut self) {
            drop(self.child.stdin.take());
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }

    fn start() -> Moto {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
        let python = root.join("target/moto-venv/bin/python");
        assert!(
            python.exists(),
            "{} is missing: run `make moto-setup`",
            python.display()
        );
        let mut child = Command::new(&python)
            .arg(root.join("tests/s3/moto_server.py"))
            .arg(BUCKET)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .expect("moto_server.py");
        let stdout = child.stdout.take().unwrap();
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            let mut line = String::new();
            let _ = BufReader::new(stdout).read_line(&mut line);
            let _ = tx.send(line);
        });
        let line = rx
            .recv_timeout(Duration::from_secs(120))
            .unwrap_or_default();
        let endpoint = line.trim().strip_prefix("endpoint ").map(str::to_string);
        let moto = Moto {
            child,
            endpoint: endpoint.clone().unwrap_or_default(),
        };
        assert!(endpoint.is_some(), "moto did not start: {line:?}");
        moto
    }

    struct S3Table {
        url: String,
        options: Vec<(String, String)>,
    }

    impl Table for S3Table {
        fn open(&self) -> Box<dyn Storage + Send> {
            Box::new(open_url_with(&self.url, true, &self.options).unwrap())
        }
    }

    #[test]
    fn s3_object_storage_conforms() {
        let moto = start();
        let options: Vec<(String, String)> = [
            ("aws_endpoint", moto.endpoint.as_str()),
            ("aws_allow_http", "true"),
            ("aws_region", "us-east-1"),
            ("aws_access_key_id", "testing"),
            ("aws_secret_access_key", "testing"),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
        assert_conforms(Backend {
            name: "ObjectStorage (S3 on moto)",
            capabilities: &["key-rules"],
            fresh: Box::new(move |case, _| {
                let n = DIRS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                Ok(Box::new(S3Table {
                    url: format!("s3://{BUCKET}/{case}-{}-{n}", std::process::id()),
                    options: options.clone(),
                }))
            }),
        });
        drop(moto);
    }
}
