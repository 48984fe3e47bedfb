//! The properties checked on every state, and the coverage names.

use sink_coordinator::END;

use crate::model::COMMIT_USER;
use crate::state::*;

pub(crate) fn user_snaps(st: &St) -> impl Iterator<Item = &Snap> {
    st.table.iter().filter(|s| s.commit_user == COMMIT_USER)
}

pub fn has_end(st: &St) -> bool {
    user_snaps(st).any(|s| s.identifier == END)
}

pub fn duplicate(st: &St) -> Option<String> {
    let mut all: Vec<&Vec<u8>> = st
        .table
        .iter()
        .flat_map(|s| s.committables.iter().map(|(_, c)| c))
        .collect();
    all.sort();
    all.windows(2)
        .find(|w| w[0] == w[1])
        .map(|w| String::from_utf8_lossy(w[0]).into_owned())
}

pub fn increasing(st: &St) -> bool {
    let ids: Vec<u64> = user_snaps(st).map(|s| s.identifier).collect();
    ids.windows(2).all(|w| w[0] < w[1])
}

/// A safety property failed: the state is terminal.
pub fn violated(st: &St) -> bool {
    st.fatal.is_some()
        || matches!(st.done, Some(Err(_)))
        || st.tags.is_some()
        || duplicate(st).is_some()
        || !increasing(st)
}

pub const P_NO_FATAL: &str = "no fatal error under the host contract";
pub const P_ONCE: &str = "no committable twice, ever";
pub const P_INCREASING: &str = "identifiers of the commit user strictly increase";
pub const P_EXACTLY_ONCE: &str =
    "driven to its end: every committable exactly once, END snapshot, committed-up-to END";
pub const P_TAGS: &str = "driven to its end: no lost savepoint tag, none of an aborted savepoint";
pub const P_FINAL: &str = "the job reaches its final commit";

pub const S_FINAL: &str = "a final commit";
pub const S_GLOBAL: &str = "exactly-once after a global failover";
pub const S_NAMED: &str = "exactly-once after a failover that named a finished writer";
pub const S_REGION: &str = "exactly-once after a region failover";
pub const S_FAIL: &str = "exactly-once after a failed write";
pub const S_AMBIGUOUS: &str = "exactly-once after an ambiguous write";
pub const S_RESTART: &str = "restart-required reported";
pub const S_END_RESTORING: &str = "an END event while restoring";
pub const S_FINISHED: &str = "a writer finished";
pub const S_TAG: &str = "a savepoint tag at the end";
pub const S_DRAINED_TAG: &str = "a drained stop-with-savepoint tagged on the END snapshot";
pub const S_GHOST: &str = "exactly-once after a finished subtask's replayed restore or reset";
pub const S_FINISHED_IN_FLIGHT: &str = "exactly-once after a writer finished with events in flight";

pub(crate) fn done_ok(st: &St) -> bool {
    matches!(st.done, Some(Ok(())))
}
