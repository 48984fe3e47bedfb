//! Keeping the base manifest list short.
//!
//! Each commit's new base list is the previous snapshot's base followed by its delta, so
//! without merging it grows by one manifest per commit. Rule (Paimon's minor compaction,
//! made deterministic and bounded): once the list holds more than `max_manifests`, take
//! the first run of consecutive *small* manifests (smaller than `target_size`, no extra
//! files), at most `max_inputs` of them and stopping once they reach `target_size`, and
//! replace the run by one manifest whose blocks are the run's blocks copied verbatim.
//!
//! Blocks are copied, never decoded or decompressed, so manifests of any codec merge, as
//! long as they share the writer schema and codec (see [`merge_manifests`] for how files
//! of several writers, e.g. pypaimon's between this crate's, are grouped).
//!
//! Cost, per commit: none when the list is short enough; otherwise at most `max_inputs`
//! gets (at most `2 * target_size` bytes) and one put per distinct writer header in the
//! range (one when only this crate writes, two with pypaimon interleaved). Small manifests merge until they
//! reach the target size and are then never read again, so the list stays at most
//! `max_manifests + 1` plus one manifest per `target_size` bytes of manifests (which grows
//! with the table's data, never with its number of commits).

use super::{ManifestError, ManifestFileMeta};
use crate::avro;
use crate::binary_row::{decode_row, encode_row};
use crate::naming::{self, Role};
use crate::types::{ColumnType, Datum};
use alloc::vec::Vec;
use core::cmp::Ordering;
use core::ops::Range;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MergeOptions {
    /// Merge only when the base list holds more manifests than this.
    pub max_manifests: usize,
    /// A manifest this large (bytes) is never merged again.
    pub target_size: i64,
    /// At most this many manifests read and merged in one commit.
    pub max_inputs: usize,
}

impl Default for MergeOptions {
    /// Paimon's defaults: `manifest.merge-min-count` 30, `manifest.target-file-size` 8 MiB.
    fn default() -> Self {
        MergeOptions {
            max_manifests: 30,
            target_size: 8 << 20,
            max_inputs: 30,
        }
    }
}

fn small(m: &ManifestFileMeta, o: &MergeOptions) -> bool {
    m.file_size < o.target_size && m.extra_files.as_ref().is_none_or(|f| f.is_empty())
}

/// Which manifests of `list` (the new base: previous base then previous delta) to merge.
/// The caller gets exactly those files, then calls [`merge_manifests`].
pub fn plan_merge(list: &[ManifestFileMeta], o: &MergeOptions) -> Option<Range<usize>> {
    if list.len() <= o.max_manifests || o.max_inputs < 2 {
        return None;
    }
    let mut i = 0;
    while i < list.len() {
        if !small(&list[i], o) {
            i += 1;
            continue;
        }
        let start = i;
        let mut sum: i64 = 0;
        while i < list.len()
            && small(&list[i], o)
            && i - start < o.max_inputs
            && sum < o.target_size
        {
            sum = sum.saturating_add(list[i].file_size);
            i += 1;
        }
        if i - start >= 2 {
            return Some(start..i);
        }
    }
    None
}

/// What replaces the planned range: `segment`, in which each merged manifest (also in
/// `written`, to be put) stands for several of the range's manifests.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Merged {
    pub segment: Vec<ManifestFileMeta>,
    pub written: Vec<(ManifestFileMeta, Vec<u8>)>,
}

fn opt_fold<T: Copy>(vals: impl Iterator<Item = Option<T>>, f: impl Fn(T, T) -> T) -> Option<T> {
    let mut acc: Option<T> = None;
    for v in vals {
        let v = v?;
        acc = Some(match acc {
            None => v,
            Some(a) => f(a, v),
        });
    }
    acc
}

/// Merges the planned manifests (`metas`, with their file `contents` in the same order).
///
/// Files merge when they share a writer schema and codec (blocks are copied, never
/// re-encoded). When no manifest of the range deletes a file, entry order carries no
/// meaning (readers take the set of ADDs), so all files of one header merge wherever they
/// sit in the range, e.g. this crate's and pypaimon's manifests interleaved; otherwise
/// only consecutive files of one header merge, keeping every entry's order. `None` when
/// nothing merges.
#[inline(never)] // see `avro::unzstd`
pub fn merge_manifests(
    partition_kinds: &[ColumnType],
    metas: &[ManifestFileMeta],
    contents: &[&[u8]],
    snapshot_id: i64,
) -> Result<Option<Merged>, ManifestError> {
    if metas.len() != contents.len()
        || metas
            .iter()
            .zip(contents)
            .any(|(m, c)| m.file_size != c.len() as i64)
    {
        return Err(ManifestError::MergeInput);
    }
    let files = contents
        .iter()
        .map(|c| avro::read_ocf(c))
        .collect::<Result<Vec<_>, _>>()?;
    let same =
        |a: usize, b: usize| files[a].schema == files[b].schema && files[a].codec == files[b].codec;
    let reorder = metas.iter().all(|m| m.num_deleted_files == 0);
    // Groups of input indexes, in order of their first member.
    let mut groups: Vec<Vec<usize>> = Vec::new();
    for i in 0..files.len() {
        let g = if reorder {
            groups.iter_mut().find(|g| same(g[0], i))
        } else {
            groups.last_mut().filter(|g| same(g[0], i))
        };
        match g {
            Some(g) => g.push(i),
            None => groups.push(alloc::vec![i]),
        }
    }
    let mut out = Merged {
        segment: Vec::new(),
        written: Vec::new(),
    };
    for g in &groups {
        if g.len() == 1 {
            out.segment.push(metas[g[0]].clone());
            continue;
        }
        let blocks: Vec<(i64, &[u8])> = g
            .iter()
            .flat_map(|&i| files[i].blocks.iter().copied())
            .collect();
        let bytes = avro::write_ocf(&files[g[0]].schema, &files[g[0]].codec, &blocks);
        let used: Vec<&ManifestFileMeta> = g.iter().map(|&i| &metas[i]).collect();
        let meta = combine(partition_kinds, &used, &bytes, snapshot_id)?;
        out.segment.push(meta.clone());
        out.written.push((meta, bytes));
    }
    Ok(if out.written.is_empty() {
        None
    } else {
        Some(out)
    })
}

/// The manifest-list record of a merged manifest.
#[inline(never)] // see `avro::unzstd`
fn combine(
    partition_kinds: &[ColumnType],
    used: &[&ManifestFileMeta],
    bytes: &[u8],
    snapshot_id: i64,
) -> Result<ManifestFileMeta, ManifestError> {
    let mut min = alloc::vec![Datum::Null; partition_kinds.len()];
    let mut max = min.clone();
    for m in used {
        for (i, v) in decode_row(&m.partition_min, partition_kinds)?
            .into_iter()
            .enumerate()
        {
            if !matches!(v, Datum::Null)
                && (matches!(min[i], Datum::Null) || v.cmp_same(&min[i]) == Ordering::Less)
            {
                min[i] = v;
            }
        }
        for (i, v) in decode_row(&m.partition_max, partition_kinds)?
            .into_iter()
            .enumerate()
        {
            if !matches!(v, Datum::Null)
                && (matches!(max[i], Datum::Null) || v.cmp_same(&max[i]) == Ordering::Greater)
            {
                max[i] = v;
            }
        }
    }
    let nulls = used
        .iter()
        .try_fold(alloc::vec![Some(0i64); partition_kinds.len()], |acc, m| {
            let c = m.partition_null_counts.as_ref()?;
            if c.len() != acc.len() {
                return None;
            }
            Some(
                acc.iter()
                    .zip(c)
                    .map(|(a, b)| a.as_ref()?.checked_add(*b.as_ref()?))
                    .collect(),
            )
        });
    let total = used[0].total_buckets;
    Ok(ManifestFileMeta {
        file_name: naming::file_name(Role::MergedManifest, snapshot_id, bytes),
        file_size: bytes.len() as i64,
        // Saturating: the metas come from other writers' lists, so never trust a sum.
        num_added_files: used
            .iter()
            .fold(0i64, |a, m| a.saturating_add(m.num_added_files)),
        num_deleted_files: used
            .iter()
            .fold(0i64, |a, m| a.saturating_add(m.num_deleted_files)),
        partition_min: encode_row(partition_kinds, &min)?,
        partition_max: encode_row(partition_kinds, &max)?,
        partition_null_counts: nulls,
        schema_id: used.iter().map(|m| m.schema_id).max().unwrap_or(0),
        min_bucket: opt_fold(used.iter().map(|m| m.min_bucket), i32::min),
        max_bucket: opt_fold(used.iter().map(|m| m.max_bucket), i32::max),
        min_level: opt_fold(used.iter().map(|m| m.min_level), i32::min),
        max_level: opt_fold(used.iter().map(|m| m.max_level), i32::max),
        min_row_id: opt_fold(used.iter().map(|m| m.min_row_id), i64::min),
        max_row_id: opt_fold(used.iter().map(|m| m.max_row_id), i64::max),
        total_buckets: if used.iter().all(|m| m.total_buckets == total) {
            total
        } else {
            None
        },
        extra_files: None,
    })
}

/// The new base list: `list` with the planned range replaced by the merged segment.
pub fn apply_merge(
    list: &[ManifestFileMeta],
    range: Range<usize>,
    m: &Merged,
) -> Vec<ManifestFileMeta> {
    let mut out = Vec::with_capacity(list.len());
    out.extend_from_slice(&list[..range.start]);
    out.extend_from_slice(&m.segment);
    out.extend_from_slice(&list[range.end..]);
    out
}
