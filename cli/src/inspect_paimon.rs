//! `sinkcoord inspect` on an Apache Paimon table (docs/paimon.md): the table's own
//! reader (the component's `table` interface, or the core's with `--native`) lists its
//! snapshots, each with its data files as committables, and its tags; the summary per
//! commit user comes from the snapshots. The native log's layout checks (20-digit names,
//! gaps, special files) do not apply: Paimon's readers find snapshots by their JSON.

use sink_coordinator::table::{self, UserMark};
use sink_coordinator::{Snapshot, Storage, Tag};
use sink_coordinator_host::component::ComponentTable;
use sink_coordinator_host::storage::AnyStorage;

use crate::inspect::InspectArgs;
use crate::report::{Summary, UserSummary};
use crate::{reading_runtime, Cli, Failure};

/// A Paimon table: its schema is there and no snapshot has the native log's name.
pub fn is_paimon(storage: &mut AnyStorage) -> bool {
    let has_schema = matches!(storage.get("schema/schema-0"), Ok(Some(_)));
    has_schema
        && storage.list(table::SNAPSHOT_PREFIX).is_ok_and(|keys| {
            keys.iter()
                .all(|k| crate::inspect::snapshot_id_of(k).is_none())
        })
}

/// What was read, for the listing.
pub struct Read {
    pub snapshots: Vec<Snapshot>,
    pub tags: Vec<Tag>,
    pub summary: Summary,
    pub problems: Vec<String>,
}

pub fn read(cli: &Cli, args: &InspectArgs, mut storage: AnyStorage) -> Result<Read, Failure> {
    let mut problems = Vec::new();
    let (snapshots, tags) = if args.native {
        let snapshots = table::list_snapshots(&mut storage);
        let tags = table::list_tags(&mut storage);
        (
            snapshots.map_err(|e| e.to_string()),
            tags.map_err(|e| e.to_string()),
        )
    } else {
        let runtime = reading_runtime(cli, &args.limits)?;
        let mut reader =
            ComponentTable::new(&runtime, storage).map_err(|e| Failure::host(e.to_string()))?;
        let snapshots = reader.list_snapshots().map_err(|e| e.to_string());
        let tags = reader.list_tags().map_err(|e| e.to_string());
        (snapshots, tags)
    };
    let mut snapshots = snapshots.unwrap_or_else(|e| {
        problems.push(format!("the Paimon snapshots cannot be read: {e}"));
        Vec::new()
    });
    let tags = tags.unwrap_or_else(|e| {
        problems.push(format!("the Paimon tags cannot be read: {e}"));
        Vec::new()
    });
    let summary = summary(&snapshots);
    if let Some(limit) = args.limit {
        let keep = usize::try_from(limit)
            .unwrap_or(usize::MAX)
            .min(snapshots.len());
        snapshots.drain(..snapshots.len() - keep);
    }
    Ok(Read {
        snapshots,
        tags,
        summary,
        problems,
    })
}

/// Every commit user's newest snapshot: what the exactly-once filter reads as the
/// user's committed identifier (the newest snapshot of a user decides, as in Paimon).
fn summary(snapshots: &[Snapshot]) -> Summary {
    let Some(latest) = snapshots.last() else {
        return Summary::default();
    };
    let mut users: std::collections::BTreeMap<&str, &Snapshot> = Default::default();
    for s in snapshots {
        users.insert(&s.commit_user, s);
    }
    Summary {
        latest: Some((latest.id, latest.time_ms)),
        users: users
            .into_iter()
            .map(|(user, s)| UserSummary {
                commit_user: user.to_string(),
                mark: UserMark {
                    identifier: s.identifier,
                    snapshot_id: s.id,
                },
                time_ms: Some(s.time_ms),
            })
            .collect(),
    }
}
