//! `sinkcoord inspect`: the snapshots and tags of a table (a directory or a
//! table URL),
//! decoded through the component (or natively), with every problem of a
//! damaged table named; a summary per commit user, and `--timeline`
//! (issue 25, built in `report`).

use std::io::Write;

use clap::Args;
use sink_coordinator::{table, Snapshot, Storage, Tag};
use sink_coordinator_host::component::ComponentTable;
use sink_coordinator_host::storage::{AnyStorage, TableUrl};
use sink_coordinator_testkit::render;

use crate::layout;
use crate::limits::RuntimeLimitArgs;
use crate::order::natural_cmp;
use crate::report::{self, problems_text, Summary, UserSummary};
use crate::{clip, print, reading_runtime, Cli, Failure};

#[derive(Args, Debug)]
pub struct InspectArgs {
    /// The table: a directory, or a table URL (`file:///path`,
    /// `s3://bucket/prefix`, `gs://...`, `az://...`; object stores are
    /// configured from AWS_*, GOOGLE_*, AZURE_*).
    table: String,
    /// Print JSON instead of text: the `snapshots` and `tags` of a replay
    /// result, `users` (the summary per commit user), `latest`, `timeline`
    /// with --timeline, and `problems` when there are any (docs/cli.md).
    #[arg(long)]
    json: bool,
    /// Print the timeline instead of the listing: one line per snapshot in
    /// commit order (time, id, commit user, identifier, the tags pointing at
    /// it) and one per tag at its creation time. Failovers are not in it:
    /// a table does not record them (the job's logs do).
    #[arg(long)]
    timeline: bool,
    /// Also draw the timeline as a picture into FILE (SVG): a lane per
    /// commit user with its snapshots on a time axis, and the tags, each
    /// mark titled with its details. What is printed does not change.
    #[arg(long, value_name = "FILE")]
    svg: Option<std::path::PathBuf>,
    /// Decode the table with the Rust core natively instead of the component.
    #[arg(long)]
    pub(crate) native: bool,
    /// Show at most the N most recent snapshots (a gap is still reported).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    pub(crate) limit: Option<u64>,
    /// Show only snapshots written, and tags created, at or after this time:
    /// milliseconds since the Unix epoch, or RFC 3339 (2026-12-01T10:00:00Z).
    #[arg(long, value_name = "TIME", value_parser = parse_since)]
    since: Option<u64>,
    #[command(flatten)]
    pub(crate) limits: RuntimeLimitArgs,
}

/// Lists a table's snapshots and tags. A damaged table is listed as far as
/// it can be read: a gap in the snapshot ids, a snapshot or tag that does
/// not decode, a symbolic link or a stray file under `snapshot/`, a FIFO,
/// device, socket or directory at a key, or a directory that is not laid
/// out as a table (the Flink connector's `log/`) is a problem named on its
/// own line; the rest is still listed, and the command
/// then exits 1 (the listing on stdout, a summary on stderr).
pub fn cmd_inspect(cli: &Cli, args: &InspectArgs) -> Result<String, Failure> {
    let mut storage = TableUrl::parse(&args.table)
        .and_then(|url| url.open(false, &[]))
        .map_err(|e| Failure::host(e.to_string()))?;
    if !storage.removed_temp_files().is_empty() {
        let _ = writeln!(
            std::io::stderr(),
            "sinkcoord: removed {} temporary file(s) left by dead writers",
            storage.removed_temp_files().len()
        );
    }
    if crate::inspect_paimon::is_paimon(&mut storage) {
        let read = crate::inspect_paimon::read(cli, args, storage)?;
        return render_inspect(args, read.snapshots, read.tags, read.summary, read.problems);
    }
    let mut problems: Vec<String> = Vec::new();
    // A directory table: special files at keys and a foreign layout, which
    // the storage's listing does not show.
    let layout = match TableUrl::parse(&args.table)
        .ok()
        .as_ref()
        .and_then(TableUrl::dir)
    {
        Some(dir) => layout::scan(dir),
        None => layout::Layout::default(),
    };
    problems.extend(layout.problems);

    // The snapshot ids present, from the file names.
    let (keys, listing_problems) = storage
        .list_tolerant(table::SNAPSHOT_PREFIX)
        .map_err(|e| Failure::host(format!("cannot list snapshots: {e}")))?;
    problems.extend(listing_problems);
    let mut ids = Vec::new();
    for key in &keys {
        match snapshot_id_of(key) {
            Some(id) => ids.push((id, key.clone())),
            None => problems.push(format!(
                "{}: not a snapshot file name (expected {}<20 digits>)",
                render::json_str(&clip(key, 200)),
                table::SNAPSHOT_PREFIX
            )),
        }
    }
    ids.sort();
    // After `sinkcoord expire`, the expired ids' keys hold expiry marks (snapshot
    // 1's always) or are gone: not snapshots, and not a gap.
    let mut expected = 1u64;
    if ids.first().is_some_and(|(id, _)| *id == 1) {
        if let Ok(Some(bytes)) = storage.get(&table::snapshot_key(1)) {
            if let Some(earliest) = table::decode_expiry_mark(&bytes) {
                ids.retain(|(id, _)| *id >= earliest);
                expected = earliest;
            }
        }
    }
    // Ids held by a special file are there (no gap), but cannot be read.
    let mut all_ids: Vec<u64> = ids.iter().map(|(id, _)| *id).collect();
    all_ids.extend(&layout.special_ids);
    all_ids.sort();
    all_ids.dedup();
    if let Some(limit) = args.limit {
        // Only the most recent snapshots are read.
        let keep = usize::try_from(limit).unwrap_or(usize::MAX).min(ids.len());
        ids.drain(..ids.len() - keep);
    }
    let from = expected;
    for id in all_ids.iter().filter(|id| **id >= from) {
        if *id > expected {
            problems.push(if *id - expected == 1 {
                format!("snapshot {expected} is missing (a gap in the snapshot ids)")
            } else {
                format!(
                    "snapshots {expected}..={} are missing (a gap in the snapshot ids)",
                    id - 1
                )
            });
        }
        expected = id.saturating_add(1);
    }

    // Read before the storage goes to the component's reader.
    let latest = all_ids.last().copied();
    let mut summary = summarize(&mut storage, latest, &ids);

    let tag_keys = match storage.list_tolerant(table::TAG_PREFIX) {
        Ok((keys, listing_problems)) => {
            problems.extend(listing_problems);
            keys
        }
        Err(e) => return Err(Failure::host(format!("cannot list tags: {e}"))),
    };
    // Each tag's bytes, decoded one at a time below.
    let mut tag_values = Vec::new();
    for key in &tag_keys {
        match storage.get(key) {
            Ok(Some(bytes)) => tag_values.push((key.clone(), bytes)),
            Ok(None) => {}
            Err(e) => problems.push(format!("{}: {e}", render::json_str(&clip(key, 200)))),
        }
    }

    let mut note = |key: &str, e: &dyn std::fmt::Display| {
        problems.push(format!(
            "{}: {}",
            render::json_str(&clip(key, 200)),
            clip(&e.to_string(), 400)
        ))
    };
    let (snapshots, tags) = if args.native {
        read_all(
            &ids,
            tag_values,
            |id| table::snapshot_by_id(&mut storage, id),
            |mut one| table::list_tags(&mut one),
            &mut note,
        )
    } else {
        let runtime = reading_runtime(cli, &args.limits)?;
        let mut reader =
            ComponentTable::new(&runtime, storage).map_err(|e| Failure::host(e.to_string()))?;
        read_all(
            &ids,
            tag_values,
            |id| reader.snapshot_by_id(id),
            |one| ComponentTable::new(&runtime, one).and_then(|mut t| t.list_tags()),
            &mut note,
        )
    };
    fill_times(&mut summary, &snapshots);
    render_inspect(args, snapshots, tags, summary, problems)
}

/// What `inspect` prints of the snapshots and tags read, whichever format:
/// the listing (or `--json`, `--timeline`), and exit 1 with the problems.
fn render_inspect(
    args: &InspectArgs,
    mut snapshots: Vec<Snapshot>,
    mut tags: Vec<Tag>,
    summary: Summary,
    problems: Vec<String>,
) -> Result<String, Failure> {
    // By the numbers in their names (savepoint-12 after savepoint-2), then
    // by snapshot (a stable sort keeps the component's order otherwise).
    tags.sort_by(|a, b| natural_cmp(&a.name, &b.name).then(a.snapshot_id.cmp(&b.snapshot_id)));
    let all_tags = tags.clone();
    if let Some(since) = args.since {
        snapshots.retain(|s| s.time_ms >= since);
        tags.retain(|t| t.create_time_ms >= since);
    }

    let drawn = (args.timeline || args.svg.is_some())
        .then(|| report::timeline(&snapshots, &tags, &all_tags));
    if let (Some(file), Some(events)) = (&args.svg, &drawn) {
        let picture = crate::picture::timeline_svg(&args.table, events, rfc3339);
        std::fs::write(file, picture).map_err(|e| {
            Failure::host(format!(
                "cannot write the picture to {}: {e}",
                file.display()
            ))
        })?;
    }
    let events = drawn.filter(|_| args.timeline);
    let out = if args.json {
        report::inspect_json(&snapshots, &tags, &summary, events.as_deref(), &problems)
    } else if let Some(events) = &events {
        let mut out = format!(
            "timeline of table {}: {} snapshot(s), {} tag(s), in commit order (failovers are not \
             recorded in a table)\n",
            args.table,
            snapshots.len(),
            tags.len()
        );
        out.push_str(&report::timeline_text(events, rfc3339));
        out.push_str(&problems_text(&problems));
        out
    } else {
        inspect_text(&args.table, &snapshots, &tags, &summary, &problems)
    };
    if problems.is_empty() {
        return Ok(out);
    }
    print(&out)?;
    Err(Failure::host(format!(
        "the table {} has {} problem(s), listed on stdout",
        args.table,
        problems.len()
    )))
}

/// `snapshot/00000000000000000042` -> 42 (the 20-digit names the core writes).
pub(crate) fn snapshot_id_of(key: &str) -> Option<u64> {
    let digits = key.strip_prefix(table::SNAPSHOT_PREFIX)?;
    if digits.len() != 20 || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let id = digits.parse::<u64>().ok()?;
    (table::snapshot_key(id) == key && id > 0).then_some(id)
}

fn inspect_text(
    table: &str,
    snapshots: &[Snapshot],
    tags: &[Tag],
    summary: &Summary,
    problems: &[String],
) -> String {
    let mut out = format!("table {table}\n{} snapshot(s)\n", snapshots.len());
    for s in snapshots {
        out.push_str(&format!(
            "  snapshot {}: commit user {}, identifier {}, watermark {}, time {} ms ({}), {} committable(s)\n",
            s.id,
            render::json_str(&clip(&s.commit_user, 200)),
            render::checkpoint(s.identifier),
            s.watermark.map_or_else(|| "none".into(), |w| w.to_string()),
            s.time_ms,
            rfc3339(s.time_ms),
            s.committables.len(),
        ));
    }
    out.push_str(&format!("{} tag(s)\n", tags.len()));
    for t in tags {
        out.push_str(&format!(
            "  tag {}: snapshot {} (identifier {}), created {} ms ({}), expires {}\n",
            render::json_str(&clip(&t.name, 200)),
            t.snapshot_id,
            render::checkpoint(t.identifier),
            t.create_time_ms,
            rfc3339(t.create_time_ms),
            t.expire_time_ms
                .map_or_else(|| "never".into(), |e| format!("{e} ms ({})", rfc3339(e))),
        ));
    }
    out.push_str(&report::summary_text(summary, rfc3339));
    out.push_str(&problems_text(problems));
    out
}

/// The summary per commit user, from the latest snapshot's record: every
/// snapshot carries each commit user's last (identifier, snapshot id), and
/// the latest one's is what a coordinator reads as what the user has
/// committed (the exactly-once filter). The component's `table` interface
/// does not return these marks, so the record is decoded by the Rust core
/// here, whichever decoder lists the table. The times of marks outside the
/// snapshots read (`--limit`) are read here too; the others are filled in
/// from the listing ([`fill_times`]). A latest snapshot that does not
/// decode gives no summary (the listing names its problem).
fn summarize(storage: &mut AnyStorage, latest: Option<u64>, listed: &[(u64, String)]) -> Summary {
    let Some(latest) = latest else {
        return Summary::default();
    };
    let key = table::snapshot_key(latest);
    let stored = match storage.get(&key) {
        Ok(Some(bytes)) => table::decode_snapshot(&key, &bytes).ok(),
        _ => None,
    };
    let Some(stored) = stored else {
        return Summary::default();
    };
    let in_listing = |id: u64| listed.binary_search_by_key(&id, |(i, _)| *i).is_ok();
    let users = stored
        .users
        .iter()
        .map(|(user, mark)| {
            let time_ms = if mark.snapshot_id == latest {
                Some(stored.snapshot.time_ms)
            } else if in_listing(mark.snapshot_id) {
                None
            } else {
                table::snapshot_by_id(storage, mark.snapshot_id)
                    .ok()
                    .flatten()
                    .map(|s| s.time_ms)
            };
            UserSummary {
                commit_user: user.clone(),
                mark: *mark,
                time_ms,
            }
        })
        .collect();
    Summary {
        latest: Some((latest, stored.snapshot.time_ms)),
        users,
    }
}

/// The listed snapshots and tags through one reader (the native core's, or the
/// component's): `snapshot` reads one id, `tags_of` lists the tags of a table that holds
/// one tag's bytes (so that one bad tag does not hide the others); what fails is noted
/// by its key.
fn read_all<E: std::fmt::Display>(
    ids: &[(u64, String)],
    tag_values: Vec<(String, Vec<u8>)>,
    mut snapshot: impl FnMut(u64) -> Result<Option<Snapshot>, E>,
    mut tags_of: impl FnMut(sink_coordinator::MemStorage) -> Result<Vec<Tag>, E>,
    note: &mut dyn FnMut(&str, &dyn std::fmt::Display),
) -> (Vec<Snapshot>, Vec<Tag>) {
    let mut snapshots = Vec::new();
    for (id, key) in ids {
        match snapshot(*id) {
            Ok(Some(s)) => snapshots.push(s),
            Ok(None) => note(key, &"vanished while the table was read"),
            Err(e) => note(key, &e),
        }
    }
    let mut tags = Vec::new();
    for (key, bytes) in tag_values {
        let mut one = sink_coordinator::MemStorage::default();
        one.map.insert(key.clone(), bytes);
        match tags_of(one) {
            Ok(found) => tags.extend(found),
            Err(e) => note(&key, &e),
        }
    }
    (snapshots, tags)
}

/// The times of the summary's marks among the snapshots listed (sorted by
/// id); a snapshot that did not decode leaves its time unknown.
fn fill_times(summary: &mut Summary, snapshots: &[Snapshot]) {
    for u in &mut summary.users {
        if u.time_ms.is_none() {
            u.time_ms = snapshots
                .binary_search_by_key(&u.mark.snapshot_id, |s| s.id)
                .ok()
                .and_then(|i| snapshots.get(i))
                .map(|s| s.time_ms);
        }
    }
}

/// Milliseconds since the Unix epoch as RFC 3339 in UTC
/// (`2026-12-01T10:00:00.123Z`); a time beyond jiff's range (year 9999)
/// is said so.
pub(crate) fn rfc3339(ms: u64) -> String {
    i64::try_from(ms)
        .ok()
        .and_then(|ms| jiff::Timestamp::from_millisecond(ms).ok())
        .map_or_else(|| "beyond 9999-12-31".into(), |t| t.to_string())
}

/// `--since`: milliseconds, or an RFC 3339 timestamp.
fn parse_since(text: &str) -> Result<u64, String> {
    if let Ok(ms) = text.parse::<u64>() {
        return Ok(ms);
    }
    let t: jiff::Timestamp = text.parse().map_err(|e| {
        format!("expected milliseconds since the Unix epoch or an RFC 3339 time: {e}")
    })?;
    u64::try_from(t.as_millisecond()).map_err(|_| "a time before 1970".to_string())
}
