//! Golden state bytes of interface version 0.1.0 restore into the current
//! code (SEMANTICS 7 and 11: a later version restores every earlier
//! version's state). The files and their manifest are in `tests/golden/`
//! (see its README.md for how they were made).
//!
//! For every coordinator file, natively (`Coordinator` over `MemEnv`) and in
//! the component (`ComponentDriver`), each on its own fresh table:
//! - A: restore at `r` with no finished subtask, every subtask sends an empty
//!   `restored` event, the state is checkpointed again (it must hold exactly
//!   the golden END entries), the subtasks without an END entry end, and a
//!   completion triggers the final commit: the END snapshot holds exactly the
//!   golden END entries' committables under the golden commit user;
//! - B: restore with every subtask finished: the recovery commit inside
//!   `start` writes that END snapshot, with the watermark of the golden END
//!   entries (synthesized ones neutral);
//! - C: restore with another parallelism: `corrupt-state` exactly when the
//!   state holds END entries.
//!
//! Both paths must produce the same outcomes, state bytes and snapshots.
//! `state_codec::decode` must also return the manifest's content directly.
//!
//! For every writer file: `restore(bytes, r)` natively and in the component
//! returns exactly the manifest's entries, both then give identical `state()`
//! bytes, which restore again to the same entries.
//!
//! `cargo test --release -p sink-coordinator-testkit --test golden_states`

use std::collections::BTreeSet;

use sink_coordinator::{
    state_codec, Config, Coordinator, Entry, Lifecycle, MemEnv, MemStorage, Outcome, RestorePoint,
    Snapshot, StepClock, Writer, END, MAX_CHECKPOINT, MAX_PARALLELISM,
};
use sink_coordinator_host::clock::ManualClock;
use sink_coordinator_host::env::Shared;
use sink_coordinator_host::{HostError, HostErrorKind, HostResult, Runtime};
use sink_coordinator_testkit::driver::{ComponentDriver, CoordinatorApi, Driver};

mod golden_manifest;
use golden_manifest::*;

// ---------------------------------------------------------------------------
// Native and component coordinators behind one small interface
// ---------------------------------------------------------------------------

/// One table and the coordinator instance currently running over it.
trait Harness {
    fn name(&self) -> &'static str;
    fn create(&mut self, config: Config, restore: RestorePoint);
    fn start(&mut self) -> HostResult<Outcome>;
    fn restored(&mut self, s: u32, r: u64, entries: Vec<Entry>) -> HostResult<Outcome>;
    fn event(&mut self, s: u32, entry: Entry) -> HostResult<Outcome>;
    fn checkpoint(&mut self, n: u64) -> HostResult<Vec<u8>>;
    fn checkpoint_complete(&mut self, n: u64) -> HostResult<Outcome>;
    fn state(&mut self) -> Lifecycle;
    fn committed_up_to(&mut self) -> Option<u64>;
    /// The commit user the instance runs with, where it can be asked.
    fn commit_user(&self) -> Option<String>;
    fn snapshots(&mut self) -> Vec<Snapshot>;
}

struct NativeHarness {
    env: MemEnv,
    c: Option<Coordinator>,
}

impl NativeHarness {
    fn new() -> Self {
        NativeHarness {
            env: MemEnv {
                storage: MemStorage::default(),
                clock: StepClock {
                    next: 1_000,
                    step: 1,
                },
            },
            c: None,
        }
    }
    fn c(&mut self) -> &mut Coordinator {
        self.c.as_mut().expect("no instance")
    }
}

impl Harness for NativeHarness {
    fn name(&self) -> &'static str {
        "native"
    }
    fn create(&mut self, config: Config, restore: RestorePoint) {
        self.c = Some(Coordinator::new(config, Some(restore)));
    }
    fn start(&mut self) -> HostResult<Outcome> {
        let c = self.c.as_mut().expect("no instance");
        Ok(c.start(&mut self.env)?)
    }
    fn restored(&mut self, s: u32, r: u64, entries: Vec<Entry>) -> HostResult<Outcome> {
        let c = self.c.as_mut().expect("no instance");
        Ok(c.restored(&mut self.env, s, 1, r, entries)?)
    }
    fn event(&mut self, s: u32, entry: Entry) -> HostResult<Outcome> {
        let c = self.c.as_mut().expect("no instance");
        Ok(c.event(&mut self.env, s, 1, entry)?)
    }
    fn checkpoint(&mut self, n: u64) -> HostResult<Vec<u8>> {
        let c = self.c.as_mut().expect("no instance");
        Ok(c.checkpoint(&mut self.env, n)?)
    }
    fn checkpoint_complete(&mut self, n: u64) -> HostResult<Outcome> {
        let c = self.c.as_mut().expect("no instance");
        Ok(c.checkpoint_complete(&mut self.env, n)?)
    }
    fn state(&mut self) -> Lifecycle {
        self.c().state()
    }
    fn committed_up_to(&mut self) -> Option<u64> {
        self.c().committed_up_to()
    }
    fn commit_user(&self) -> Option<String> {
        self.c.as_ref().map(|c| c.commit_user().to_string())
    }
    fn snapshots(&mut self) -> Vec<Snapshot> {
        sink_coordinator::table::list_snapshots(&mut self.env.storage).expect("list snapshots")
    }
}

struct ComponentHarness {
    driver: ComponentDriver,
    c: Option<Box<dyn CoordinatorApi>>,
}

impl ComponentHarness {
    fn new(runtime: &Runtime) -> Self {
        let storage = Shared::new(MemStorage::default()).as_storage();
        let clock = Shared::new(ManualClock::new(1_000, 1)).as_clock();
        ComponentHarness {
            driver: ComponentDriver::new(runtime, storage, clock).expect("component driver"),
            c: None,
        }
    }
    fn c(&mut self) -> &mut Box<dyn CoordinatorApi> {
        self.c.as_mut().expect("no instance")
    }
}

impl Harness for ComponentHarness {
    fn name(&self) -> &'static str {
        "component"
    }
    fn create(&mut self, config: Config, restore: RestorePoint) {
        self.c = Some(
            self.driver
                .create(config, Some(restore))
                .expect("component constructor"),
        );
    }
    fn start(&mut self) -> HostResult<Outcome> {
        self.c().start()
    }
    fn restored(&mut self, s: u32, r: u64, entries: Vec<Entry>) -> HostResult<Outcome> {
        self.c().restored(s, 1, r, entries)
    }
    fn event(&mut self, s: u32, entry: Entry) -> HostResult<Outcome> {
        self.c().event(s, 1, entry)
    }
    fn checkpoint(&mut self, n: u64) -> HostResult<Vec<u8>> {
        self.c().checkpoint(n)
    }
    fn checkpoint_complete(&mut self, n: u64) -> HostResult<Outcome> {
        self.c().checkpoint_complete(n)
    }
    fn state(&mut self) -> Lifecycle {
        self.c().state()
    }
    fn committed_up_to(&mut self) -> Option<u64> {
        self.c().committed_up_to()
    }
    fn commit_user(&self) -> Option<String> {
        None
    }
    fn snapshots(&mut self) -> Vec<Snapshot> {
        self.driver.list_snapshots().expect("list snapshots")
    }
}

// ---------------------------------------------------------------------------
// Checks
// ---------------------------------------------------------------------------

/// Collects failures instead of stopping at the first; records a transcript
/// of everything observable, which must be identical for both paths.
struct Run<'a> {
    what: String,
    failures: &'a mut Vec<String>,
    transcript: Vec<String>,
}

impl Run<'_> {
    fn check(&mut self, ok: bool, msg: impl FnOnce() -> String) -> bool {
        if !ok {
            self.failures.push(format!("{}: {}", self.what, msg()));
        }
        ok
    }
    /// Long lines are kept as their length and checksum (still compared exactly enough).
    fn log(&mut self, line: String) {
        if line.len() > 2_000 {
            let head: String = line.chars().take(200).collect();
            self.transcript.push(format!(
                "{head}... ({} chars, checksum {:016x})",
                line.len(),
                fnv(line.as_bytes())
            ));
        } else {
            self.transcript.push(line);
        }
    }
    /// Unwraps a call's result, recording it; a failure is reported and ends the run.
    fn ok<T: std::fmt::Debug>(&mut self, call: &str, r: HostResult<T>) -> Option<T> {
        match r {
            Ok(v) => {
                self.log(format!("{call} -> {v:?}"));
                Some(v)
            }
            Err(e) => {
                self.log(format!("{call} -> error {}", e.kind.name()));
                self.failures.push(format!(
                    "{}: {call} failed: {}: {}",
                    self.what,
                    e.kind.name(),
                    e.message
                ));
                None
            }
        }
    }
}

fn show(bytes: &[u8]) -> String {
    if bytes.len() <= 64 {
        bytes.iter().map(|b| format!("{b:02x}")).collect()
    } else {
        format!("{} bytes, checksum {:016x}", bytes.len(), fnv(bytes))
    }
}

fn brief_committables(cs: &[Vec<u8>]) -> String {
    let shown: Vec<String> = cs.iter().map(|c| show(c)).collect();
    format!("[{}]", shown.join(", "))
}

fn brief_ends(ends: &[GoldenEnd]) -> String {
    let shown: Vec<String> = ends
        .iter()
        .map(|e| {
            format!(
                "{}: {} wm {:?}{}",
                e.subtask,
                brief_committables(&e.committables),
                e.watermark,
                if e.synthesized { " synthesized" } else { "" }
            )
        })
        .collect();
    format!("[{}]", shown.join("; "))
}

fn brief_entries(entries: &[Entry]) -> String {
    let shown: Vec<String> = entries
        .iter()
        .map(|e| {
            let c = if e.checkpoint == END {
                "END".to_string()
            } else {
                e.checkpoint.to_string()
            };
            format!(
                "{c}: {} wm {:?}{}",
                brief_committables(&e.committables.to_vecs()),
                e.watermark,
                if e.savepoint { " savepoint" } else { "" }
            )
        })
        .collect();
    format!("[{}]", shown.join("; "))
}

fn fnv(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
        (h ^ u64::from(*b)).wrapping_mul(0x0000_0100_0000_01b3)
    })
}

/// Decodes state bytes with the current decoder and compares them with the
/// golden END entries (`expect_ends = false`: the state must hold none).
fn check_state_bytes(run: &mut Run, g: &GoldenCoordinator, bytes: &[u8], expect_ends: bool) {
    let st = match state_codec::decode(bytes) {
        Ok(st) => st,
        Err(e) => {
            run.check(false, || format!("state bytes do not decode: {e:?}"));
            return;
        }
    };
    run.check(st.commit_user == g.commit_user, || {
        format!(
            "state commit user {:?}, expected {:?}",
            st.commit_user, g.commit_user
        )
    });
    run.check(st.parallelism == g.parallelism, || {
        format!(
            "state parallelism {}, expected {}",
            st.parallelism, g.parallelism
        )
    });
    let got: Vec<GoldenEnd> = st
        .slots
        .iter()
        .map(|(s, slot)| GoldenEnd {
            subtask: *s,
            committables: slot.end.committables.to_vecs(),
            watermark: slot.end.watermark,
            synthesized: slot.end.synthesized,
        })
        .collect();
    let want: Vec<GoldenEnd> = if expect_ends {
        g.ends.clone()
    } else {
        Vec::new()
    };
    run.check(got == want, || {
        format!(
            "state END entries {}, expected {}",
            brief_ends(&got),
            brief_ends(&want)
        )
    });
    for (s, slot) in &st.slots {
        run.check(slot.entries.is_empty(), || {
            format!(
                "state holds ordinary entries for ended subtask {s}: {:?}",
                slot.entries
            )
        });
    }
}

fn check_end_snapshot(
    run: &mut Run,
    h: &mut dyn Harness,
    g: &GoldenCoordinator,
    watermark: Option<i64>,
) {
    let snapshots = h.snapshots();
    run.log(format!("snapshots -> {snapshots:?}"));
    if !run.check(snapshots.len() == 1, || {
        let ids: Vec<(u64, u64)> = snapshots.iter().map(|s| (s.id, s.identifier)).collect();
        format!("expected exactly one snapshot (END), found (id, identifier) {ids:?}")
    }) {
        return;
    }
    let s = &snapshots[0];
    run.check(s.identifier == END, || {
        format!("snapshot identifier {}, expected END", s.identifier)
    });
    run.check(s.commit_user == g.commit_user, || {
        format!(
            "END snapshot commit user {:?}, expected {:?}",
            s.commit_user, g.commit_user
        )
    });
    let want = g.end_snapshot_committables();
    run.check(s.committables == want, || {
        format!(
            "END snapshot committables {:?}, expected {:?}",
            s.committables
                .iter()
                .map(|(t, c)| (*t, show(c)))
                .collect::<Vec<_>>(),
            want.iter().map(|(t, c)| (*t, show(c))).collect::<Vec<_>>()
        )
    });
    run.check(s.watermark == watermark, || {
        format!(
            "END snapshot watermark {:?}, expected {watermark:?}",
            s.watermark
        )
    });
}

fn end_entry(committables: Vec<Vec<u8>>, watermark: Option<i64>) -> Entry {
    Entry {
        checkpoint: END,
        committables: committables.into(),
        watermark,
        savepoint: false,
    }
}

/// A: restore events from every subtask, checkpoint, end the others, complete.
fn variant_restore_events(run: &mut Run, h: &mut dyn Harness, g: &GoldenCoordinator) {
    let rp = RestorePoint {
        checkpoint: g.r,
        state: g.bytes.clone(),
        finished_subtasks: vec![],
    };
    h.create(Config::new(g.parallelism, "config-user"), rp);
    if run.ok("start", h.start()).is_none() {
        return;
    }
    let st = h.state();
    run.check(st == Lifecycle::Restoring, || {
        format!("after start: {st:?}, expected restoring")
    });
    if let Some(user) = h.commit_user() {
        run.check(user == g.commit_user, || {
            format!(
                "commit_user() {user:?}, expected {:?} (the state wins)",
                g.commit_user
            )
        });
    }
    let mut last = None;
    for s in 0..g.parallelism {
        match h.restored(s, g.r, vec![]) {
            Ok(o) => last = Some(o),
            Err(e) => {
                run.ok::<()>(&format!("restored({s})"), Err(e));
                return;
            }
        }
    }
    run.log(format!("last restored -> {last:?}"));
    let st = h.state();
    run.check(st == Lifecycle::Running, || {
        format!("after every restore event: {st:?}, expected running")
    });
    let next = g.next();
    if g.all_ended() {
        // Every slot holds an END entry: the recovery commit was the final commit.
        let o = last.expect("P >= 1");
        run.check(o.committed == vec![END], || {
            format!("recovery commit {o:?}, expected the END snapshot")
        });
        run.check(o.committed_up_to == Some(END), || {
            format!("committed-up-to {:?}", o.committed_up_to)
        });
        check_end_snapshot(run, h, g, g.end_watermark(&[]));
        if let Some(bytes) = run.ok("checkpoint", h.checkpoint(next)) {
            check_state_bytes(run, g, &bytes, false);
        }
        return;
    }
    let snapshots = h.snapshots();
    run.check(snapshots.is_empty(), || {
        let ids: Vec<(u64, u64)> = snapshots.iter().map(|s| (s.id, s.identifier)).collect();
        format!("snapshots (id, identifier) after the recovery: {ids:?}")
    });
    // The state taken again holds exactly the golden END entries (now v2 bytes).
    if let Some(bytes) = run.ok("checkpoint", h.checkpoint(next)) {
        run.log(format!("state -> {}", show(&bytes)));
        check_state_bytes(run, g, &bytes, true);
    }
    // The other subtasks end (neutral-ish watermark i64::MAX), then a completion.
    let mut extra = Vec::new();
    for s in 0..g.parallelism {
        if !g.has_end(s) {
            if run
                .ok(
                    &format!("END event {s}"),
                    h.event(s, end_entry(vec![], Some(i64::MAX))),
                )
                .is_none()
            {
                return;
            }
            extra.push(Some(i64::MAX));
        }
    }
    // The END events above came after `max = r`, so their `taken` is `r + 1`
    // (SEMANTICS v2.1, 3): that checkpoint completes, or END itself when `r`
    // is the highest checkpoint id.
    let last = if g.r >= MAX_CHECKPOINT { END } else { next };
    let Some(o) = run.ok("checkpoint-complete", h.checkpoint_complete(last)) else {
        return;
    };
    run.check(o.committed == vec![END], || {
        format!("final commit {o:?}, expected the END snapshot")
    });
    run.check(o.committed_up_to == Some(END), || {
        format!("committed-up-to {:?}", o.committed_up_to)
    });
    let u = h.committed_up_to();
    run.check(u == Some(END), || format!("committed_up_to() {u:?}"));
    check_end_snapshot(run, h, g, g.end_watermark(&extra));
    if let Some(bytes) = run.ok("checkpoint after the final commit", h.checkpoint(next)) {
        check_state_bytes(run, g, &bytes, false);
    }
}

/// B: every subtask finished: the recovery commit inside start is the final commit.
fn variant_all_finished(run: &mut Run, h: &mut dyn Harness, g: &GoldenCoordinator) {
    let rp = RestorePoint {
        checkpoint: g.r,
        state: g.bytes.clone(),
        finished_subtasks: (0..g.parallelism).collect(),
    };
    h.create(Config::new(g.parallelism, "config-user"), rp);
    let Some(o) = run.ok("start", h.start()) else {
        return;
    };
    let st = h.state();
    run.check(st == Lifecycle::Running, || {
        format!("after start: {st:?}, expected running")
    });
    run.check(o.committed == vec![END], || {
        format!("start {o:?}, expected the END snapshot")
    });
    run.check(o.restart_required, || {
        format!("start {o:?}: a recovery commit that wrote a snapshot requires a restart")
    });
    run.check(o.committed_up_to == Some(END), || {
        format!("committed-up-to {:?}", o.committed_up_to)
    });
    if let Some(user) = h.commit_user() {
        run.check(user == g.commit_user, || format!("commit_user() {user:?}"));
    }
    check_end_snapshot(run, h, g, g.end_watermark(&[]));
    if let Some(bytes) = run.ok("checkpoint", h.checkpoint(g.next())) {
        check_state_bytes(run, g, &bytes, false);
    }
}

/// C: another parallelism: refused exactly when the state holds END entries.
fn variant_rescale(run: &mut Run, h: &mut dyn Harness, g: &GoldenCoordinator) {
    let p = if g.parallelism < MAX_PARALLELISM {
        g.parallelism + 1
    } else {
        g.parallelism - 1
    };
    let rp = RestorePoint {
        checkpoint: g.r,
        state: g.bytes.clone(),
        finished_subtasks: vec![],
    };
    h.create(Config::new(p, "config-user"), rp);
    let result = h.start();
    run.log(format!(
        "start with P={p} -> {:?}",
        result.as_ref().map_err(|e| e.kind)
    ));
    if g.ends.is_empty() {
        run.check(result.is_ok(), || {
            format!(
                "rescaling a state without END entries: {:?}",
                result.as_ref().err()
            )
        });
        let st = h.state();
        run.check(st == Lifecycle::Restoring, || {
            format!("after start: {st:?}")
        });
    } else {
        let kind = result.as_ref().err().map(|e: &HostError| e.kind);
        run.check(
            kind == Some(HostErrorKind::Core(
                sink_coordinator::ErrorKind::CorruptState,
            )),
            || format!("rescaling a state with END entries: {kind:?}, expected corrupt-state"),
        );
        let st = h.state();
        run.check(st == Lifecycle::Failed, || format!("after start: {st:?}"));
    }
}

type Variant = fn(&mut Run, &mut dyn Harness, &GoldenCoordinator);

/// Fails the test with every failure collected, if there is any.
fn assert_no_failures(failures: &[String]) {
    assert!(
        failures.is_empty(),
        "{} failure(s):\n{}",
        failures.len(),
        failures.join("\n")
    );
}

#[test]
fn coordinator_states_of_0_1_0_restore() {
    let m = manifest();
    let golden: Vec<GoldenCoordinator> = files(&m, "coordinator")
        .iter()
        .map(GoldenCoordinator::from)
        .collect();
    assert!(
        golden.len() >= 12,
        "only {} coordinator files",
        golden.len()
    );
    let runtime = Runtime::embedded().expect("the embedded component");
    let mut failures = Vec::new();
    let variants: [(&str, Variant); 3] = [
        ("restore events", variant_restore_events),
        ("all finished", variant_all_finished),
        ("rescale", variant_rescale),
    ];
    for g in &golden {
        // The current decoder reads the manifest's content from the raw bytes.
        {
            let mut run = Run {
                what: format!("{} decode", g.name),
                failures: &mut failures,
                transcript: vec![],
            };
            let bytes = &g.bytes;
            check_state_bytes(&mut run, g, bytes, true);
        }
        for (vname, variant) in variants {
            let mut native = NativeHarness::new();
            let mut component = ComponentHarness::new(&runtime);
            let mut transcripts = Vec::new();
            for h in [&mut native as &mut dyn Harness, &mut component] {
                let mut run = Run {
                    what: format!("{} [{vname}] {}", g.name, h.name()),
                    failures: &mut failures,
                    transcript: vec![],
                };
                variant(&mut run, h, g);
                transcripts.push(run.transcript);
            }
            if transcripts[0] != transcripts[1] {
                let i = transcripts[0]
                    .iter()
                    .zip(&transcripts[1])
                    .position(|(a, b)| a != b)
                    .unwrap_or(transcripts[0].len().min(transcripts[1].len()));
                failures.push(format!(
                    "{} [{vname}]: native and component differ at step {i}:\n  native:    {:?}\n  component: {:?}",
                    g.name,
                    transcripts[0].get(i),
                    transcripts[1].get(i)
                ));
            }
        }
    }
    assert_no_failures(&failures);
}

#[test]
fn writer_states_of_0_1_0_restore() {
    let m = manifest();
    let golden: Vec<GoldenWriter> = files(&m, "writer").iter().map(GoldenWriter::from).collect();
    assert!(golden.len() >= 8, "only {} writer files", golden.len());
    let runtime = Runtime::embedded().expect("the embedded component");
    let storage = Shared::new(MemStorage::default()).as_storage();
    let clock = Shared::new(ManualClock::new(0, 0)).as_clock();
    let mut driver = ComponentDriver::new(&runtime, storage, clock).expect("component driver");
    let mut failures: Vec<String> = Vec::new();
    for g in &golden {
        let what = &g.name;
        let mut native = Writer::new(g.subtask);
        let mut component = driver.create_writer(g.subtask).expect("component writer");
        let n = native.restore(&g.bytes, g.r);
        let c = component.restore(&g.bytes, g.r);
        match (&n, &c) {
            (Ok(n), Ok(c)) => {
                if *n != g.entries {
                    failures.push(format!(
                        "{what}: native restore returned {}, expected {}",
                        brief_entries(n),
                        brief_entries(&g.entries)
                    ));
                }
                if *c != g.entries {
                    failures.push(format!(
                        "{what}: component restore returned {}, expected {}",
                        brief_entries(c),
                        brief_entries(&g.entries)
                    ));
                }
            }
            _ => {
                failures.push(format!(
                    "{what}: restore failed: native {:?}, component {:?}",
                    n.as_ref().err(),
                    c.as_ref().err().map(|e| (e.kind, &e.message))
                ));
                continue;
            }
        }
        let ns = native.state();
        let cs = component.state().expect("component writer state");
        if ns != cs {
            failures.push(format!(
                "{what}: state() after restore differs: native {}, component {}",
                show(&ns),
                show(&cs)
            ));
        }
        // The current state bytes restore to the same entries (a restored
        // writer keeps every replayed entry buffered, SEMANTICS 11).
        let again = Writer::new(g.subtask).restore(&ns, g.r);
        if again.as_ref().ok() != Some(&g.entries) {
            failures.push(format!(
                "{what}: the restored writer's state restores to {}",
                match &again {
                    Ok(es) => brief_entries(es),
                    Err(e) => format!("{e:?}"),
                }
            ));
        }
        // Later calls work the same on both paths.
        if g.r < MAX_CHECKPOINT {
            let nr = native.report(g.r + 1, vec![b"next".to_vec()], Some(1), false);
            let cr = component.report(g.r + 1, vec![b"next".to_vec()], Some(1), false);
            if nr.as_ref().ok() != cr.as_ref().ok() || nr.is_err() {
                failures.push(format!(
                    "{what}: report({}) native {nr:?}, component {:?}",
                    g.r + 1,
                    cr.map_err(|e| e.message)
                ));
            }
        }
        let nc = native.committed(g.r);
        let cc = component.committed(g.r);
        if nc.is_err() || cc.is_err() {
            failures.push(format!(
                "{what}: committed({}) native {nc:?}, component {:?}",
                g.r,
                cc.map_err(|e| e.message)
            ));
        }
        let (ns, cs) = (
            native.state(),
            component.state().expect("component writer state"),
        );
        if ns != cs {
            failures.push(format!(
                "{what}: state() after report/committed differs: native {}, component {}",
                show(&ns),
                show(&cs)
            ));
        }
        let remaining: BTreeSet<u64> = Writer::new(g.subtask)
            .restore(&ns, g.r.saturating_add(1).min(MAX_CHECKPOINT))
            .map(|es| es.iter().map(|e| e.checkpoint).collect())
            .unwrap_or_default();
        let want: BTreeSet<u64> = g
            .entries
            .iter()
            .map(|e| e.checkpoint)
            .filter(|c| *c == END)
            .chain((g.r < MAX_CHECKPOINT).then_some(g.r + 1))
            .collect();
        if remaining != want {
            failures.push(format!("{what}: after committed({}) the state holds checkpoints {remaining:?}, expected {want:?}", g.r));
        }
    }
    assert_no_failures(&failures);
}

/// Every file in tests/golden/{coordinator,writer} is in the manifest and back.
#[test]
fn manifest_lists_every_golden_file() {
    let m = manifest();
    let listed: BTreeSet<String> = m["files"]
        .as_array()
        .expect("manifest: files")
        .iter()
        .map(|f| str_of(&f["file"], "file").to_string())
        .collect();
    let mut found = BTreeSet::new();
    for kind in ["coordinator", "writer"] {
        for entry in std::fs::read_dir(golden_dir().join(kind)).expect("golden dir") {
            let name = entry
                .expect("dir entry")
                .file_name()
                .into_string()
                .expect("utf-8 name");
            if name.ends_with(".bin") {
                found.insert(format!("{kind}/{name}"));
            }
        }
    }
    assert_eq!(listed, found);
}
