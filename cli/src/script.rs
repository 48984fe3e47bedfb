//! `sinkcoord script`: the resolved call script of a trace, for hosts that
//! only marshal calls (`sink_coordinator_testkit::script`, hosts/README.md),
//! and the result document rendered from such a host's raw results.

use std::path::{Path, PathBuf};

use clap::Args;
use sink_coordinator_testkit::replay::ReplayError;
use sink_coordinator_testkit::script;
use sink_coordinator_testkit::trace::Trace;

use crate::Failure;

#[derive(Args, Debug)]
pub struct ScriptArgs {
    /// Instead of writing the script, render the result document from a
    /// host's raw results (one JSON line per call line of the script);
    /// exit 1 if the host's calls differ from the script.
    #[arg(long, value_name = "RAW")]
    render: Option<PathBuf>,
    /// With --render: also write the state bytes of every successful
    /// `checkpoint` step to FILE, as `sinkcoord replay --states` does.
    #[arg(long, value_name = "FILE", requires = "render")]
    states: Option<PathBuf>,
    /// Without --render: also write the native core's raw results (what a
    /// faithful host prints) to FILE.
    #[arg(long, value_name = "FILE", conflicts_with = "render")]
    results: Option<PathBuf>,
    /// The trace file (JSON).
    trace: PathBuf,
}

fn read(path: &Path) -> Result<Vec<u8>, Failure> {
    std::fs::read(path).map_err(|e| Failure::host(format!("cannot read {}: {e}", path.display())))
}

fn write(path: &Path, text: String) -> Result<(), Failure> {
    std::fs::write(path, text)
        .map_err(|e| Failure::host(format!("cannot write {}: {e}", path.display())))
}

pub fn cmd_script(args: &ScriptArgs) -> Result<String, Failure> {
    let trace: Trace = sink_coordinator_testkit::trace::parse_slice(&read(&args.trace)?)
        .map_err(|m| Failure::malformed(format!("{}: {m}", args.trace.display())))?;
    let failure = |e: ReplayError| match e {
        ReplayError::Malformed(m) => Failure::malformed(format!("{}: {m}", args.trace.display())),
        e @ ReplayError::Host(_) => Failure::host(format!("{}: {e}", args.trace.display())),
    };
    match &args.render {
        None => {
            let recording = script::record(&trace).map_err(failure)?;
            if let Some(path) = &args.results {
                write(path, script::to_json_lines(&recording.results))?;
            }
            Ok(script::to_json_lines(&recording.script))
        }
        Some(raw) => {
            let raw = String::from_utf8(read(raw)?)
                .map_err(|e| Failure::host(format!("{}: {e}", raw.display())))?;
            let (result, states) = script::play(&trace, &raw).map_err(failure)?;
            if let Some(path) = &args.states {
                write(path, states.iter().map(|s| s.render_line()).collect())?;
            }
            Ok(result.render())
        }
    }
}
