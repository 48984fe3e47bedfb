//! Prints issue 10's table, each row with its goal: the timings from the
//! criterion run `make bench` did just before (`benches/perf.rs`, read from
//! `target/criterion/*/new/estimates.json`, medians), instructions per
//! `event` from callgrind (this program runs itself under valgrind, once
//! per path, when `valgrind` is on the PATH), storage calls and the
//! component's size measured here.
//!
//! `cargo run --release -p sink-coordinator-testkit --example bench_table`
//! (after `cargo bench -p sink-coordinator-testkit --bench perf`).

use std::path::{Path as FsPath, PathBuf};
use std::process::Command;

use sink_coordinator_host::artifact::{EMBEDDED_WASM, EMBEDDED_WASM_NAME};
use sink_coordinator_host::engine::{Runtime, RuntimeOptions};
use sink_coordinator_testkit::driver::Engine;
use sink_coordinator_testkit::perf::{
    first_commit_storage_calls, job_entries, perf_job_batch, perf_job_events, writer_events,
    Subject, JOB_WRITERS,
};

/// Checkpoint cycles before and during the callgrind measurement.
const WARM_CYCLES: u64 = 3;
const MEASURED_CYCLES: u64 = 4;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if let [_, flag, path, cache, delivery] = args.as_slice() {
        if flag == "--callgrind-child" {
            callgrind_child(path, FsPath::new(cache), delivery == "batch");
            return;
        }
    }
    let target = target_dir();
    let criterion = target.join("criterion");
    let est = |id: &str| median_ns(&criterion.join(id).join("new/estimates.json"));

    let native = est("job_p256/native");
    let component = est("job_p256/component");
    let native_pe = est("job_p256_per_event/native");
    let component_pe = est("job_p256_per_event/component");
    let batch_native = est("events_batch_p256/native");
    let batch_component = est("events_batch_p256/component");
    let shape = [
        est("events_shape_p256/native_4x200"),
        est("events_shape_p256/component_4x200"),
        est("events_shape_p256/native_1x800"),
        est("events_shape_p256/component_1x800"),
    ];
    let instr = instructions(&target, "perf_job_events");
    let instr_batch_all = instructions_of(
        &target,
        "perf_job_batch",
        [
            "native",
            "component",
            "component-derived",
            "component-no-deadline",
        ],
    );
    let instr_batch = instr_batch_all.clone().map(|[n, c, _, _]| (n, c));
    let instr_derived = instr_batch_all.clone().map(|[_, c, d, _]| [c, d]);
    let instr_no_deadline = instr_batch_all.map(|[_, c, _, u]| [c, u]);
    let component_no_deadline = est("job_p256/component_no_deadline");
    let empty = est("empty_call/component");
    let empty_native = est("empty_call/native");
    let inst = est("instantiate/component");
    let rt_native = est("state_round_trip_p100000/native");
    let rt_component = est("state_round_trip_p100000/component");
    let rt_keep = est("state_round_trip_p100000/component_keep_resident");
    let (first, steady) = first_commit_storage_calls();
    let gz = gzip_len(EMBEDDED_WASM);

    let mut rows: Vec<[String; 3]> = Vec::new();
    rows.push([
        format!(
            "realistic job: P = {JOB_WRITERS}, 4 × 200 B per writer per checkpoint, completion every checkpoint, each checkpoint's events as one `events` batch — component ÷ native"
        ),
        match (native, component) {
            (Some(n), Some(c)) => format!("**{:.2}×** ({} vs {})", c / n, us(c), us(n)),
            _ => missing(),
        },
        "≤ 1.3×".into(),
    ]);
    rows.push([
        "same job, the component without the call deadline (`RuntimeOptions::call_deadline = None`: no epoch check at each function entry and loop back edge; the default keeps it) — ÷ native".into(),
        match (native, component_no_deadline) {
            (Some(n), Some(c)) => format!("{:.2}× ({} vs {})", c / n, us(c), us(n)),
            _ => missing(),
        },
        "—".into(),
    ]);
    rows.push([
        "same job, one `event` call per event — component ÷ native".into(),
        match (native_pe, component_pe) {
            (Some(n), Some(c)) => format!("{:.2}× ({} vs {})", c / n, us(c), us(n)),
            _ => missing(),
        },
        "—".into(),
    ]);
    rows.push([
        "same job, native time per checkpoint cycle".into(),
        native.map_or_else(missing, |n| {
            format!(
                "{} (≈ {:.0} ns per event)",
                us(n),
                n / f64::from(JOB_WRITERS)
            )
        }),
        "≤ 80 µs".into(),
    ]);
    rows.push([
        format!("instructions per `event` (callgrind, P = {JOB_WRITERS}, 4 × 200 B)"),
        native_and_component(instr),
        "native ≤ 800; component ≤ 1.3× native".into(),
    ]);
    rows.push([
        format!(
            "instructions per event in an `events` batch (callgrind, P = {JOB_WRITERS}, 4 × 200 B)"
        ),
        native_and_component(instr_batch),
        "component ≤ 1.3× native".into(),
    ]);
    rows.push([
        "the same, the component's `events-packed` through wasmtime's derived lowering (`RuntimeOptions::derived_lowering`, the fallback of the `hand-lowering` feature) ÷ the hand-written one".into(),
        variant_vs_default(instr_derived),
        "—".into(),
    ]);
    rows.push([
        "the same, the component without the call deadline's epoch checks ÷ with them".into(),
        variant_vs_default(instr_no_deadline),
        "—".into(),
    ]);
    rows.push([
        "an empty call through the component (`state()`)".into(),
        match (empty, empty_native) {
            (Some(c), Some(n)) => format!("{} (native {})", ns(c), ns(n)),
            _ => missing(),
        },
        "a batched event costs < 0.2 µs of crossing".into(),
    ]);
    rows.push([
        format!("batched event crossing: one `events` batch of {JOB_WRITERS}, (component − native) ÷ {JOB_WRITERS}"),
        match (batch_native, batch_component) {
            (Some(n), Some(c)) => format!(
                "{} per event ({} vs {} per batch)",
                ns((c - n) / f64::from(JOB_WRITERS)),
                us(c),
                us(n)
            ),
            _ => missing(),
        },
        "< 0.2 µs".into(),
    ]);
    rows.push([
        "one committable's own list in a batch: 4 × 200 B vs 1 × 800 B per event, extra per event (native; component)".into(),
        match shape {
            [Some(n4), Some(c4), Some(n1), Some(c1)] => format!(
                "{}; {}",
                ns((n4 - n1) / f64::from(JOB_WRITERS)),
                ns((c4 - c1) / f64::from(JOB_WRITERS))
            ),
            _ => missing(),
        },
        "—".into(),
    ]);
    rows.push([
        "Node and Python (core module, hand-written ABI) per event, ÷ Rust-wasmtime".into(),
        hosts_row(component),
        "≤ 3× and ≤ 10× (through batching)".into(),
    ]);
    rows.push([
        format!("component size (`{EMBEDDED_WASM_NAME}`)"),
        format!(
            "{} B{}",
            thousands(EMBEDDED_WASM.len() as u64),
            gz.map_or(String::new(), |g| format!(" (gzip {} KB)", g / 1000))
        ),
        "**≤ 100 KB**".into(),
    ]);
    rows.push([
        "instance + constructor from pre-instantiated component".into(),
        inst.map_or_else(missing, us),
        "≤ 15 µs".into(),
    ]);
    rows.push([
        "P = 100,000 all ended: state round trip (component; native)".into(),
        match (rt_component, rt_native) {
            (Some(c), Some(n)) => format!("{}; {}", ms(c), ms(n)),
            _ => missing(),
        },
        "≤ 25 ms".into(),
    ]);
    rows.push([
        "same round trip, the component with its memory kept resident between instances (`RuntimeOptions::pool_keep_resident_bytes` = 64 MiB; the default keeps 64 KiB) — ÷ the default".into(),
        match (rt_keep, rt_component) {
            (Some(k), Some(c)) => format!("{:.2}× ({} vs {})", k / c, ms(k), ms(c)),
            _ => missing(),
        },
        "—".into(),
    ]);
    rows.push([
        "fresh instance's first commit: storage calls (steady state)".into(),
        format!("{first} ({steady})"),
        "≤ 3 (steady state stays 2)".into(),
    ]);

    println!("| what | now | goal |\n|---|---|---|");
    for [what, now, goal] in rows {
        println!("| {what} | {now} | {goal} |");
    }
}

/// The realistic job through the installed npm package and Python wheel
/// (`hosts/{node,python}/bench_job.*`, installed by `make hosts-setup`),
/// each ÷ the component's cycle through Rust-wasmtime measured above.
fn hosts_row(rust_cycle: Option<f64>) -> String {
    let repo = FsPath::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let python = repo.join("target/python-package/venv/bin/python");
    let runs = [
        (
            "Node",
            FsPath::new("node").to_path_buf(),
            "hosts/node/bench_job.mjs",
            "20",
        ),
        ("Python", python, "hosts/python/bench_job.py", "20"),
    ];
    let mut parts = Vec::new();
    for (name, program, script, cycles) in runs {
        eprintln!("bench_table: the realistic job through {name} ({script})");
        let out = std::process::Command::new(&program)
            .current_dir(&repo)
            .args([script, "--cycles", cycles])
            .output();
        let figure = match out {
            Ok(o) if o.status.success() => serde_json::from_slice::<serde_json::Value>(&o.stdout)
                .ok()
                .and_then(|v| Some((v["cycle_ns"].as_f64()?, v["batched"].as_bool()?))),
            Ok(o) => {
                eprintln!("{}", String::from_utf8_lossy(&o.stderr));
                None
            }
            Err(e) => {
                eprintln!("bench_table: {}: {e}", program.display());
                None
            }
        };
        parts.push(match (figure, rust_cycle) {
            (Some((host, batched)), Some(rust)) => format!(
                "{name} {:.1}× ({} per event{})",
                host / rust,
                us(host / f64::from(JOB_WRITERS)),
                if batched {
                    ", batched"
                } else {
                    ", one call per event"
                }
            ),
            _ => format!("{name} not measured (run `make hosts-setup`)"),
        });
    }
    parts.join("; ")
}

fn missing() -> String {
    "no criterion estimate: run `make bench`".into()
}

/// The workspace's target directory (`CARGO_TARGET_DIR` or `target/`).
fn target_dir() -> PathBuf {
    std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../target"))
}

/// Criterion's median estimate in nanoseconds.
fn median_ns(path: &FsPath) -> Option<f64> {
    let text = std::fs::read_to_string(path).ok()?;
    let v: serde_json::Value = serde_json::from_str(&text).ok()?;
    v["median"]["point_estimate"].as_f64()
}

fn ns(v: f64) -> String {
    format!("{v:.0} ns")
}

fn us(v: f64) -> String {
    format!("{:.1} µs", v / 1e3)
}

fn ms(v: f64) -> String {
    format!("{:.1} ms", v / 1e6)
}

/// Instruction counts of the native core and the component, and their ratio.
fn native_and_component(counts: Result<(u64, u64), String>) -> String {
    match counts {
        Ok((n, c)) => format!(
            "native {}; component {} ({:.2}×)",
            thousands(n),
            thousands(c),
            c as f64 / n as f64
        ),
        Err(why) => format!("not measured: {why}"),
    }
}

fn thousands(v: u64) -> String {
    let s = v.to_string();
    let mut out = String::new();
    for (i, ch) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(ch);
    }
    out
}

fn gzip_len(bytes: &[u8]) -> Option<usize> {
    use std::io::Write;
    let mut child = Command::new("gzip")
        .arg("-9c")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .ok()?;
    child.stdin.take()?.write_all(bytes).ok()?;
    let out = child.wait_with_output().ok()?;
    out.status.success().then_some(out.stdout.len())
}

/// A variant's instruction count against the default's (`[default,
/// variant]`): "variant vs default (ratio×)".
fn variant_vs_default(counts: Result<[u64; 2], String>) -> String {
    match counts {
        Ok([default, variant]) => format!(
            "{} vs {} ({:.2}×)",
            thousands(variant),
            thousands(default),
            variant as f64 / default as f64
        ),
        Err(why) => format!("not measured: {why}"),
    }
}

/// Instructions per event, native and component, from callgrind runs of
/// this program on itself, collecting only `function` (`perf_job_events`:
/// one `event` call each; `perf_job_batch`: one `events` batch per cycle).
fn instructions(target: &FsPath, function: &str) -> Result<(u64, u64), String> {
    let [n, c] = instructions_of(target, function, ["native", "component"])?;
    Ok((n, c))
}

/// [`instructions`] of the given child paths (`native`, `component`,
/// `component-derived`: the component with wasmtime's derived lowering of
/// `events-packed` instead of the hand-written one, `component-no-deadline`:
/// without the call deadline's epoch checks).
fn instructions_of<const N: usize>(
    target: &FsPath,
    function: &str,
    paths: [&str; N],
) -> Result<[u64; N], String> {
    let have = Command::new("valgrind").arg("--version").output();
    if !have.is_ok_and(|o| o.status.success()) {
        return Err("valgrind is not installed".into());
    }
    // The component is compiled here once, natively, into a cache the
    // child loads: compiling it under valgrind would take minutes.
    let cache = target.join("perf-cache");
    // Each engine configuration has its own machine code (and cache entry).
    for call_deadline in [RuntimeOptions::default().call_deadline, None] {
        let options = RuntimeOptions {
            cache_dir: Some(cache.clone()),
            call_deadline,
            ..RuntimeOptions::default()
        };
        Runtime::new(EMBEDDED_WASM, options).map_err(|e| format!("{e:#}"))?;
    }
    let exe = std::env::current_exe().map_err(|e| e.to_string())?;
    let mut counts = [0u64; N];
    for (i, path) in paths.into_iter().enumerate() {
        let out_file = target.join(format!("perf-callgrind.{path}.{function}.out"));
        let out = Command::new("valgrind")
            .arg("--tool=callgrind")
            .arg(format!("--callgrind-out-file={}", out_file.display()))
            .arg("--collect-atstart=no")
            .arg(format!("--toggle-collect=*{function}*"))
            .arg(&exe)
            .arg("--callgrind-child")
            .arg(path)
            .arg(&cache)
            .arg(if function == "perf_job_batch" {
                "batch"
            } else {
                "per-event"
            })
            .output()
            .map_err(|e| e.to_string())?;
        if !out.status.success() {
            return Err(format!(
                "callgrind failed: {}",
                String::from_utf8_lossy(&out.stderr)
                    .lines()
                    .last()
                    .unwrap_or("")
            ));
        }
        let text = std::fs::read_to_string(&out_file).map_err(|e| e.to_string())?;
        let total = text
            .lines()
            .find_map(|l| {
                l.strip_prefix("summary:")
                    .or_else(|| l.strip_prefix("totals:"))
            })
            .and_then(|v| v.split_whitespace().next()?.parse::<u64>().ok())
            .ok_or("no total in the callgrind output")?;
        counts[i] = total / (MEASURED_CYCLES * u64::from(JOB_WRITERS));
    }
    Ok(counts)
}

/// Under callgrind: warm up, then the measured events (collected), with
/// each cycle's checkpoint and completion outside the collection; one
/// `events` batch per cycle when `batch`.
fn callgrind_child(path: &str, cache: &FsPath, batch: bool) {
    let engine = if path == "native" {
        Engine::NATIVE
    } else {
        let options = RuntimeOptions {
            cache_dir: Some(cache.to_path_buf()),
            derived_lowering: path == "component-derived",
            call_deadline: if path == "component-no-deadline" {
                None
            } else {
                RuntimeOptions::default().call_deadline
            },
            ..RuntimeOptions::default()
        };
        Engine::Component(Runtime::new(EMBEDDED_WASM, options).expect("the cached component loads"))
    };
    let mut subject = Subject::job(&engine, JOB_WRITERS);
    for c in 1..=WARM_CYCLES + MEASURED_CYCLES {
        let entries = job_entries(JOB_WRITERS, c);
        if c <= WARM_CYCLES {
            // Not through the collected functions: callgrind collects every call of them.
            if batch {
                subject.events(writer_events(entries));
            } else {
                for (s, entry) in (0u32..).zip(entries) {
                    subject.event(s, entry);
                }
            }
        } else if batch {
            perf_job_batch(&mut subject, entries);
        } else {
            perf_job_events(&mut subject, entries);
        }
        std::hint::black_box(subject.checkpoint(c));
        assert_eq!(subject.complete(c), 1);
    }
}
