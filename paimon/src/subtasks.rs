//! Which writer subtask reported each data file of a snapshot, in the snapshot's
//! `properties` as `sinkcoord.subtasks`: a run-length list `s:count,s:count,...` over
//! the ADD entries of the snapshot's delta manifests, in entry order.
//!
//! Why a property and not the manifests: Paimon's `ManifestEntry` has no field for it
//! (and a reader must see a plain Paimon table), and the commit path writes the snapshot
//! anyway, so the property costs no storage call. Run-length because a commit's files
//! come in subtask order: one run per subtask, and at most one run per file (constant
//! size per file whatever the order).
//!
//! A snapshot without the property (Paimon's, pypaimon's, or one written before it
//! existed) reads back with subtask 0 for every file.

use crate::{parse_i64, push_i64};
use alloc::string::String;
use alloc::vec::Vec;

/// The property's key.
pub const P_SUBTASKS: &str = "sinkcoord.subtasks";

/// Why a `sinkcoord.subtasks` value cannot be used.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SubtasksError {
    /// Not `s:count` runs separated by commas (each count at least 1).
    Malformed,
    /// The runs cover another number of files than the snapshot's delta has.
    Count { files: u64, runs: u64 },
}

/// The property value for files reported by `subtasks`, in entry order; `None` when
/// there is no file (the property is then left out).
pub fn encode_runs(subtasks: impl IntoIterator<Item = u32>) -> Option<String> {
    let mut runs: Vec<(u32, u64)> = Vec::new();
    for s in subtasks {
        match runs.last_mut() {
            Some((last, n)) if *last == s => *n += 1,
            _ => runs.push((s, 1)),
        }
    }
    if runs.is_empty() {
        return None;
    }
    let mut out = String::new();
    for (i, (s, n)) in runs.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        push_i64(&mut out, i64::from(*s));
        out.push(':');
        // A count is at most the number of files of one commit: far below i64::MAX.
        push_i64(&mut out, i64::try_from(*n).unwrap_or(i64::MAX));
    }
    Some(out)
}

/// The subtask of each of `files` entries from a property value. The counts are
/// checked against `files` before anything is allocated, so a hostile value cannot
/// make a large allocation.
pub fn decode_runs(value: &str, files: usize) -> Result<Vec<u32>, SubtasksError> {
    let mut runs: Vec<(u32, u64)> = Vec::new();
    let mut total: u64 = 0;
    for run in value.split(',') {
        let (s, n) = run.split_once(':').ok_or(SubtasksError::Malformed)?;
        let s = parse_i64(s)
            .and_then(|s| u32::try_from(s).ok())
            .ok_or(SubtasksError::Malformed)?;
        let n = parse_i64(n)
            .and_then(|n| u64::try_from(n).ok())
            .filter(|n| *n > 0)
            .ok_or(SubtasksError::Malformed)?;
        total = total.saturating_add(n);
        runs.push((s, n));
    }
    if total != files as u64 {
        return Err(SubtasksError::Count {
            files: files as u64,
            runs: total,
        });
    }
    let mut out = Vec::with_capacity(files);
    for (s, n) in runs {
        for _ in 0..n {
            out.push(s);
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::vec;

    #[test]
    fn runs_round_trip() {
        assert_eq!(encode_runs([]), None);
        let v = encode_runs([0, 0, 3, 3, 3, 1, 0]).unwrap();
        assert_eq!(v, "0:2,3:3,1:1,0:1");
        assert_eq!(decode_runs(&v, 7).unwrap(), vec![0, 0, 3, 3, 3, 1, 0]);
        let big = encode_runs([u32::MAX]).unwrap();
        assert_eq!(big, "4294967295:1");
        assert_eq!(decode_runs(&big, 1).unwrap(), vec![u32::MAX]);
    }

    #[test]
    fn bad_values_are_refused() {
        for bad in [
            "",
            "0",
            "0:",
            ":1",
            "0:0",
            "-1:1",
            "4294967296:1",
            "0:1,",
            "a:1",
            "0:1;1:1",
        ] {
            assert_eq!(decode_runs(bad, 1), Err(SubtasksError::Malformed), "{bad}");
        }
        assert_eq!(
            decode_runs("0:2", 3),
            Err(SubtasksError::Count { files: 3, runs: 2 })
        );
        // A huge count is refused before any allocation.
        assert_eq!(
            decode_runs("0:9223372036854775807,1:9223372036854775807", 1),
            Err(SubtasksError::Count {
                files: 1,
                runs: u64::MAX - 1
            })
        );
    }
}
