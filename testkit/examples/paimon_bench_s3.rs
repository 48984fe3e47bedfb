//! The core's S3 rows of the Paimon commit benchmark (tests/paimon/bench.py, with
//! `PAIMON_BENCH_S3=1 tests/paimon/bench.sh`): paimon-writer's `paimon-bench` measuring
//! half on the host's object-store storage (`object_store`'s S3 client), which lives in
//! the wasmtime crate and so in this kit, not in paimon-writer.
//!
//! Usage: `paimon_bench_s3 --format paimon|native --url s3://BUCKET/PREFIX
//! --endpoint http://127.0.0.1:PORT --commits K [--history N]`: a table bench.py uploaded
//! to the moto server it started; prints the same JSON line as `paimon-bench measure`.

#[path = "../../paimon-writer/examples/paimon-bench/measure.rs"]
#[allow(dead_code)]
mod measure;

use sink_coordinator_host::storage::open_url_with;
use sink_coordinator_testkit::moto::Moto;

fn arg(args: &[String], name: &str) -> Option<String> {
    let i = args.iter().position(|a| a == name)?;
    args.get(i + 1).cloned()
}

fn usage() -> ! {
    eprintln!(
        "usage: paimon_bench_s3 --format paimon|native --url s3://BUCKET/PREFIX \
         --endpoint http://HOST:PORT --commits K [--history N]"
    );
    std::process::exit(2);
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let fmt = arg(&args, "--format").unwrap_or_else(|| usage());
    let kind = measure::parse_format(&fmt).unwrap_or_else(|| usage());
    let url = arg(&args, "--url").unwrap_or_else(|| usage());
    let endpoint = arg(&args, "--endpoint").unwrap_or_else(|| usage());
    let commits: u64 = arg(&args, "--commits")
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| usage());
    let history: u64 = arg(&args, "--history")
        .and_then(|v| v.parse().ok())
        .unwrap_or(0);
    let options = Moto::options_for(&endpoint);
    let st = open_url_with(&url, false, &options).unwrap_or_else(|e| {
        eprintln!("cannot open {url}: {e}");
        std::process::exit(1);
    });
    let mut st = measure::counted(st);
    let run = measure::measure(&mut st, kind, measure::BENCH_USER, commits);
    println!("{}", measure::run_json(&run, &fmt, "s3", history));
}
