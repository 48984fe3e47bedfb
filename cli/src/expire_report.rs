//! What `sinkcoord expire` reports (text and `--json`, docs/cli.md), and why
//! the earliest kept snapshot is where it is.

use serde::Serialize;
use sink_coordinator::table::TableFormatKind;
use sink_coordinator_testkit::render;

use crate::clip;
use crate::expire::{ExpireArgs, Run};
use crate::expire_paimon::Orphan;
use crate::report::{self, TagDoc};
use crate::tags::{self, Outcome};

/// Why the earliest kept snapshot is where it is.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case", tag = "reason")]
pub enum Reason {
    /// No retention was asked for.
    NotAsked,
    /// `--retain-last` and `--retain-ms` allow it.
    Retention,
    /// The latest snapshot is always kept.
    Latest,
    /// A commit user's mark (its last commit) is there.
    Mark { commit_user: String },
    /// The newest snapshot with this project's marks (Paimon: those after it
    /// were written by Paimon itself).
    Marked { snapshot_id: u64 },
    /// A tag points there (native log).
    Tag { name: String },
    /// `--min-age-ms` keeps the younger snapshots.
    MinAge,
    /// An earlier expiry had already gone this far.
    Expired,
}

impl Reason {
    pub(crate) fn text(&self) -> String {
        match self {
            Reason::NotAsked => "no --retain-last or --retain-ms given".into(),
            Reason::Retention => "--retain-last/--retain-ms".into(),
            Reason::Latest => "the latest snapshot is always kept".into(),
            Reason::Mark { commit_user } => format!(
                "commit user {} is marked there (its last commit; --unpin-user lifts it)",
                render::json_str(&clip(commit_user, 200))
            ),
            Reason::Marked { .. } => "the newest snapshot with the commit users' marks (the \
                 later ones were written by Paimon itself)"
                .into(),
            Reason::Tag { name } => {
                format!("tag {} points there", render::json_str(&clip(name, 200)))
            }
            Reason::MinAge => "it is younger than --min-age-ms".into(),
            Reason::Expired => "an earlier expiry kept it".into(),
        }
    }
}

fn format_name(f: TableFormatKind) -> &'static str {
    match f {
        TableFormatKind::Paimon => "paimon",
        _ => "native",
    }
}

pub(crate) fn text(args: &ExpireArgs, run: &Run) -> String {
    let mut out = format!(
        "table {} ({}): {}\n",
        args.table,
        format_name(run.format),
        if run.latest == 0 {
            "no snapshots".to_string()
        } else {
            format!("snapshots {}..={}", run.earliest_before, run.latest)
        }
    );
    let deleted = run
        .tags_expired
        .iter()
        .filter(|t| t.outcome == Outcome::Deleted)
        .count();
    out.push_str(&format!(
        "tags: {} expired before {} ms{}, {} kept\n",
        run.tags_expired.len(),
        run.now,
        if args.dry_run {
            " (dry run: nothing deleted)".to_string()
        } else {
            format!(" ({deleted} deleted)")
        },
        run.tags_kept
    ));
    for t in &run.tags_expired {
        out.push_str(&format!(
            "  {} tag {}: snapshot {}, expired {} ms\n",
            tags::outcome_text(t.outcome),
            render::json_str(&clip(&t.tag.name, 200)),
            t.tag.snapshot_id,
            t.tag.expire_time_ms.unwrap_or(0)
        ));
    }
    if run.latest > 0 {
        let verb = if args.dry_run {
            "would expire"
        } else {
            "expired"
        };
        if run.earliest > run.earliest_before {
            out.push_str(&format!(
                "snapshots: {verb} {}..={} ({} snapshot(s)), kept {}..={}: {}\n",
                run.earliest_before,
                run.earliest - 1,
                run.earliest - run.earliest_before,
                run.earliest,
                run.latest,
                run.reason.text()
            ));
        } else {
            out.push_str(&format!(
                "snapshots: none to expire, kept {}..={}: {}\n",
                run.earliest,
                run.latest,
                run.reason.text()
            ));
        }
        if run.marks_deleted > 0 {
            let verb = if args.dry_run {
                "would delete"
            } else {
                "deleted"
            };
            out.push_str(&format!(
                "expiry marks: {verb} {} older than --min-age-ms (snapshot 1's stays)\n",
                run.marks_deleted
            ));
        }
        if !run.manifests.is_empty() {
            out.push_str(&format!(
                "manifests: {verb} {} file(s) only expired snapshots referenced\n",
                run.manifests.len()
            ));
        }
    }
    if let Some(orphans) = &run.orphans {
        let verb = if args.delete_orphans && !args.dry_run {
            "deleted"
        } else {
            "found"
        };
        out.push_str(&format!(
            "orphan data files (unreferenced, older than {} ms): {} {verb}\n",
            args.grace_ms,
            orphans.len()
        ));
        for o in orphans {
            out.push_str(&format!(
                "  {} (modified {} ms){}\n",
                render::json_str(&clip(&o.key, 300)),
                o.modified_ms,
                if o.deleted { ", deleted" } else { "" }
            ));
        }
    }
    out.push_str(&report::problems_text(&run.problems));
    out
}

#[derive(Serialize)]
struct TagRunDoc<'a> {
    #[serde(flatten)]
    tag: TagDoc<'a>,
    outcome: Outcome,
}

#[derive(Serialize)]
struct ExpireDoc<'a> {
    format: &'static str,
    now_ms: u64,
    dry_run: bool,
    latest: u64,
    earliest_before: u64,
    earliest: u64,
    kept_because: &'a Reason,
    expired_snapshots: &'a [u64],
    expired_manifests: &'a [String],
    deleted_marks: usize,
    expired_tags: Vec<TagRunDoc<'a>>,
    kept_tags: usize,
    #[serde(skip_serializing_if = "Option::is_none")]
    orphans: Option<&'a [Orphan]>,
    problems: &'a [String],
}

pub(crate) fn json(args: &ExpireArgs, run: &Run) -> String {
    report::canonical(&ExpireDoc {
        format: format_name(run.format),
        now_ms: run.now,
        dry_run: args.dry_run,
        latest: run.latest,
        earliest_before: run.earliest_before,
        earliest: run.earliest,
        kept_because: &run.reason,
        expired_snapshots: &run.snapshots,
        expired_manifests: &run.manifests,
        deleted_marks: run.marks_deleted,
        expired_tags: run
            .tags_expired
            .iter()
            .map(|t| TagRunDoc {
                tag: TagDoc::of(&t.tag),
                outcome: t.outcome,
            })
            .collect(),
        kept_tags: run.tags_kept,
        orphans: run.orphans.as_deref(),
        problems: &run.problems,
    })
}
