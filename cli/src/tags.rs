//! `sinkcoord tags expire`: deletes the tags whose expire time has passed
//! (issue 25). The coordinator records an expire time in every tag it
//! creates with `tag-time-retained`, and nothing acted on it.
//!
//! Only keys under `tag/` are ever deleted, never a snapshot or the hint,
//! through the storage every other command opens (a directory, `file://`,
//! `s3://`, `gs://`, `az://`). Deleting a tag cannot break a coordinator,
//! running or not (read in guest/src/savepoint.rs and table/):
//!
//! - no commit reads a tag: exactly-once comes from the snapshots' per-user
//!   marks, and tagging is a `put_if_absent` whose `false` (the tag exists)
//!   and `true` are both success, so a savepoint owed a tag is never held
//!   up by a tag that is gone;
//! - an abort deletes only `savepoint-<s>`, by name, after reading it; a
//!   missing tag reads as absent (`Ok(false)`), and deleting a missing key
//!   succeeds (the storage contract), so an expiry racing an abort is fine;
//! - a restored instance that still owes a savepoint its tag creates it
//!   again if it is gone: it comes back with a new create and expire time,
//!   and a later expiry deletes it again once that has passed.
//!
//! Storage has no conditional delete: between the read and the delete a
//! coordinator could delete the tag and create another of the same name
//! (only a restored instance re-creating an owed tag does). The tag is read
//! again just before its delete and kept if its bytes changed, which
//! narrows that window to one storage call; what is lost then is a tag,
//! never a snapshot.
//!
//! Tag records are decoded by the Rust core natively (the same decoder the
//! component runs): no component runtime, so no limit options.

use clap::{Args, Subcommand};
use serde::Serialize;
use sink_coordinator::{table, MemStorage, Storage, Tag};
use sink_coordinator_host::storage::{AnyStorage, TableUrl};
use sink_coordinator_testkit::render;

use crate::order::natural_cmp;
use crate::report::{self, identifier_text, TagDoc};
use crate::{clip, print, Failure};

#[derive(Args, Debug)]
pub struct TagsArgs {
    #[command(subcommand)]
    op: TagsOp,
}

#[derive(Subcommand, Debug)]
enum TagsOp {
    /// Delete the tags whose expire time is before now (or --now-ms) and
    /// print what was done. Never touches a snapshot (`sinkcoord expire`
    /// expires snapshots, and these tags too).
    #[command(
        after_help = "Exit status: 0 done (also: nothing had expired); 1 the table \
        cannot be opened or listed, is not a table (a Flink connector table's root: give its \
        log/ directory), a tag does not decode (it is kept, the others are still expired) \
        or a delete failed; 2 a usage error."
    )]
    Expire(ExpireArgs),
}

#[derive(Args, Debug)]
struct ExpireArgs {
    /// The table: a directory, or a table URL (`file:///path`,
    /// `s3://bucket/prefix`, `gs://...`, `az://...`; object stores are
    /// configured from AWS_*, GOOGLE_*, AZURE_*).
    table: String,
    /// The time to compare expire times with, in milliseconds since the
    /// Unix epoch (default: the system clock). A tag expires when its
    /// expire time is before it; a tag without one never does.
    #[arg(long, value_name = "MS")]
    now_ms: Option<u64>,
    /// List what would be deleted; delete nothing.
    #[arg(long)]
    dry_run: bool,
    /// Print JSON: `now_ms`, `dry_run`, `expired` (each tag with its
    /// `outcome`), `kept` and `problems` (docs/cli.md).
    #[arg(long)]
    json: bool,
}

/// What happened to an expired tag.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub(crate) enum Outcome {
    /// Deleted by this run.
    Deleted,
    /// `--dry-run`: would have been deleted.
    DryRun,
    /// Gone before the delete (an abort deleted it, or another expiry).
    AlreadyGone,
    /// Its record changed after it was read: kept.
    Changed,
    /// The delete failed: kept (the problem says why).
    Failed,
}

/// How the text reports an outcome.
pub(crate) fn outcome_text(o: Outcome) -> &'static str {
    o.text()
}

impl Outcome {
    fn text(self) -> &'static str {
        match self {
            Outcome::Deleted => "deleted",
            Outcome::DryRun => "would delete",
            Outcome::AlreadyGone => "already gone",
            Outcome::Changed => "kept (changed while expiring)",
            Outcome::Failed => "kept (the delete failed)",
        }
    }
}

pub fn cmd_tags(args: &TagsArgs) -> Result<String, Failure> {
    match &args.op {
        TagsOp::Expire(a) => expire(a),
    }
}

pub(crate) fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

/// A directory that is a Flink connector table's root (its log under
/// `log/`): refused before anything is read, as `inspect` names it.
pub(crate) fn refuse_flink_root(url: &TableUrl) -> Result<(), Failure> {
    let Some(dir) = url.dir() else {
        return Ok(());
    };
    let is_table = ["snapshot", "tag"].iter().any(|d| dir.join(d).is_dir());
    if !is_table && dir.join("log").join("snapshot").is_dir() {
        return Err(Failure::host(format!(
            "{} is not a table: no snapshot/ or tag/ directory, but log/snapshot/ exists, so \
             this looks like a table of the Flink connector, whose log is under log/ (expire \
             the tags of {} instead); nothing was deleted",
            dir.display(),
            dir.join("log").display()
        )));
    }
    Ok(())
}

/// One tag record, decoded by the core (as `inspect --native` does).
fn decode(key: &str, bytes: &[u8]) -> Result<Tag, String> {
    let mut one = MemStorage::default();
    one.map.insert(key.to_string(), bytes.to_vec());
    match table::list_tags(&mut one) {
        Ok(mut tags) if tags.len() == 1 => Ok(tags.remove(0)),
        Ok(_) => Err("not a tag record".into()),
        Err(e) => Err(clip(&e.to_string(), 400)),
    }
}

struct Expired {
    tag: Tag,
    key: String,
    outcome: Outcome,
}

fn expire(args: &ExpireArgs) -> Result<String, Failure> {
    let url = TableUrl::parse(&args.table).map_err(|e| Failure::host(e.to_string()))?;
    refuse_flink_root(&url)?;
    let mut storage = url
        .open(false, &[])
        .map_err(|e| Failure::host(e.to_string()))?;
    if !storage.removed_temp_files().is_empty() {
        // As `inspect` says it: opening a directory table cleans up.
        eprintln!(
            "sinkcoord: removed {} temporary file(s) left by dead writers",
            storage.removed_temp_files().len()
        );
    }
    let now = args.now_ms.unwrap_or_else(now_ms);
    let mut problems = Vec::new();
    let (keys, listing_problems) = storage
        .list_tolerant(table::TAG_PREFIX)
        .map_err(|e| Failure::host(format!("cannot list tags: {e}")))?;
    problems.extend(listing_problems);

    let quoted = |key: &str| render::json_str(&clip(key, 200));
    let mut expired: Vec<Expired> = Vec::new();
    let mut kept: Vec<Tag> = Vec::new();
    for key in keys {
        let bytes = match storage.get(&key) {
            Ok(Some(bytes)) => bytes,
            // Deleted since the listing: nothing to do.
            Ok(None) => continue,
            Err(e) => {
                problems.push(format!("{}: {e} (kept)", quoted(&key)));
                continue;
            }
        };
        let tag = match decode(&key, &bytes) {
            Ok(tag) => tag,
            Err(why) => {
                problems.push(format!(
                    "{}: {why} (kept: its expire time cannot be read)",
                    quoted(&key)
                ));
                continue;
            }
        };
        if !tag.expire_time_ms.is_some_and(|e| e < now) {
            kept.push(tag);
            continue;
        }
        let outcome = if args.dry_run {
            Outcome::DryRun
        } else {
            delete_unchanged(&mut storage, &key, &bytes, &mut problems)
        };
        expired.push(Expired { tag, key, outcome });
    }
    expired.sort_by(|a, b| natural_cmp(&a.tag.name, &b.tag.name));
    kept.sort_by(|a, b| natural_cmp(&a.name, &b.name));

    let out = if args.json {
        json(args, now, &expired, &kept, &problems)
    } else {
        text(args, now, &expired, &kept, &problems)
    };
    if problems.is_empty() {
        return Ok(out);
    }
    print(&out)?;
    Err(Failure::host(format!(
        "{} problem(s) while expiring the tags of {}, listed on stdout",
        problems.len(),
        args.table
    )))
}

/// Deletes `key` if it still holds `bytes` (see the module's documentation).
pub(crate) fn delete_unchanged(
    storage: &mut AnyStorage,
    key: &str,
    bytes: &[u8],
    problems: &mut Vec<String>,
) -> Outcome {
    let quoted = render::json_str(&clip(key, 200));
    match storage.get(key) {
        Ok(None) => return Outcome::AlreadyGone,
        Ok(Some(now)) if now != bytes => return Outcome::Changed,
        Ok(Some(_)) => {}
        Err(e) => {
            problems.push(format!("{quoted}: {e} (kept)"));
            return Outcome::Failed;
        }
    }
    match storage.delete(key) {
        Ok(()) => Outcome::Deleted,
        Err(e) => {
            problems.push(format!("{quoted}: cannot delete: {e} (kept)"));
            Outcome::Failed
        }
    }
}

fn text(
    args: &ExpireArgs,
    now: u64,
    expired: &[Expired],
    kept: &[Tag],
    problems: &[String],
) -> String {
    let rfc = crate::inspect::rfc3339;
    let deleted = expired
        .iter()
        .filter(|e| e.outcome == Outcome::Deleted)
        .count();
    let mut out = format!(
        "table {}: {} tag(s) expired before {now} ms ({}){}\n",
        args.table,
        expired.len(),
        rfc(now),
        if args.dry_run {
            ", dry run: nothing deleted".to_string()
        } else {
            format!(", {deleted} deleted")
        }
    );
    for e in expired {
        let t = &e.tag;
        out.push_str(&format!(
            "  {} tag {}: snapshot {} (identifier {}), created {} ms, expired {} ms ({})\n",
            e.outcome.text(),
            render::json_str(&clip(
                e.key.strip_prefix(table::TAG_PREFIX).unwrap_or(&e.key),
                200
            )),
            t.snapshot_id,
            identifier_text(t.identifier),
            t.create_time_ms,
            t.expire_time_ms.unwrap_or(0),
            rfc(t.expire_time_ms.unwrap_or(0)),
        ));
    }
    let never = kept.iter().filter(|t| t.expire_time_ms.is_none()).count();
    out.push_str(&format!(
        "{} tag(s) kept: {} not expired yet, {never} without an expire time\n",
        kept.len(),
        kept.len() - never
    ));
    out.push_str(&report::problems_text(problems));
    out
}

#[derive(Serialize)]
struct ExpiredDoc<'a> {
    #[serde(flatten)]
    tag: TagDoc<'a>,
    outcome: Outcome,
}

#[derive(Serialize)]
struct ExpireDoc<'a> {
    now_ms: u64,
    dry_run: bool,
    expired: Vec<ExpiredDoc<'a>>,
    kept: Vec<TagDoc<'a>>,
    problems: &'a [String],
}

fn json(
    args: &ExpireArgs,
    now: u64,
    expired: &[Expired],
    kept: &[Tag],
    problems: &[String],
) -> String {
    report::canonical(&ExpireDoc {
        now_ms: now,
        dry_run: args.dry_run,
        expired: expired
            .iter()
            .map(|e| ExpiredDoc {
                tag: TagDoc::of(&e.tag),
                outcome: e.outcome,
            })
            .collect(),
        kept: kept.iter().map(TagDoc::of).collect(),
        problems,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use sink_coordinator::{Config, Coordinator, Entry, MemEnv, StepClock};

    /// The re-read before a delete: a changed record is kept, a gone one is
    /// not an error, an unchanged one is deleted.
    #[test]
    fn only_an_unchanged_tag_is_deleted() {
        let dir = std::env::temp_dir().join(format!("sinkcoord-tags-unit-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let mut st =
            AnyStorage::Dir(sink_coordinator_host::storage::LocalDirStorage::open(&dir).unwrap());
        let mut problems = Vec::new();
        st.put_if_absent("tag/a", b"new").unwrap();
        let outcome = delete_unchanged(&mut st, "tag/a", b"old", &mut problems);
        assert_eq!(outcome, Outcome::Changed);
        assert_eq!(st.get("tag/a").unwrap().as_deref(), Some(&b"new"[..]));
        let outcome = delete_unchanged(&mut st, "tag/b", b"old", &mut problems);
        assert_eq!(outcome, Outcome::AlreadyGone);
        let outcome = delete_unchanged(&mut st, "tag/a", b"new", &mut problems);
        assert_eq!(outcome, Outcome::Deleted);
        assert_eq!(st.get("tag/a").unwrap(), None);
        assert!(problems.is_empty(), "{problems:?}");
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_record_that_is_not_a_tag_is_not_decoded() {
        assert!(decode("tag/x", b"\x01garbage").is_err());
        assert!(decode("tag/x", b"").is_err());
    }

    /// Deleting a tag under a coordinator: the abort of its savepoint
    /// (which deletes that tag by name) and later commits still succeed.
    #[test]
    fn a_coordinator_survives_its_tags_being_deleted() {
        let mut env = MemEnv {
            storage: MemStorage::default(),
            clock: StepClock { next: 1, step: 1 },
        };
        let mut config = Config::new(1, "job");
        config.savepoint_auto_tag = true;
        config.tag_time_retained_ms = Some(1);
        let mut c = Coordinator::new(config, None);
        c.start(&mut env).unwrap();
        let entry = |cp: u64, savepoint: bool| Entry {
            checkpoint: cp,
            committables: vec![format!("c{cp}").into_bytes()].into(),
            watermark: None,
            savepoint,
        };
        for cp in 1..=2 {
            c.event(&mut env, 0, 0, entry(cp, true)).unwrap();
            c.checkpoint(&mut env, cp).unwrap();
            c.checkpoint_complete(&mut env, cp).unwrap();
        }
        assert!(env.storage.map.contains_key("tag/savepoint-2"));
        env.storage.delete("tag/savepoint-1").unwrap();
        env.storage.delete("tag/savepoint-2").unwrap();
        // The abort of a savepoint whose tag is gone, then more commits.
        c.checkpoint_aborted(&mut env, 2).unwrap();
        c.event(&mut env, 0, 0, entry(3, true)).unwrap();
        c.checkpoint(&mut env, 3).unwrap();
        let outcome = c.checkpoint_complete(&mut env, 3).unwrap();
        assert_eq!(outcome.committed, [3]);
        assert!(env.storage.map.contains_key("tag/savepoint-3"));
    }
}
