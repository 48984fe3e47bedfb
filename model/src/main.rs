//! `sink-coordinator-model [--scope NAME] [--threads N] [--findings DIR] ...`:
//! explores every scope of the suite to exhaustion, prints states explored
//! and time; exit 1 on any counterexample (TRACE-FORMAT traces in DIR,
//! default target/model-findings of the workspace).

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

use sink_coordinator_model::{check, Scope};

const USAGE: &str = "usage: sink-coordinator-model [--scope NAME] [--threads N] [--findings DIR]
       [--first]        stop each scope at its first counterexample
       [--no-faults] [--no-region] [--no-global] [--checkpoints N]   change every scope
       [--samples N]    instead: write N random schedules per scope (trace + the model's table) to DIR
NAME: full (default, make model-check), large (make model-check MODEL_SCOPE=large),
      extra, reduced (cargo test), tiny, or one scope: all, all-2ck, all-4ck, p3, global-fault,
      region-fault, global-region, empty-ends, later-writes, aborts-older, on-end-input";

fn main() -> ExitCode {
    let mut suite = "full".to_string();
    let mut threads = 2;
    let mut findings = PathBuf::from(sink_coordinator_model::FINDINGS_DIR);
    let mut first = false;
    let mut no_faults = false;
    let mut no_region = false;
    let mut no_global = false;
    let mut checkpoints = None;
    let mut samples = None;
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        let mut value = |name: &str| {
            args.next().unwrap_or_else(|| {
                eprintln!("{name} needs a value\n{USAGE}");
                std::process::exit(2)
            })
        };
        let mut number = |name: &str| -> u32 {
            value(name).parse().unwrap_or_else(|_| {
                eprintln!("{name} needs a number\n{USAGE}");
                std::process::exit(2)
            })
        };
        match a.as_str() {
            "--scope" => suite = value("--scope"),
            "--threads" => threads = number("--threads") as usize,
            "--findings" => findings = PathBuf::from(value("--findings")),
            "--first" => first = true,
            "--no-faults" => no_faults = true,
            "--no-region" => no_region = true,
            "--no-global" => no_global = true,
            "--checkpoints" => checkpoints = Some(number("--checkpoints")),
            "--samples" => samples = Some(number("--samples") as usize),
            "-h" | "--help" => {
                println!("{USAGE}");
                return ExitCode::SUCCESS;
            }
            other => {
                eprintln!("unknown argument {other:?}\n{USAGE}");
                return ExitCode::from(2);
            }
        }
    }
    let Some(scopes) = Scope::suite(&suite) else {
        eprintln!("unknown scope {suite:?}\n{USAGE}");
        return ExitCode::from(2);
    };
    let started = Instant::now();
    let (mut states, mut ok) = (0, true);
    for mut scope in scopes {
        // A changed scope gets its own name (and finding file names).
        if no_faults && scope.storage_faults > 0 {
            scope.storage_faults = 0;
            scope.name.push_str("-no-faults");
        }
        if no_region && scope.region_failovers > 0 {
            scope.region_failovers = 0;
            scope.name.push_str("-no-region");
        }
        if no_global && scope.global_failovers > 0 {
            scope.global_failovers = 0;
            scope.name.push_str("-no-global");
        }
        if let Some(n) = checkpoints {
            scope.checkpoints = n;
            scope.name.push_str(&format!("-{n}ck"));
        }
        println!("{scope:?}");
        if let Some(n) = samples {
            let dir = findings.join(&scope.name);
            if let Err(e) = sink_coordinator_model::sample_traces(scope, n, 1, &dir) {
                eprintln!("{}: {e}", dir.display());
                return ExitCode::FAILURE;
            }
            println!("{n} samples in {}", dir.display());
            continue;
        }
        let report = check(scope, threads, Some(&findings), first, true);
        print!("{}", report.render());
        states += report.unique_states;
        ok &= report.ok();
    }
    println!(
        "suite {suite}: {states} states explored in {:.1} s: {}",
        started.elapsed().as_secs_f64(),
        if ok { "OK" } else { "FAILED" }
    );
    if ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}
