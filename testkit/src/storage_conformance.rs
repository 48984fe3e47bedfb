//! The storage conformance suite: what any implementation of the `storage`
//! import (`wit/coordinator.wit`) must do for the coordinator to be
//! exactly-once on it. `docs/storage-conformance.md` states the same cases
//! for implementations in other languages.
//!
//! A [`Backend`] opens handles on fresh tables; [`run`] checks every case
//! and returns what it counted, or every case that failed. Cases that need
//! another process (two processes racing, durability across a kill) run
//! when the backend names its tables by URL and a [`ProcessHelper`] is
//! given (`sinkcoord storage`, which speaks the protocol below).
//!
//! Helper protocol (`sinkcoord storage race|fill URL ...`):
//! - `race URL --prefix P --keys N --value V`: opens the table, prints
//!   `ready`, waits for a line on stdin, then for i in 0..N does
//!   `put-if-absent(P/i, V)` and prints `created P/i` or `existed P/i`;
//! - `fill URL --prefix P --count N --size S`: for i in 0..N writes an
//!   S-byte value with `put-if-absent(P/i)` and prints `ok P/i` once the
//!   call returned (killed by the suite somewhere along the way).

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Write};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Barrier};

use sink_coordinator::{Storage, StorageError};

/// A handle on one table of the backend under test.
pub type Handle = Box<dyn Storage + Send>;

/// A storage implementation under test.
pub trait Backend: Sync {
    /// Its name, in messages.
    fn name(&self) -> String;

    /// A new handle on the table `table` (a name the suite makes up, one per
    /// case). The first handle on a name finds an empty table; several
    /// handles on one name may be open at once, on several threads, and see
    /// one table.
    fn open(&self, table: &str) -> Result<Handle, String>;

    /// The table's URL for another process (`sinkcoord storage`), if the
    /// table can be reached from one.
    fn url(&self, table: &str) -> Option<String> {
        let _ = table;
        None
    }

    /// A handle whose next write is applied but reported as failed (an
    /// ambiguous failure, like a timeout after the request was sent), if
    /// the backend can produce one.
    fn open_ambiguous(&self, table: &str) -> Option<Result<Handle, String>> {
        let _ = table;
        None
    }

    /// Whether a write acknowledged before the writing process was killed
    /// must be there afterwards (checked with a [`ProcessHelper`]).
    fn durable(&self) -> bool {
        false
    }
}

/// A program speaking the helper protocol (module docs), with the
/// environment it needs (e.g. an S3 endpoint).
#[derive(Clone, Debug)]
pub struct ProcessHelper {
    /// The program (`sinkcoord`), run as `PROGRAM storage race|fill ...`.
    pub program: PathBuf,
    /// Extra environment variables.
    pub env: Vec<(String, String)>,
}

/// How hard the suite pushes (defaults: [`Options::default`]).
#[derive(Clone, Debug)]
pub struct Options {
    /// Threads racing for each key.
    pub threads: usize,
    /// Keys the threads (and the two processes) race for.
    pub race_keys: usize,
    /// The large value's size in bytes.
    pub large_value: usize,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            threads: 8,
            race_keys: 50,
            large_value: 8 << 20,
        }
    }
}

/// What the suite counted.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Report {
    /// The cases that ran, in order.
    pub cases: Vec<&'static str>,
    /// The cases skipped, with why (no helper, not reachable from another process).
    pub skipped: Vec<(&'static str, &'static str)>,
    /// Thread race: (keys, creates won, existed seen).
    pub thread_race: (usize, usize, usize),
    /// Process race: (keys, wins of process A, wins of process B, existed seen).
    pub process_race: Option<(usize, usize, usize, usize)>,
    /// Durability: writes acknowledged before the kill, and found after it.
    pub durability: Option<(usize, usize)>,
}

/// Case failures: one message each.
pub type Failures = Vec<String>;

type CaseResult = Result<(), String>;

/// The cases, in the order they run (see `docs/storage-conformance.md`).
pub const CASES: [&str; 10] = [
    "create-once",
    "overwrite",
    "delete-missing",
    "list-byte-order",
    "key-validation",
    "large-values",
    "threads-race",
    "ambiguous-failure",
    "processes-race",
    "durable-across-kill",
];

/// Runs every case against `backend`. Each case gets its own table
/// (`<case>`); a case that cannot run on this backend is listed in
/// [`Report::skipped`].
pub fn run(
    backend: &dyn Backend,
    helper: Option<&ProcessHelper>,
    options: &Options,
) -> Result<Report, Failures> {
    let mut report = Report::default();
    let mut failures = Vec::new();
    let name = backend.name();
    let mut note = |case: &'static str, result: CaseResult, report: &mut Report| match result {
        Ok(()) => report.cases.push(case),
        Err(e) => failures.push(format!("{name}: {case}: {e}")),
    };
    note("create-once", create_once(backend), &mut report);
    note("overwrite", overwrite(backend), &mut report);
    note("delete-missing", delete_missing(backend), &mut report);
    note("list-byte-order", list_byte_order(backend), &mut report);
    note("key-validation", key_validation(backend), &mut report);
    note("large-values", large_values(backend, options), &mut report);
    let race = threads_race(backend, options).map(|counts| report.thread_race = counts);
    note("threads-race", race, &mut report);
    match backend.open_ambiguous("ambiguous-failure") {
        Some(handle) => note("ambiguous-failure", ambiguous(backend, handle), &mut report),
        None => report
            .skipped
            .push(("ambiguous-failure", "the backend cannot produce one")),
    }
    match (helper, backend.url("processes-race")) {
        (Some(helper), Some(url)) => {
            let race = processes_race(backend, helper, &url, options)
                .map(|counts| report.process_race = Some(counts));
            note("processes-race", race, &mut report);
        }
        (None, _) => report.skipped.push(("processes-race", "no process helper")),
        (_, None) => report.skipped.push((
            "processes-race",
            "the table is not reachable from another process",
        )),
    }
    match (
        helper,
        backend.url("durable-across-kill"),
        backend.durable(),
    ) {
        (Some(helper), Some(url), true) => {
            let kept = durable_across_kill(backend, helper, &url)
                .map(|counts| report.durability = Some(counts));
            note("durable-across-kill", kept, &mut report);
        }
        (_, _, false) => report
            .skipped
            .push(("durable-across-kill", "the backend is not durable")),
        (None, _, _) => report
            .skipped
            .push(("durable-across-kill", "no process helper")),
        (_, None, _) => report.skipped.push((
            "durable-across-kill",
            "the table is not reachable from another process",
        )),
    }
    if failures.is_empty() {
        Ok(report)
    } else {
        Err(failures)
    }
}

fn check(ok: bool, what: impl FnOnce() -> String) -> CaseResult {
    if ok {
        Ok(())
    } else {
        Err(what())
    }
}

fn call<T>(what: &str, r: Result<T, StorageError>) -> Result<T, String> {
    r.map_err(|e| format!("{what}: unexpected error: {e}"))
}

fn expect<T: PartialEq + std::fmt::Debug>(what: &str, got: T, want: T) -> CaseResult {
    check(got == want, || {
        format!("{what}: got {got:?}, expected {want:?}")
    })
}

/// put-if-absent creates once; the loser sees "existed" and the value stays.
fn create_once(backend: &dyn Backend) -> CaseResult {
    let mut st = backend.open("create-once")?;
    expect(
        "get of a missing key",
        call("get", st.get("snapshot/1"))?,
        None,
    )?;
    expect(
        "first put-if-absent",
        call("put-if-absent", st.put_if_absent("snapshot/1", b"first"))?,
        true,
    )?;
    expect(
        "second put-if-absent",
        call("put-if-absent", st.put_if_absent("snapshot/1", b"second"))?,
        false,
    )?;
    expect(
        "value after both",
        call("get", st.get("snapshot/1"))?,
        Some(b"first".to_vec()),
    )?;
    // Another handle sees the key at once (read after write).
    let mut other = backend.open("create-once")?;
    expect(
        "get through another handle",
        call("get", other.get("snapshot/1"))?,
        Some(b"first".to_vec()),
    )?;
    expect(
        "put-if-absent through another handle",
        call("put-if-absent", other.put_if_absent("snapshot/1", b"third"))?,
        false,
    )?;
    // An empty value is a value.
    expect(
        "put-if-absent of an empty value",
        call("put-if-absent", st.put_if_absent("tag/empty", b""))?,
        true,
    )?;
    expect(
        "get of an empty value",
        call("get", other.get("tag/empty"))?,
        Some(Vec::new()),
    )
}

/// put overwrites (the hint), whether the key exists or not.
fn overwrite(backend: &dyn Backend) -> CaseResult {
    let mut st = backend.open("overwrite")?;
    call("put", st.put("hint/latest", b"1"))?;
    call("put", st.put("hint/latest", b"22"))?;
    expect(
        "value after two puts",
        call("get", st.get("hint/latest"))?,
        Some(b"22".to_vec()),
    )?;
    expect(
        "put-if-absent over a put",
        call("put-if-absent", st.put_if_absent("hint/latest", b"3"))?,
        false,
    )?;
    expect(
        "value after that",
        call("get", st.get("hint/latest"))?,
        Some(b"22".to_vec()),
    )
}

/// Deleting a missing key succeeds; a deleted key can be created again.
fn delete_missing(backend: &dyn Backend) -> CaseResult {
    let mut st = backend.open("delete-missing")?;
    call("delete of a missing key", st.delete("tag/none"))?;
    call(
        "delete under a missing prefix",
        st.delete("nothing/here/at/all"),
    )?;
    call("put-if-absent", st.put_if_absent("tag/a", b"1"))?;
    call("delete", st.delete("tag/a"))?;
    expect("get after delete", call("get", st.get("tag/a"))?, None)?;
    call("second delete", st.delete("tag/a"))?;
    expect(
        "list after delete",
        call("list", st.list("tag/"))?,
        Vec::<String>::new(),
    )?;
    expect(
        "put-if-absent after delete",
        call("put-if-absent", st.put_if_absent("tag/a", b"2"))?,
        true,
    )?;
    expect("value", call("get", st.get("tag/a"))?, Some(b"2".to_vec()))
}

/// Keys with a prefix, in byte order (a prefix is text: its last segment may
/// be partial). No key is also a directory of another key (a local
/// directory cannot hold both; the coordinator writes none).
fn list_byte_order(backend: &dyn Backend) -> CaseResult {
    let mut st = backend.open("list-byte-order")?;
    let keys = [
        "snapshot/00000000000000000010",
        "snapshot/00000000000000000002",
        "snapshot/00000000000000000001",
        "tag/savepoint-3",
        "tag/Z",
        "tag/a-b",
        "tag/a.b",
        "tag/a_b",
        "tag/a0",
        "tag/\u{e9}t\u{e9}",
        "tag/~",
        "tag/deep/er/key",
        "snap",
        "hint/latest",
    ];
    for key in keys {
        expect(
            key,
            call("put-if-absent", st.put_if_absent(key, key.as_bytes()))?,
            true,
        )?;
    }
    let mut all: Vec<String> = keys.iter().map(|k| k.to_string()).collect();
    // Byte order: '-' < '.' < '0' < 'Z' < '_' < 'a' < '~' < any non-ASCII.
    all.sort_by(|a, b| a.as_bytes().cmp(b.as_bytes()));
    let with = |prefix: &str| -> Vec<String> {
        all.iter()
            .filter(|k| k.starts_with(prefix))
            .cloned()
            .collect()
    };
    for prefix in [
        "",
        "snapshot/",
        "tag/",
        "tag/a",
        "tag/s",
        "snap",
        "s",
        "tag/deep/",
        "tag/deep/er/k",
        "hint/latest",
        "missing/",
        "tag/b",
    ] {
        expect(
            &format!("list {prefix:?}"),
            call("list", st.list(prefix))?,
            with(prefix),
        )?;
    }
    // Every listed key reads back its own value.
    for key in call("list", st.list(""))? {
        expect(
            &key,
            call("get", st.get(&key))?,
            Some(key.as_bytes().to_vec()),
        )?;
    }
    Ok(())
}

/// Keys and prefixes that could escape a table or alias another key are
/// refused with `invalid-key`, by every call, and nothing is written.
fn key_validation(backend: &dyn Backend) -> CaseResult {
    let mut st = backend.open("key-validation")?;
    let bad_keys = [
        "",
        "/etc/passwd",
        "/snapshot/1",
        "..",
        "../x",
        "a/../../x",
        "a/./b",
        ".",
        "a//b",
        "a/",
        "a\0b",
        "a\\b",
        "snapshot/\0",
    ];
    for key in bad_keys {
        let refused = |r: Result<(), StorageError>, op: &str| -> CaseResult {
            match r {
                Err(e) if e.is_invalid_key() => Ok(()),
                Err(e) => Err(format!("{op} {key:?}: expected invalid-key, got {e}")),
                Ok(()) => Err(format!("{op} {key:?}: accepted")),
            }
        };
        refused(st.get(key).map(|_| ()), "get")?;
        refused(st.put_if_absent(key, b"x").map(|_| ()), "put-if-absent")?;
        refused(st.put(key, b"x"), "put")?;
        refused(st.delete(key), "delete")?;
    }
    for prefix in ["/", "/snapshot/", "../", "a/../", "a//", "a\0", "a\\"] {
        match st.list(prefix) {
            Err(e) if e.is_invalid_key() => {}
            Err(e) => return Err(format!("list {prefix:?}: expected invalid-key, got {e}")),
            Ok(keys) => return Err(format!("list {prefix:?}: accepted ({keys:?})")),
        }
    }
    expect(
        "keys after refused calls",
        call("list", st.list(""))?,
        Vec::<String>::new(),
    )
}

/// A value of several MiB makes the round trip byte for byte.
fn large_values(backend: &dyn Backend, options: &Options) -> CaseResult {
    let mut st = backend.open("large-values")?;
    // Not a repeating pattern of a power-of-two length: a truncated or
    // shifted value cannot match.
    let value: Vec<u8> = (0..options.large_value)
        .map(|i| (i.wrapping_mul(31).wrapping_add(i / 251) % 253) as u8)
        .collect();
    expect(
        "put-if-absent",
        call("put-if-absent", st.put_if_absent("snapshot/large", &value))?,
        true,
    )?;
    let got = call("get", st.get("snapshot/large"))?;
    check(got.as_deref() == Some(&value[..]), || {
        format!(
            "get: {} bytes back, {} written (or different bytes)",
            got.as_ref().map_or(0, Vec::len),
            value.len()
        )
    })?;
    let mut smaller = value.clone();
    smaller.truncate(value.len() / 3);
    call("put", st.put("snapshot/large", &smaller))?;
    let got = call("get", st.get("snapshot/large"))?;
    check(got.as_deref() == Some(&smaller[..]), || {
        "get after a smaller put: not the smaller value".into()
    })
}

/// Threads, each with its own handle, race for the same keys: one create
/// wins each key, every other sees "existed", and the value is the winner's.
fn threads_race(backend: &dyn Backend, options: &Options) -> Result<(usize, usize, usize), String> {
    let threads = options.threads.max(2);
    let keys = options.race_keys;
    let mut handles = Vec::with_capacity(threads);
    for _ in 0..threads {
        handles.push(backend.open("threads-race")?);
    }
    let barrier = Arc::new(Barrier::new(threads));
    let outcomes: Vec<Result<Vec<bool>, String>> = std::thread::scope(|scope| {
        let running: Vec<_> = handles
            .into_iter()
            .enumerate()
            .map(|(t, mut st)| {
                let barrier = Arc::clone(&barrier);
                scope.spawn(move || {
                    let mut won = Vec::with_capacity(keys);
                    for k in 0..keys {
                        // Every thread starts each key together.
                        barrier.wait();
                        let value = format!("thread {t}");
                        match st.put_if_absent(&format!("race/{k:04}"), value.as_bytes()) {
                            Ok(created) => won.push(created),
                            Err(e) => {
                                // Keep the barrier's count right for the others.
                                for _ in k + 1..keys {
                                    barrier.wait();
                                }
                                return Err(format!("thread {t}, key {k}: {e}"));
                            }
                        }
                    }
                    Ok(won)
                })
            })
            .collect();
        running
            .into_iter()
            .map(|h| {
                h.join()
                    .unwrap_or_else(|_| Err("a racing thread panicked".into()))
            })
            .collect()
    });
    let mut won_by: Vec<Vec<bool>> = Vec::new();
    for outcome in outcomes {
        won_by.push(outcome?);
    }
    let mut st = backend.open("threads-race")?;
    let (mut wins, mut existed) = (0, 0);
    for k in 0..keys {
        let winners: Vec<usize> = won_by
            .iter()
            .enumerate()
            .filter(|(_, won)| won.get(k) == Some(&true))
            .map(|(t, _)| t)
            .collect();
        check(winners.len() == 1, || {
            format!(
                "key race/{k:04}: {} threads were told they created it",
                winners.len()
            )
        })?;
        let value = call("get", st.get(&format!("race/{k:04}")))?;
        expect(
            &format!("value of race/{k:04}"),
            value,
            Some(format!("thread {}", winners[0]).into_bytes()),
        )?;
        wins += 1;
        existed += threads - 1;
    }
    Ok((keys, wins, existed))
}

/// A write reported as failed may have landed: afterwards the table shows
/// it, and put-if-absent of the same key reports "existed" (how the
/// coordinator resolves an ambiguous snapshot write).
fn ambiguous(backend: &dyn Backend, handle: Result<Handle, String>) -> CaseResult {
    let mut flaky = handle?;
    match flaky.put_if_absent("snapshot/00000000000000000001", b"mine") {
        Err(e) if !e.is_invalid_key() => {}
        Err(e) => {
            return Err(format!(
                "the ambiguous write: expected an i/o error, got {e}"
            ))
        }
        Ok(created) => return Err(format!("the ambiguous write reported success ({created})")),
    }
    let mut st = backend.open("ambiguous-failure")?;
    expect(
        "the ambiguous write landed",
        call("get", st.get("snapshot/00000000000000000001"))?,
        Some(b"mine".to_vec()),
    )?;
    expect(
        "put-if-absent after it",
        call(
            "put-if-absent",
            st.put_if_absent("snapshot/00000000000000000001", b"again"),
        )?,
        false,
    )?;
    expect(
        "listed",
        call("list", st.list("snapshot/"))?,
        vec!["snapshot/00000000000000000001".to_string()],
    )
}

/// Spawns `helper storage ARGS...` with piped stdin/stdout.
fn spawn(helper: &ProcessHelper, args: &[&str]) -> Result<Child, String> {
    let mut cmd = Command::new(&helper.program);
    cmd.arg("storage").args(args);
    for (k, v) in &helper.env {
        cmd.env(k, v);
    }
    cmd.stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .map_err(|e| format!("cannot run {}: {e}", helper.program.display()))
}

fn read_line(out: &mut impl BufRead, who: &str) -> Result<String, String> {
    let mut line = String::new();
    match out.read_line(&mut line) {
        Ok(0) => Err(format!("{who} exited early")),
        Ok(_) => Ok(line.trim_end().to_string()),
        Err(e) => Err(format!("reading {who}: {e}")),
    }
}

/// Two processes race for the same keys (each opened the table on its
/// own): exactly one creates each key, the other sees "existed", and the
/// value is the winner's.
fn processes_race(
    backend: &dyn Backend,
    helper: &ProcessHelper,
    url: &str,
    options: &Options,
) -> Result<(usize, usize, usize, usize), String> {
    let keys = options.race_keys.to_string();
    let mut children = Vec::new();
    for value in ["A", "B"] {
        let args = [
            "race", url, "--prefix", "race", "--keys", &keys, "--value", value,
        ];
        children.push(spawn(helper, &args)?);
    }
    let mut outs = Vec::new();
    for (child, who) in children.iter_mut().zip(["process A", "process B"]) {
        let mut out = BufReader::new(child.stdout.take().ok_or("no stdout")?);
        expect(
            &format!("{who}'s first line"),
            read_line(&mut out, who)?,
            "ready".into(),
        )?;
        outs.push(out);
    }
    // Both opened the table: start them together.
    for child in &mut children {
        let mut stdin = child.stdin.take().ok_or("no stdin")?;
        stdin
            .write_all(b"go\n")
            .map_err(|e| format!("starting a racer: {e}"))?;
    }
    let mut results: Vec<BTreeMap<String, bool>> = Vec::new();
    for (out, who) in outs.iter_mut().zip(["process A", "process B"]) {
        let mut seen = BTreeMap::new();
        for _ in 0..options.race_keys {
            let line = read_line(out, who)?;
            match line.split_once(' ') {
                Some(("created", key)) => seen.insert(key.to_string(), true),
                Some(("existed", key)) => seen.insert(key.to_string(), false),
                _ => return Err(format!("{who}: unexpected line {line:?}")),
            };
        }
        results.push(seen);
    }
    for (child, who) in children.iter_mut().zip(["process A", "process B"]) {
        let status = child.wait().map_err(|e| format!("{who}: {e}"))?;
        check(status.success(), || format!("{who} exited with {status}"))?;
    }
    let mut st = backend.open("processes-race")?;
    let (mut a_wins, mut b_wins, mut existed) = (0, 0, 0);
    for k in 0..options.race_keys {
        let key = format!("race/{k}");
        let (a, b) = (results[0].get(&key), results[1].get(&key));
        let winner = match (a, b) {
            (Some(true), Some(false)) => "A",
            (Some(false), Some(true)) => "B",
            _ => return Err(format!("{key}: process A says {a:?}, process B says {b:?}")),
        };
        if winner == "A" {
            a_wins += 1;
        } else {
            b_wins += 1;
        }
        existed += 1;
        expect(
            &format!("value of {key}"),
            call("get", st.get(&key))?,
            Some(winner.as_bytes().to_vec()),
        )?;
    }
    Ok((options.race_keys, a_wins, b_wins, existed))
}

/// A process writes keys and is killed (SIGKILL) midway: every write it
/// acknowledged is there, whole; nothing partial is listed.
fn durable_across_kill(
    backend: &dyn Backend,
    helper: &ProcessHelper,
    url: &str,
) -> Result<(usize, usize), String> {
    const SIZE: usize = 256 << 10;
    let mut child = spawn(
        helper,
        &[
            "fill",
            url,
            "--prefix",
            "fill",
            "--count",
            "100000",
            "--size",
            &SIZE.to_string(),
        ],
    )?;
    let mut out = BufReader::new(child.stdout.take().ok_or("no stdout")?);
    let mut acked = Vec::new();
    // Kill it after a few dozen acknowledged writes, while it is writing more.
    while acked.len() < 40 {
        let line = read_line(&mut out, "the writer")?;
        match line.strip_prefix("ok ") {
            Some(key) => acked.push(key.to_string()),
            None => return Err(format!("the writer: unexpected line {line:?}")),
        }
    }
    child
        .kill()
        .map_err(|e| format!("killing the writer: {e}"))?;
    let _ = child.wait();
    let mut st = backend.open("durable-across-kill")?;
    let listed = call("list", st.list("fill/"))?;
    let mut found = 0;
    for key in &acked {
        check(listed.contains(key), || {
            format!("{key} was acknowledged but is not listed")
        })?;
        let value = call("get", st.get(key))?
            .ok_or_else(|| format!("{key} was acknowledged but is gone"))?;
        check(
            value.len() == SIZE && fill_value(key, SIZE) == value,
            || format!("{key}: {} bytes, not the value written", value.len()),
        )?;
        found += 1;
    }
    // Keys written after the last acknowledgement are whole or absent.
    for key in &listed {
        let value = call("get", st.get(key))?.unwrap_or_default();
        check(value == fill_value(key, SIZE), || {
            format!("{key} is listed but partial")
        })?;
    }
    Ok((acked.len(), found))
}

/// The value `fill` writes for `key`: derived from the key, so a value
/// under the wrong key or a partial one is caught.
pub fn fill_value(key: &str, size: usize) -> Vec<u8> {
    let seed = key
        .bytes()
        .fold(7u32, |h, b| h.wrapping_mul(31).wrapping_add(u32::from(b)));
    (0..size)
        .map(|i| (seed.wrapping_add((i as u32).wrapping_mul(2_654_435_761)) >> 24) as u8)
        .collect()
}
