//! `sinkcoord expire`: snapshot retention, tag expiry and orphan data files
//! (issue 25; the design and its safety argument: docs/retention.md).
//!
//! What one run does, in this order:
//!
//! 1. deletes the tags whose expire time has passed (as `tags expire`, in
//!    both table formats);
//! 2. chooses the earliest snapshot to keep, `E`: the newest `--retain-last`
//!    snapshots and those younger than `--retain-ms` are kept, and `E` is
//!    never above the latest snapshot, above any commit user's mark (the
//!    snapshot of its last commit, which a running coordinator's view can
//!    still be at), or, in the native log, above a tag's snapshot;
//! 3. records `E` first (the native log: an expiry mark in snapshot 1's key;
//!    Paimon: `snapshot/EARLIEST`), then deletes the snapshots below it in
//!    ascending order, and, in a Paimon table, the manifest lists and
//!    manifests that only expired snapshots referenced;
//! 4. with `--orphans`, lists (with `--delete-orphans`, deletes) the data
//!    files of a Paimon table that no kept snapshot or tag references and
//!    that are older than `--grace-ms` (expire_paimon.rs).
//!
//! A coordinator 0.2.6 or later reads the expired table as docs/retention.md
//! says; an older one refuses it with `corrupt-state` (it never takes it for
//! an empty table).

use std::collections::BTreeMap;

use clap::Args;
use indicatif::{ProgressBar, ProgressStyle};
use sink_coordinator::table::{self, TableFormatKind, TableLog, UserMark};
use sink_coordinator::{Storage, Tag};
use sink_coordinator_host::storage::{AnyStorage, TableUrl};
use sink_coordinator_paimon::snapshot as psnap;
use sink_coordinator_testkit::render;

use crate::expire_paimon::{self, Orphan};
use crate::expire_report::{json, text, Reason};
use crate::order::natural_cmp;
use crate::tags::{self, Outcome};
use crate::{clip, print, Failure};

#[derive(Args, Debug)]
#[command(
    after_help = "Exit status: 0 done (also: nothing to expire); 1 the table cannot be \
    opened or read, is not a table, or something could not be read or deleted (listed on \
    stdout; what could not be decided is kept); 2 a usage error; 3 the storage failed."
)]
pub struct ExpireArgs {
    /// The table: a directory, or a table URL (`file:///path`,
    /// `s3://bucket/prefix`, `gs://...`, `az://...`).
    pub(crate) table: String,
    /// Keep the newest N snapshots (N >= 1).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    pub(crate) retain_last: Option<u64>,
    /// Keep the snapshots committed less than MS milliseconds before now.
    /// With --retain-last too, a snapshot is kept if either keeps it.
    #[arg(long, value_name = "MS")]
    pub(crate) retain_ms: Option<u64>,
    /// Never expire a snapshot committed less than MS milliseconds before now,
    /// whatever the retention says: a coordinator that started but has not
    /// committed for longer than this could be left behind (docs/retention.md).
    #[arg(long, value_name = "MS", default_value_t = 3_600_000)]
    pub(crate) min_age_ms: u64,
    /// Do not let this commit user's mark hold expiry back (repeatable): say so
    /// only for a user whose coordinator no longer runs (docs/retention.md).
    #[arg(long = "unpin-user", value_name = "USER")]
    pub(crate) unpin_users: Vec<String>,
    /// The time to compare with, in milliseconds since the Unix epoch
    /// (default: the system clock).
    #[arg(long, value_name = "MS")]
    pub(crate) now_ms: Option<u64>,
    /// List the data files of a Paimon table that nothing kept references.
    #[arg(long)]
    pub(crate) orphans: bool,
    /// Delete those orphan data files (implies --orphans).
    #[arg(long)]
    pub(crate) delete_orphans: bool,
    /// An unreferenced data file younger than this is not an orphan: a writer
    /// may have written it for a commit still to come (one day by default).
    #[arg(long, value_name = "MS", default_value_t = 86_400_000)]
    pub(crate) grace_ms: u64,
    /// List what would be deleted; delete nothing.
    #[arg(long)]
    pub(crate) dry_run: bool,
    /// Print JSON (docs/cli.md).
    #[arg(long)]
    pub(crate) json: bool,
}

/// What one expired tag became.
pub(crate) struct TagRun {
    pub(crate) tag: Tag,
    pub(crate) outcome: Outcome,
}

/// Everything a run found and did, for the report.
pub(crate) struct Run {
    pub(crate) format: TableFormatKind,
    pub(crate) now: u64,
    pub(crate) latest: u64,
    pub(crate) earliest_before: u64,
    pub(crate) earliest: u64,
    pub(crate) reason: Reason,
    /// Snapshot ids deleted (or, dry run, to delete).
    pub(crate) snapshots: Vec<u64>,
    /// Manifest files deleted (Paimon).
    pub(crate) manifests: Vec<String>,
    /// Old expiry marks deleted (native).
    pub(crate) marks_deleted: usize,
    pub(crate) tags_expired: Vec<TagRun>,
    pub(crate) tags_kept: usize,
    pub(crate) orphans: Option<Vec<Orphan>>,
    pub(crate) problems: Vec<String>,
}

pub fn cmd_expire(args: &ExpireArgs) -> Result<String, Failure> {
    if args.retain_last.is_none()
        && args.retain_ms.is_none()
        && !args.orphans
        && !args.delete_orphans
    {
        return Err(Failure::malformed(
            "nothing to do: give --retain-last N, --retain-ms MS, or --orphans",
        ));
    }
    let url = TableUrl::parse(&args.table).map_err(|e| Failure::host(e.to_string()))?;
    tags::refuse_flink_root(&url)?;
    let mut storage = url
        .open(false, &[])
        .map_err(|e| Failure::host(e.to_string()))?;
    let format = if crate::inspect_paimon::is_paimon(&mut storage) {
        TableFormatKind::Paimon
    } else {
        TableFormatKind::Native
    };
    if (args.orphans || args.delete_orphans) && format != TableFormatKind::Paimon {
        return Err(Failure::malformed(format!(
            "{}: --orphans lists the data files of an Apache Paimon table; a native table's \
             committables are opaque bytes, so no data file is known to it",
            args.table
        )));
    }
    let now = args.now_ms.unwrap_or_else(tags::now_ms);
    let mut run = Run {
        format,
        now,
        latest: 0,
        earliest_before: 1,
        earliest: 1,
        reason: Reason::NotAsked,
        snapshots: Vec::new(),
        manifests: Vec::new(),
        marks_deleted: 0,
        tags_expired: Vec::new(),
        tags_kept: 0,
        orphans: None,
        problems: Vec::new(),
    };
    let kept_tags = expire_tags(args, &mut storage, &mut run)?;
    let mut log = TableLog::with_format(format).map_err(|e| Failure::host(e.to_string()))?;
    log.load(&mut storage)
        .map_err(|e| Failure::storage(format!("cannot read {}: {e}", args.table)))?;
    run.latest = log.latest_id();
    if run.latest > 0 {
        run.earliest_before = log
            .earliest(&mut storage)
            .map_err(|e| Failure::storage(format!("cannot read {}: {e}", args.table)))?;
        choose_earliest(args, &mut storage, &log, &kept_tags, &mut run)?;
        if run.earliest > run.earliest_before {
            expire_snapshots(args, &mut storage, &mut run)?;
        }
        if format != TableFormatKind::Paimon && run.earliest > 1 {
            delete_old_marks(args, &mut storage, &mut run);
        }
    }
    if args.orphans || args.delete_orphans {
        let kept_from = if args.dry_run {
            run.earliest
        } else {
            run.earliest.max(run.earliest_before)
        };
        run.orphans = Some(expire_paimon::orphans(
            &mut storage,
            kept_from,
            run.latest,
            now.saturating_sub(args.grace_ms),
            args.delete_orphans && !args.dry_run,
            &mut run.problems,
        ));
    }
    let out = if args.json {
        json(args, &run)
    } else {
        text(args, &run)
    };
    if run.problems.is_empty() {
        return Ok(out);
    }
    print(&out)?;
    Err(Failure::host(format!(
        "{} problem(s) while expiring {}, listed on stdout",
        run.problems.len(),
        args.table
    )))
}

/// Step 1: the expired tags deleted; returns the tags kept (with their keys).
fn expire_tags(
    args: &ExpireArgs,
    storage: &mut AnyStorage,
    run: &mut Run,
) -> Result<Vec<(String, Tag)>, Failure> {
    let all = table::list_tags(storage)
        .map_err(|e| Failure::storage(format!("cannot read the tags of {}: {e}", args.table)))?;
    let mut kept = Vec::new();
    for tag in all {
        let key = match run.format {
            TableFormatKind::Paimon => match psnap::tag_key(&tag.name) {
                Ok(k) => k,
                Err(_) => {
                    run.problems.push(format!(
                        "tag {}: not a Paimon tag name (kept)",
                        render::json_str(&clip(&tag.name, 200))
                    ));
                    continue;
                }
            },
            _ => table::tag_key(&tag.name),
        };
        if tag.expire_time_ms.is_none_or(|e| e >= run.now) {
            kept.push((key, tag));
            continue;
        }
        let outcome = if args.dry_run {
            Outcome::DryRun
        } else {
            match storage.get(&key) {
                Ok(Some(bytes)) => tags::delete_unchanged(storage, &key, &bytes, &mut run.problems),
                Ok(None) => Outcome::AlreadyGone,
                Err(e) => {
                    run.problems
                        .push(format!("{}: {e} (kept)", render::json_str(&key)));
                    Outcome::Failed
                }
            }
        };
        if matches!(outcome, Outcome::Changed | Outcome::Failed) {
            kept.push((key, tag.clone()));
        }
        run.tags_expired.push(TagRun { tag, outcome });
    }
    run.tags_expired
        .sort_by(|a, b| natural_cmp(&a.tag.name, &b.tag.name));
    run.tags_kept = kept.len();
    Ok(kept)
}

/// The commit time of snapshot `id` (one get), `None` if it is missing.
fn time_of(
    storage: &mut AnyStorage,
    format: TableFormatKind,
    id: u64,
) -> Result<Option<u64>, String> {
    match format {
        TableFormatKind::Paimon => {
            let Some(bytes) = storage
                .get(&psnap::snapshot_key(id as i64))
                .map_err(|e| e.to_string())?
            else {
                return Ok(None);
            };
            let s = psnap::decode_snapshot(&bytes).map_err(|e| format!("{e:?}"))?;
            Ok(Some(u64::try_from(s.time_millis).unwrap_or(0)))
        }
        _ => Ok(table::snapshot_by_id(storage, id)
            .map_err(|e| e.to_string())?
            .map(|s| s.time_ms)),
    }
}

/// The first snapshot from the earliest kept on that was committed at or
/// after `since` (the latest if none was).
fn first_younger(
    args: &ExpireArgs,
    storage: &mut AnyStorage,
    run: &Run,
    since: u64,
) -> Result<u64, Failure> {
    for id in run.earliest_before..=run.latest {
        match time_of(storage, run.format, id) {
            Ok(Some(t)) if t >= since => return Ok(id),
            Ok(_) => {}
            Err(e) => {
                return Err(Failure::storage(format!(
                    "cannot read snapshot {id} of {}: {e}",
                    args.table
                )))
            }
        }
    }
    Ok(run.latest)
}

/// The newest Paimon snapshot from `before` to `latest` with this project's marks.
fn newest_marked(storage: &mut AnyStorage, before: u64, latest: u64) -> Option<u64> {
    (before..=latest).rev().find(|id| {
        matches!(storage.get(&psnap::snapshot_key(*id as i64)), Ok(Some(b))
            if psnap::decode_snapshot(&b).is_ok_and(|s| matches!(s.marks(), Ok(Some(_)))))
    })
}

/// A progress bar on stderr for a long step (indicatif draws nothing when stderr
/// is not a terminal, and this draws nothing for a short one).
fn progress(total: usize, what: &str) -> ProgressBar {
    if total < 100 {
        return ProgressBar::hidden();
    }
    let pb = ProgressBar::new(total as u64);
    pb.set_style(
        ProgressStyle::with_template(&format!(
            "{{elapsed_precise}} [{{bar:40}}] {{pos}}/{{len}} {what}"
        ))
        .unwrap_or_else(|_| ProgressStyle::default_bar()),
    );
    pb
}

/// Step 2: the earliest snapshot to keep, and why.
fn choose_earliest(
    args: &ExpireArgs,
    storage: &mut AnyStorage,
    log: &TableLog,
    kept_tags: &[(String, Tag)],
    run: &mut Run,
) -> Result<(), Failure> {
    let (latest, before) = (run.latest, run.earliest_before);
    let by_count = args
        .retain_last
        .map(|n| latest.saturating_sub(n - 1).max(1));
    let by_time = match args.retain_ms {
        None => None,
        Some(ms) => Some(first_younger(
            args,
            storage,
            run,
            run.now.saturating_sub(ms),
        )?),
    };
    let (mut earliest, mut reason) = match (by_count, by_time) {
        (Some(a), Some(b)) => (a.min(b), Reason::Retention),
        (Some(a), None) | (None, Some(a)) => (a, Reason::Retention),
        (None, None) => (before, Reason::NotAsked),
    };
    if earliest >= latest && reason == Reason::Retention {
        (earliest, reason) = (latest, Reason::Latest);
    }
    // A coordinator that started but has not committed yet has no mark: its
    // view of the table is as old as its start. Nothing younger than
    // --min-age-ms goes, so such a view is not left behind E either.
    if args.min_age_ms > 0 && earliest > before {
        let young = first_younger(args, storage, run, run.now.saturating_sub(args.min_age_ms))?;
        if young < earliest {
            (earliest, reason) = (young, Reason::MinAge);
        }
    }
    let marks: &BTreeMap<String, UserMark> = log.marks();
    for (user, mark) in marks {
        if mark.snapshot_id < earliest && !args.unpin_users.iter().any(|u| u == user) {
            earliest = mark.snapshot_id;
            reason = Reason::Mark {
                commit_user: user.clone(),
            };
        }
    }
    if run.format == TableFormatKind::Paimon {
        // Snapshots Paimon itself wrote carry no marks: the log reads the marks of
        // the newest snapshot that has them, so that one stays.
        if let Some(id) = newest_marked(storage, before, latest) {
            if id < earliest {
                earliest = id;
                reason = Reason::Marked { snapshot_id: id };
            }
        }
    } else {
        // A native tag is a pointer into the log: its snapshot stays. (A Paimon
        // tag is a whole snapshot of its own: its files are kept instead.)
        for (_, tag) in kept_tags {
            if tag.snapshot_id < earliest && tag.snapshot_id >= before {
                earliest = tag.snapshot_id;
                reason = Reason::Tag {
                    name: tag.name.clone(),
                };
            }
        }
    }
    if earliest < before {
        (earliest, reason) = (before, Reason::Expired);
    }
    run.earliest = earliest.max(before);
    run.reason = reason;
    Ok(())
}

/// The ids of the snapshots listed below `earliest` (a listing: an expiry cut
/// short before leaves some, which a new run deletes too).
fn ids_below(
    storage: &mut AnyStorage,
    format: TableFormatKind,
    earliest: u64,
) -> Result<Vec<u64>, String> {
    let keys = storage.list("snapshot/").map_err(|e| e.to_string())?;
    let mut ids: Vec<u64> = keys
        .iter()
        .filter_map(|k| {
            let name = k.strip_prefix("snapshot/")?;
            match format {
                TableFormatKind::Paimon => psnap::parse_snapshot_file_name(name).map(|i| i as u64),
                _ => crate::inspect::snapshot_id_of(k),
            }
        })
        .filter(|id| *id < earliest)
        .collect();
    ids.sort_unstable();
    Ok(ids)
}

/// Step 3: the latest hint if it is below `E`, then `E` recorded, then the
/// snapshots below it expired in ascending order (marked in the native log,
/// deleted in Paimon, with the manifests that only they referenced).
fn expire_snapshots(
    args: &ExpireArgs,
    storage: &mut AnyStorage,
    run: &mut Run,
) -> Result<(), Failure> {
    let e = run.earliest;
    let fail = |what: &str, err: &dyn std::fmt::Display| {
        Failure::storage(format!(
            "{what} of {}: {err} (nothing below it was deleted)",
            args.table
        ))
    };
    let mut ids =
        ids_below(storage, run.format, e).map_err(|err| fail("cannot list the snapshots", &err))?;
    if run.format != TableFormatKind::Paimon {
        // The native log marks what it expires (snapshot 1's key first): the
        // snapshots from the previous earliest on, and any left unmarked below
        // it by a run cut short (read to tell them from marks).
        let mut unmarked = Vec::new();
        for id in ids {
            if id >= run.earliest_before {
                unmarked.push(id);
                continue;
            }
            match storage.get(&table::snapshot_key(id)) {
                Ok(Some(b)) if table::decode_expiry_mark(&b).is_none() => unmarked.push(id),
                Ok(_) => {}
                Err(err) => return Err(fail(&format!("cannot read snapshot {id}"), &err)),
            }
        }
        ids = unmarked;
    }
    run.snapshots = ids.clone();
    let manifests = if run.format == TableFormatKind::Paimon {
        match expire_paimon::only_expired_manifests(storage, &ids, e, run.latest) {
            Ok(m) => m,
            Err(why) => {
                run.problems.push(format!("manifests kept: {why}"));
                Vec::new()
            }
        }
    } else {
        Vec::new()
    };
    run.manifests = manifests.clone();
    if args.dry_run {
        return Ok(());
    }
    // Never lower the earliest kept: another run may have gone further since
    // this one read it (run one expiry per table at a time; this narrows the
    // window to the read before the write).
    let now_earliest = TableLog::with_format(run.format)
        .and_then(|mut l| l.earliest(storage))
        .map_err(|err| fail("cannot read the earliest snapshot kept", &err))?;
    if now_earliest >= e {
        run.problems.push(format!(
            "another expiry kept snapshots from {now_earliest} on meanwhile: nothing done"
        ));
        run.snapshots.clear();
        run.manifests.clear();
        return Ok(());
    }
    // The latest-snapshot hint first, if it names a snapshot below E: a
    // reader that reads it from now on starts above the range being expired.
    let hint_key = match run.format {
        TableFormatKind::Paimon => psnap::LATEST_KEY,
        _ => table::LATEST_HINT,
    };
    let hinted = storage.get(hint_key).ok().flatten().and_then(|b| {
        std::str::from_utf8(&b)
            .ok()
            .and_then(|s| s.trim().parse::<u64>().ok())
    });
    if hinted.is_none_or(|h| h < e) {
        let bytes = match run.format {
            TableFormatKind::Paimon => psnap::hint_bytes(run.latest as i64),
            _ => run.latest.to_string().into_bytes(),
        };
        storage
            .put(hint_key, &bytes)
            .map_err(|err| fail("cannot write the latest-snapshot hint", &err))?;
    }
    match run.format {
        TableFormatKind::Paimon => storage
            .put(psnap::EARLIEST_KEY, &psnap::hint_bytes(e as i64))
            .map_err(|err| fail("cannot write snapshot/EARLIEST", &err))?,
        _ => storage
            .put(&table::snapshot_key(1), &table::expiry_mark(e))
            .map_err(|err| fail("cannot write the expiry mark", &err))?,
    }
    // In ascending order, and no further after a failure: a gap is never left
    // above what is still there (a new run goes on).
    let bar = progress(ids.len(), "snapshots expired");
    for id in ids {
        bar.inc(1);
        let done = match run.format {
            TableFormatKind::Paimon => storage.delete(&psnap::snapshot_key(id as i64)),
            _ if id == 1 => Ok(()),
            _ => storage.put(&table::snapshot_key(id), &table::expiry_mark(e)),
        };
        if let Err(err) = done {
            run.problems.push(format!(
                "cannot expire snapshot {id}: {err} (stopped there; a new run goes on)"
            ));
            return Ok(());
        }
    }
    for name in manifests {
        if let Err(err) = storage.delete(&psnap::manifest_key(&name)) {
            run.problems
                .push(format!("cannot delete manifest {name}: {err}"));
        }
    }
    Ok(())
}

/// The native log's expiry marks below the earliest kept that are older than
/// `--min-age-ms` are deleted (snapshot 1's stays): a probe that reached one
/// would come from a view older than that, which the minimum age rules out.
fn delete_old_marks(args: &ExpireArgs, storage: &mut AnyStorage, run: &mut Run) {
    let Ok(keys) = storage.list(table::SNAPSHOT_PREFIX) else {
        run.problems
            .push("cannot list the snapshots: old expiry marks kept".into());
        return;
    };
    let before = run.now.saturating_sub(args.min_age_ms);
    let mut ids: Vec<u64> = keys
        .iter()
        .filter_map(|k| crate::inspect::snapshot_id_of(k))
        .filter(|id| *id > 1 && *id < run.earliest)
        .collect();
    ids.sort_unstable();
    let bar = progress(ids.len(), "old expiry marks looked at");
    for id in ids {
        bar.inc(1);
        let key = table::snapshot_key(id);
        let old_mark = matches!(storage.get(&key), Ok(Some(b)) if table::decode_expiry_mark(&b).is_some())
            && matches!(storage.modified_ms(&key), Ok(Some(t)) if t < before);
        if !old_mark {
            // Ascending: the marks after a young one are younger still.
            break;
        }
        if !args.dry_run {
            if let Err(err) = storage.delete(&key) {
                run.problems.push(format!(
                    "cannot delete the expiry mark of snapshot {id}: {err}"
                ));
                break;
            }
        }
        run.marks_deleted += 1;
    }
}
