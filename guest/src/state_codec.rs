//! The coordinator's state bytes (SEMANTICS 7): format version, commit user,
//! parallelism and the END entries received and not yet committed. Ordinary
//! entries live in writer state, never here.
//!
//! Version history (a later component must restore every earlier version):
//! - 1: `{commit_user, parallelism, end_entries: [(subtask, {committables, watermark, synthesized})]}`.

use alloc::format;
use alloc::string::{String, ToString};
use alloc::vec::Vec;
use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::slots::EndEntry;
use crate::types::MAX_PARALLELISM;
use crate::wire::{self, Seq};

pub const CURRENT_VERSION: u32 = 1;

/// Decoded coordinator state.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CoordinatorState {
    pub commit_user: String,
    pub parallelism: u32,
    /// In subtask order.
    pub end_entries: Vec<(u32, EndEntry)>,
}

#[derive(Serialize, Deserialize)]
struct EndWire<'a> {
    #[serde(borrow)]
    committables: Seq<&'a [u8]>,
    watermark: Option<i64>,
    synthesized: bool,
}

#[derive(Serialize, Deserialize)]
struct StateV1<'a> {
    commit_user: &'a str,
    parallelism: u32,
    #[serde(borrow)]
    end_entries: Seq<(u32, EndWire<'a>)>,
}

pub fn encode<'a>(
    commit_user: &str,
    parallelism: u32,
    ends: impl Iterator<Item = (u32, &'a EndEntry)>,
) -> Vec<u8> {
    let end_entries = ends
        .map(|(s, e)| {
            let committables = Seq(e.committables.iter().map(|c| c.as_slice()).collect());
            (
                s,
                EndWire {
                    committables,
                    watermark: e.watermark,
                    synthesized: e.synthesized,
                },
            )
        })
        .collect();
    wire::encode(
        CURRENT_VERSION,
        &StateV1 {
            commit_user,
            parallelism,
            end_entries: Seq(end_entries),
        },
    )
}

pub fn decode(bytes: &[u8]) -> Result<CoordinatorState> {
    let corrupt = |why: &dyn core::fmt::Display| {
        Error::corrupt_state(format!("coordinator state ({} bytes): {why}", bytes.len()))
    };
    let (version, rest) = wire::version(bytes).map_err(|e| corrupt(&e))?;
    match version {
        1 => {
            let v1: StateV1 = wire::body(rest).map_err(|e| corrupt(&e))?;
            if v1.commit_user.is_empty() {
                return Err(corrupt(&"empty commit user"));
            }
            if v1.parallelism == 0 || v1.parallelism > MAX_PARALLELISM {
                return Err(corrupt(&format!(
                    "parallelism {} outside 1..={MAX_PARALLELISM}",
                    v1.parallelism
                )));
            }
            let mut end_entries = Vec::with_capacity(v1.end_entries.0.len());
            let mut last: Option<u32> = None;
            for (s, e) in v1.end_entries.0 {
                if s >= v1.parallelism {
                    return Err(corrupt(&format!(
                        "END entry of subtask {s} outside parallelism {}",
                        v1.parallelism
                    )));
                }
                if last.is_some_and(|l| s <= l) {
                    return Err(corrupt(&format!(
                        "END entries out of order or repeated at subtask {s}"
                    )));
                }
                last = Some(s);
                if e.synthesized && (!e.committables.0.is_empty() || e.watermark.is_some()) {
                    return Err(corrupt(&format!(
                        "synthesized END entry of subtask {s} carries data"
                    )));
                }
                let committables = e.committables.0.into_iter().map(|c| c.to_vec()).collect();
                end_entries.push((
                    s,
                    EndEntry {
                        committables,
                        watermark: e.watermark,
                        synthesized: e.synthesized,
                    },
                ));
            }
            Ok(CoordinatorState {
                commit_user: v1.commit_user.to_string(),
                parallelism: v1.parallelism,
                end_entries,
            })
        }
        v => Err(corrupt(&wire::DecodeError::UnknownVersion(v))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::vec;
    use proptest::prelude::*;

    fn sample() -> Vec<u8> {
        let e = EndEntry {
            committables: vec![b"f1".to_vec(), b"f2".to_vec()],
            watermark: Some(-5),
            synthesized: false,
        };
        let s = EndEntry::synthesized();
        encode("job-1", 4, [(1u32, &e), (3u32, &s)].into_iter())
    }

    #[test]
    fn round_trip() {
        let st = decode(&sample()).unwrap();
        assert_eq!(st.commit_user, "job-1");
        assert_eq!(st.parallelism, 4);
        assert_eq!(st.end_entries.len(), 2);
        assert_eq!(st.end_entries[0].1.committables[1], b"f2".to_vec());
        assert!(st.end_entries[1].1.synthesized);
    }

    #[test]
    fn rejects_bad_bytes() {
        let good = sample();
        for cut in 0..good.len() {
            assert_eq!(
                decode(&good[..cut]).unwrap_err().kind,
                crate::ErrorKind::CorruptState,
                "cut {cut}"
            );
        }
        let mut trailing = good.clone();
        trailing.push(0);
        assert!(decode(&trailing).unwrap_err().message.contains("trailing"));
        let mut version = good.clone();
        version[0] = 9;
        assert!(decode(&version)
            .unwrap_err()
            .message
            .contains("unknown format version 9"));
        // Out of range: subtask 7 with parallelism 4.
        let e = EndEntry {
            committables: vec![],
            watermark: None,
            synthesized: false,
        };
        let bad = encode("u", 4, [(7u32, &e)].into_iter());
        assert!(decode(&bad).unwrap_err().message.contains("subtask 7"));
        assert!(decode(&encode("", 1, core::iter::empty())).is_err());
        assert!(decode(&encode("u", 0, core::iter::empty())).is_err());
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 2000, rng_seed: proptest::test_runner::RngSeed::Fixed(7), ..ProptestConfig::default() })]
        #[test]
        fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..64)) {
            let _ = decode(&bytes);
        }

        #[test]
        fn mutated_state_never_panics(pos in 0usize..40, val in any::<u8>()) {
            let mut b = sample();
            let i = pos % b.len();
            b[i] = val;
            let _ = decode(&b);
        }
    }
}
