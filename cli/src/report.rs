//! What `sinkcoord inspect` prints besides the listing: the summary per
//! commit user, the timeline, and the JSON document (issue 25).
//!
//! The JSON document is built here, in the canonical layout of the test
//! kit (one top-level key per line), with the `snapshots` and `tags` in the
//! layout of a replay result (a test pins them to
//! `render::render_table`), then `users`, `latest`, `timeline` (only with
//! `--timeline`) and `problems` (only when there are any). docs/cli.md
//! documents every key; a key is never renamed or removed, only added.

use std::collections::BTreeMap;

use serde::Serialize;
use sink_coordinator::table::UserMark;
use sink_coordinator::{Snapshot, Tag, END};
use sink_coordinator_testkit::format::layout::to_canonical;
use sink_coordinator_testkit::render;

use crate::clip;

/// One commit user's last commit, as of the latest snapshot.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UserSummary {
    pub commit_user: String,
    /// Its mark in the latest snapshot: what the coordinator reads as the
    /// user's highest committed identifier.
    pub mark: UserMark,
    /// The time of the mark's snapshot (none: it could not be read).
    pub time_ms: Option<u64>,
}

/// The latest snapshot and every commit user's mark in it.
#[derive(Clone, Debug, Default)]
pub struct Summary {
    /// The latest snapshot's id and time (none: an empty table, or a latest
    /// snapshot that does not decode).
    pub latest: Option<(u64, u64)>,
    /// By commit user, in byte order.
    pub users: Vec<UserSummary>,
}

impl Summary {
    /// Snapshots written since `u`'s last commit.
    fn lag_snapshots(&self, u: &UserSummary) -> Option<u64> {
        let (id, _) = self.latest?;
        Some(id.saturating_sub(u.mark.snapshot_id))
    }

    /// The latest snapshot's time minus that of `u`'s last commit: negative
    /// when the user's clock ran ahead of the latest writer's (each commit
    /// user stamps its snapshots with its own clock).
    fn lag_ms(&self, u: &UserSummary) -> Option<i64> {
        let (_, latest) = self.latest?;
        let diff = i128::from(latest) - i128::from(u.time_ms?);
        Some(i64::try_from(diff).unwrap_or(if diff < 0 { i64::MIN } else { i64::MAX }))
    }
}

/// An identifier as the text output shows it: a number, or END.
pub fn identifier_text(c: u64) -> String {
    if c == END {
        "END".into()
    } else {
        c.to_string()
    }
}

/// The summary's text lines.
pub fn summary_text(s: &Summary, rfc3339: fn(u64) -> String) -> String {
    let mut out = match s.latest {
        Some((id, time)) => format!(
            "{} commit user(s), as of the latest snapshot {id} ({})\n",
            s.users.len(),
            rfc3339(time)
        ),
        None => format!("{} commit user(s)\n", s.users.len()),
    };
    for u in &s.users {
        let time = u.time_ms.map_or_else(
            || "time unknown (its snapshot could not be read)".to_string(),
            |t| format!("time {t} ms ({})", rfc3339(t)),
        );
        let lag_ms = s
            .lag_ms(u)
            .map_or_else(|| "unknown".to_string(), |l| format!("{l} ms"));
        out.push_str(&format!(
            "  commit user {}: last identifier {} in snapshot {}, {time}; lag {} snapshot(s), {lag_ms}\n",
            render::json_str(&clip(&u.commit_user, 200)),
            identifier_text(u.mark.identifier),
            u.mark.snapshot_id,
            s.lag_snapshots(u).unwrap_or(0),
        ));
    }
    out
}

/// One line of the timeline.
#[derive(Debug, PartialEq, Eq)]
pub enum Event<'a> {
    /// A snapshot, with the names of the tags pointing at it.
    Snapshot(&'a Snapshot, Vec<&'a str>),
    /// A tag's creation.
    Tag(&'a Tag),
}

/// The timeline: the snapshots in id order (the order of the commits,
/// whatever the clocks of their writers said), each tag merged in at its
/// creation time, before the first snapshot written later (ties: the
/// snapshot first, as a tag is created after the snapshot it points at).
/// `tags` must be in the listing's order; `all_tags` (every tag read,
/// whatever `--since` kept) names the tags pointing at each snapshot.
pub fn timeline<'a>(
    snapshots: &'a [Snapshot],
    tags: &'a [Tag],
    all_tags: &'a [Tag],
) -> Vec<Event<'a>> {
    let mut by_time: Vec<&Tag> = tags.iter().collect();
    // Stable: equal times keep the listing's (natural) order.
    by_time.sort_by_key(|t| t.create_time_ms);
    // The names by snapshot, once (not one pass over the tags per snapshot).
    let mut pointing: BTreeMap<u64, Vec<&str>> = BTreeMap::new();
    for t in all_tags {
        pointing.entry(t.snapshot_id).or_default().push(&t.name);
    }
    let mut out = Vec::with_capacity(snapshots.len() + tags.len());
    let mut next = by_time.into_iter().peekable();
    for s in snapshots {
        while let Some(t) = next.next_if(|t| t.create_time_ms < s.time_ms) {
            out.push(Event::Tag(t));
        }
        let names = pointing.remove(&s.id).unwrap_or_default();
        out.push(Event::Snapshot(s, names));
    }
    out.extend(next.map(Event::Tag));
    out
}

/// The timeline's text lines.
pub fn timeline_text(events: &[Event<'_>], rfc3339: fn(u64) -> String) -> String {
    let mut out = String::new();
    for e in events {
        match e {
            Event::Snapshot(s, tags) => {
                out.push_str(&format!(
                    "  {}  snapshot {}  commit user {}  identifier {}",
                    rfc3339(s.time_ms),
                    s.id,
                    render::json_str(&clip(&s.commit_user, 200)),
                    identifier_text(s.identifier),
                ));
                if !tags.is_empty() {
                    let names: Vec<String> = tags
                        .iter()
                        .map(|n| render::json_str(&clip(n, 200)))
                        .collect();
                    out.push_str(&format!("  tags {}", names.join(", ")));
                }
                out.push('\n');
            }
            Event::Tag(t) => out.push_str(&format!(
                "  {}  tag {} created  snapshot {}  identifier {}  expires {}\n",
                rfc3339(t.create_time_ms),
                render::json_str(&clip(&t.name, 200)),
                t.snapshot_id,
                identifier_text(t.identifier),
                t.expire_time_ms
                    .map_or_else(|| "never".into(), |e| rfc3339(e)),
            )),
        }
    }
    out
}

// --- the JSON document --------------------------------------------------------

/// A checkpoint id or identifier in JSON: a number, or `"end"` (as in
/// TRACE-FORMAT documents).
struct Checkpoint(u64);

impl Serialize for Checkpoint {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        if self.0 == END {
            s.serialize_str("end")
        } else {
            s.serialize_u64(self.0)
        }
    }
}

/// A snapshot and a tag, as in a replay result (the replay's own documents).
pub use render::{SnapshotDoc, TagDoc};

#[derive(Serialize)]
struct UserDoc<'a> {
    commit_user: &'a str,
    identifier: Checkpoint,
    snapshot_id: u64,
    time_ms: Option<u64>,
    lag_snapshots: Option<u64>,
    lag_ms: Option<i64>,
}

#[derive(Serialize)]
struct LatestDoc {
    snapshot_id: u64,
    time_ms: u64,
}

#[derive(Serialize)]
#[serde(tag = "kind", rename_all = "lowercase")]
enum EventDoc<'a> {
    Snapshot {
        time_ms: u64,
        snapshot_id: u64,
        commit_user: &'a str,
        identifier: Checkpoint,
        tags: &'a [&'a str],
    },
    Tag {
        time_ms: u64,
        name: &'a str,
        snapshot_id: u64,
        identifier: Checkpoint,
        expire_time_ms: Option<u64>,
    },
}

#[derive(Serialize)]
struct InspectDoc<'a> {
    snapshots: Vec<SnapshotDoc<'a>>,
    tags: Vec<TagDoc<'a>>,
    users: Vec<UserDoc<'a>>,
    latest: Option<LatestDoc>,
    #[serde(skip_serializing_if = "Option::is_none")]
    timeline: Option<Vec<EventDoc<'a>>>,
    #[serde(skip_serializing_if = "<[String]>::is_empty")]
    problems: &'a [String],
}

/// `inspect --json`: see the module's documentation.
pub fn inspect_json(
    snapshots: &[Snapshot],
    tags: &[Tag],
    summary: &Summary,
    timeline: Option<&[Event<'_>]>,
    problems: &[String],
) -> String {
    let doc = InspectDoc {
        snapshots: snapshots.iter().map(SnapshotDoc::of).collect(),
        tags: tags.iter().map(TagDoc::of).collect(),
        users: summary
            .users
            .iter()
            .map(|u| UserDoc {
                commit_user: &u.commit_user,
                identifier: Checkpoint(u.mark.identifier),
                snapshot_id: u.mark.snapshot_id,
                time_ms: u.time_ms,
                lag_snapshots: summary.lag_snapshots(u),
                lag_ms: summary.lag_ms(u),
            })
            .collect(),
        latest: summary.latest.map(|(snapshot_id, time_ms)| LatestDoc {
            snapshot_id,
            time_ms,
        }),
        timeline: timeline.map(|events| events.iter().map(event_doc).collect()),
        problems,
    };
    to_canonical(&doc, true)
}

fn event_doc<'a>(e: &'a Event<'a>) -> EventDoc<'a> {
    match e {
        Event::Snapshot(s, tags) => EventDoc::Snapshot {
            time_ms: s.time_ms,
            snapshot_id: s.id,
            commit_user: &s.commit_user,
            identifier: Checkpoint(s.identifier),
            tags,
        },
        Event::Tag(t) => EventDoc::Tag {
            time_ms: t.create_time_ms,
            name: &t.name,
            snapshot_id: t.snapshot_id,
            identifier: Checkpoint(t.identifier),
            expire_time_ms: t.expire_time_ms,
        },
    }
}

/// The problems at the end of a command's text output, one a line after
/// their count (nothing when there are none).
pub fn problems_text(problems: &[String]) -> String {
    let mut out = String::new();
    if !problems.is_empty() {
        out.push_str(&format!("{} problem(s)\n", problems.len()));
        for p in problems {
            out.push_str(&format!("  {p}\n"));
        }
    }
    out
}

/// The document of `value` in the canonical layout.
pub fn canonical<T: Serialize>(value: &T) -> String {
    to_canonical(value, true)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn snapshot(id: u64, user: &str, identifier: u64, time_ms: u64) -> Snapshot {
        Snapshot {
            id,
            commit_user: user.into(),
            identifier,
            watermark: None,
            time_ms,
            committables: vec![(0, b"c".to_vec())],
        }
    }

    fn tag(name: &str, snapshot_id: u64, create_time_ms: u64) -> Tag {
        Tag {
            name: name.into(),
            snapshot_id,
            identifier: snapshot_id,
            create_time_ms,
            expire_time_ms: None,
        }
    }

    fn shape(events: &[Event<'_>]) -> Vec<String> {
        events
            .iter()
            .map(|e| match e {
                Event::Snapshot(s, tags) => format!("s{}{tags:?}", s.id),
                Event::Tag(t) => format!("t:{}", t.name),
            })
            .collect()
    }

    #[test]
    fn the_timeline_keeps_commit_order_and_merges_tags_by_time() {
        // Snapshot 3's writer has a clock behind snapshot 2's: the commits
        // stay in id order, and a tag goes before the first later snapshot.
        let snapshots = [
            snapshot(1, "a", 1, 10),
            snapshot(2, "a", 2, 20),
            snapshot(3, "b", 1, 15),
            snapshot(4, "a", END, 40),
        ];
        let tags = [tag("savepoint-2", 2, 20), tag("savepoint-4", 4, 41)];
        let events = timeline(&snapshots, &tags, &tags);
        assert_eq!(
            shape(&events),
            [
                "s1[]",
                "s2[\"savepoint-2\"]",
                "s3[]",
                "t:savepoint-2",
                "s4[\"savepoint-4\"]",
                "t:savepoint-4"
            ]
        );
        let text = timeline_text(&events, |t| format!("T{t}"));
        assert!(
            text.contains(
                "  T40  snapshot 4  commit user \"a\"  identifier END  tags \"savepoint-4\"\n"
            ),
            "{text}"
        );
        assert!(
            text.contains(
                "  T41  tag \"savepoint-4\" created  snapshot 4  identifier 4  expires never\n"
            ),
            "{text}"
        );
        assert!(timeline(&[], &[], &[]).is_empty());
        // Tags only (every snapshot filtered out): in time order.
        let late = [tag("x", 9, 5), tag("y", 9, 1)];
        assert_eq!(shape(&timeline(&[], &late, &late)), ["t:y", "t:x"]);
    }

    #[test]
    fn lags_are_relative_to_the_latest_snapshot() {
        let user = |name: &str, snapshot_id, time_ms| UserSummary {
            commit_user: name.into(),
            mark: UserMark {
                identifier: END,
                snapshot_id,
            },
            time_ms,
        };
        let s = Summary {
            latest: Some((10, 1000)),
            users: vec![
                user("a", 10, Some(1000)),
                user("b", 4, Some(400)),
                user("c", 2, Some(2000)),
                user("d", 1, None),
            ],
        };
        let lags: Vec<_> = s
            .users
            .iter()
            .map(|u| (s.lag_snapshots(u), s.lag_ms(u)))
            .collect();
        assert_eq!(
            lags,
            [
                (Some(0), Some(0)),
                (Some(6), Some(600)),
                (Some(8), Some(-1000)),
                (Some(9), None)
            ]
        );
        let text = summary_text(&s, |t| format!("T{t}"));
        assert!(
            text.starts_with("4 commit user(s), as of the latest snapshot 10 (T1000)\n"),
            "{text}"
        );
        assert!(text.contains("  commit user \"b\": last identifier END in snapshot 4, time 400 ms (T400); lag 6 snapshot(s), 600 ms\n"), "{text}");
        assert!(text.contains("time unknown"), "{text}");
        let huge = Summary {
            latest: Some((1, u64::MAX)),
            users: vec![user("a", 1, Some(0))],
        };
        assert_eq!(huge.lag_ms(&huge.users[0]), Some(i64::MAX));
        assert_eq!(
            summary_text(&Summary::default(), |t| t.to_string()),
            "0 commit user(s)\n"
        );
    }
}
