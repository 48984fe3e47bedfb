//! The check before `sinkcoord simulate` wipes its table: the test kit's
//! (`sink_coordinator_testkit::sim::wipe`, which the simulator also runs
//! itself), with its outcomes as the CLI's exit statuses: a refusal is exit
//! 1, a table that cannot be read exit 3.

use sink_coordinator::Storage;
use sink_coordinator_host::storage::TableUrl;
use sink_coordinator_testkit::sim::wipe::{self, WipeError};
use sink_coordinator_testkit::sim::TableLocation;

use crate::Failure;

pub use wipe::kind_name;

fn failure(e: WipeError) -> Failure {
    match e {
        WipeError::Refused(m) => Failure::host(m),
        WipeError::Storage(m) => Failure::storage(m),
    }
}

/// Refuses (exit 1, naming the offending path) a table that holds anything
/// the coordinator does not write; a storage that cannot be read is a
/// storage failure (exit 3). `memory` tables are always fine.
pub fn check_before_wipe(table: &str, memory: bool) -> Result<(), Failure> {
    if memory {
        return Ok(());
    }
    // An unparsable --table is the campaign's error, with its own message.
    match TableLocation::parse(table) {
        Ok(TableLocation::Memory) | Err(_) => Ok(()),
        Ok(TableLocation::Dir(dir)) => wipe::check_dir(table, &dir).map_err(failure),
        Ok(TableLocation::Url { url, .. }) => check_url(&url),
    }
}

fn check_url(url: &str) -> Result<(), Failure> {
    let mut storage = match TableUrl::parse(url).and_then(|u| u.open(true, &[])) {
        Ok(storage) => storage,
        // The campaign opens it again and reports the same error.
        Err(_) => return Ok(()),
    };
    let keys = storage
        .list("")
        .map_err(|e| Failure::storage(format!("cannot list {url}: {e}")))?;
    wipe::check_keys(url, &keys).map_err(failure)
}
