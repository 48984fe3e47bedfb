//! Tests of the state bytes: the views against the wire types, the exact
//! size, round trips, every version's bytes, and refusals.
use super::*;
use crate::error::{Defect, ErrorReason};
use alloc::vec;
use proptest::prelude::*;

/// `encode` of slots given with their entries as vectors.
fn enc<'a>(
    user: &str,
    p: u32,
    slots: impl IntoIterator<Item = (u32, &'a EndEntry, Vec<(u64, &'a SlotEntry)>)>,
) -> Vec<u8> {
    let slots: Vec<_> = slots.into_iter().collect();
    enc_ids(user, p, slots, Ids::default())
}

/// `encode` with id lists.
fn enc_ids<'a>(
    user: &str,
    p: u32,
    slots: impl IntoIterator<Item = (u32, &'a EndEntry, Vec<(u64, &'a SlotEntry)>)>,
    ids: Ids<'_>,
) -> Vec<u8> {
    let slots: Vec<_> = slots.into_iter().collect();
    encode(
        user,
        p,
        slots.into_iter().map(|(s, e, v)| (s, e, v.into_iter())),
        ids,
    )
}

fn end(data: &[&str], w: Option<i64>) -> EndEntry {
    EndEntry {
        committables: data.iter().map(|d| d.as_bytes().to_vec()).collect(),
        watermark: w,
        synthesized: false,
        taken: 4,
    }
}

#[derive(Serialize)]
struct StateV3<'a> {
    commit_user: &'a str,
    parallelism: u32,
    slots: Seq<(u32, SlotWireV3)>,
    owed: Vec<(u64, bool)>,
    aborted: Vec<u64>,
}

fn sample() -> Vec<u8> {
    let e = end(&["f1", "f2"], Some(-5));
    let s = EndEntry::synthesized(2);
    let o = SlotEntry {
        committables: vec![b"o7".to_vec()].into(),
        watermark: Some(3),
        savepoint: true,
    };
    enc_ids(
        "job-1",
        4,
        [(1u32, &e, vec![(7u64, &o)]), (3u32, &s, vec![])],
        Ids {
            owed: &[(2, false), (6, true)],
            aborted: &[8],
        },
    )
}

/// The views write exactly what the wire types write.
#[test]
fn views_encode_like_the_wire_types() {
    let e = end(&["f1", "f2"], Some(-5));
    let o = SlotEntry {
        committables: vec![b"o7".to_vec(), vec![]].into(),
        watermark: None,
        savepoint: true,
    };
    fn wire_slot<'a>(
        s: u32,
        e: &'a EndEntry,
        entries: &[(u64, &'a SlotEntry)],
    ) -> (u32, SlotWireV3) {
        (
            s,
            SlotWireV3 {
                end: EndWire {
                    committables: e.committables.clone(),
                    watermark: e.watermark,
                    synthesized: e.synthesized,
                },
                taken: e.taken,
                entries: Seq(entries
                    .iter()
                    .map(|(c, x)| EntryWire {
                        checkpoint: *c,
                        committables: x.committables.clone(),
                        watermark: x.watermark,
                        savepoint: x.savepoint,
                    })
                    .collect()),
            },
        )
    }
    let expected = wire::encode(
        3,
        &StateV3 {
            commit_user: "job-ü",
            parallelism: 300,
            slots: Seq(vec![
                wire_slot(2, &e, &[(3, &o), (900, &o)]),
                wire_slot(299, &e, &[]),
            ]),
            owed: vec![(1, true), (300, false)],
            aborted: vec![7, 1 << 40],
        },
    );
    let got = enc_ids(
        "job-ü",
        300,
        [(2u32, &e, vec![(3u64, &o), (900, &o)]), (299, &e, vec![])],
        Ids {
            owed: &[(1, true), (300, false)],
            aborted: &[7, 1 << 40],
        },
    );
    assert_eq!(got, expected);
    // Nothing that needs version 3: version 2, which the previous release reads.
    let plain = wire::encode(
        2,
        &StateV2 {
            commit_user: "job-ü",
            parallelism: 300,
            slots: Seq(vec![]),
        },
    );
    assert_eq!(enc("job-ü", 300, []), plain);
    // An id alone needs version 3.
    let ids = Ids {
        owed: &[],
        aborted: &[3],
    };
    assert_eq!(wire::version(&enc_ids("u", 1, [], ids)).unwrap().0, 3);
}

/// The counted size is the encoded size.
#[test]
fn exact_size() {
    let e = end(&["f1", ""], Some(i64::MIN));
    let big = SlotEntry {
        committables: vec![vec![9u8; 300]; 130].into(),
        watermark: Some(i64::MAX),
        savepoint: false,
    };
    let ids = Ids {
        owed: &[(3, true), (u64::from(u32::MAX), false)],
        aborted: &[1, 200],
    };
    for (user, slots) in [
        ("", vec![]),
        (
            "job-ü",
            vec![(
                0u32,
                &e,
                vec![(3u64, &big), (u64::from(u32::MAX) + 7, &big)],
            )],
        ),
        (
            "u",
            vec![(200_000u32, &e, vec![]), (999_999, &e, vec![(127, &big)])],
        ),
    ] {
        let n = slots.len();
        for (ids, v3) in [(Ids::default(), n > 0), (ids, true)] {
            let size = encoded_len(
                user,
                300_000,
                slots
                    .clone()
                    .into_iter()
                    .map(|(s, e, v)| (s, e, v.into_iter())),
                ids,
                v3,
            );
            let got = enc_ids(user, 300_000, slots.clone(), ids).len();
            assert_eq!(size, got, "{user} {n} {v3}");
        }
    }
}

#[test]
fn round_trip() {
    let st = decode(&sample()).unwrap();
    assert_eq!(st.commit_user, "job-1");
    assert_eq!(st.parallelism, 4);
    assert_eq!(st.slots.len(), 2);
    assert_eq!(st.slots[0].1.end.committables.to_vecs()[1], b"f2".to_vec());
    assert_eq!(st.slots[0].1.entries[0].0, 7);
    assert!(st.slots[0].1.entries[0].1.savepoint);
    assert!(st.slots[1].1.end.synthesized);
    assert_eq!((st.slots[0].1.end.taken, st.slots[1].1.end.taken), (4, 2));
    assert_eq!(st.owed, vec![(2, false), (6, true)]);
    assert_eq!(st.aborted, vec![8]);
}

/// Every slot decodes again from its offset to what `decode` gave.
#[test]
fn slots_decode_again_from_their_offsets() {
    let bytes = sample();
    let d = decode_indexed(&bytes).unwrap();
    assert_eq!(d.version, CURRENT_VERSION);
    assert_eq!(d.offsets.len(), d.state.slots.len());
    for ((s, slot), at) in d.state.slots.iter().zip(&d.offsets) {
        assert_eq!(
            decode_slot_at(&bytes, d.version, *at),
            Some((*s, slot.clone()))
        );
    }
    assert_eq!(decode_slot_at(&bytes, d.version, bytes.len() + 1), None);
}

#[test]
fn version_1_restores_without_ordinary_entries() {
    let v1 = wire::encode(
        1,
        &StateV1 {
            commit_user: "job-1",
            parallelism: 2,
            end_entries: Seq(vec![(
                1,
                EndWire {
                    committables: vec![b"e".to_vec()].into(),
                    watermark: None,
                    synthesized: false,
                },
            )]),
        },
    );
    let st = decode(&v1).unwrap();
    assert_eq!(st.slots.len(), 1);
    let mut expected = end(&["e"], None);
    expected.taken = NOT_RECORDED;
    assert_eq!(st.slots[0].1.end, expected);
    assert!(st.owed.is_empty() && st.aborted.is_empty());
    assert!(st.slots[0].1.entries.is_empty());
}

/// Byte-identity of the encoder with the 0.1.0 component's: every golden
/// version-1 state (written when committables were encoded as `u8`
/// sequences) decodes and re-encodes to exactly its bytes.
#[test]
fn golden_v1_states_re_encode_identically() {
    let golden = golden_states![
        "coordinator":
        "after_final_commit",
        "all_ended_final_pending",
        "empty_committables",
        "end_after_region_failover",
        "end_many_committables_large",
        "end_replaced",
        "end_watermark_extremes",
        "fresh_p1",
        "fresh_p4_ordinary_pending",
        "highest_checkpoint_id",
        "p1000_few_ends",
        "p1_one_end",
        "p4_one_end",
        "p4_three_ends_mixed_watermarks",
        "restored_ends_rechecked",
        "synthesized_finished",
        "synthesized_rerestored_all_ended",
        "unicode_commit_user",
    ];
    for bytes in golden {
        let (version, rest) = wire::version(bytes).unwrap();
        assert_eq!(version, 1);
        let v1: StateV1 = wire::body(rest).unwrap();
        assert_eq!(wire::encode(1, &v1), bytes);
    }
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
    assert_eq!(
        decode(&trailing).unwrap_err().reason(),
        &ErrorReason::CoordinatorState {
            bytes: trailing.len(),
            defect: Defect::Decode(wire::DecodeError::TrailingBytes(1)),
        }
    );
    let mut version = good.clone();
    version[0] = 9;
    let e = decode(&version).unwrap_err();
    assert_eq!(
        e.reason(),
        &ErrorReason::CoordinatorState {
            bytes: version.len(),
            defect: Defect::Decode(wire::DecodeError::UnknownVersion(9)),
        }
    );
    // The text is the contract.
    assert_eq!(
        e.to_string(),
        alloc::format!(
            "corrupt-state: coordinator state ({} bytes): unknown format version 9",
            version.len()
        )
    );
    // Out of range: subtask 7 with parallelism 4.
    let e = end(&[], None);
    let bad = enc("u", 4, [(7u32, &e, vec![])]);
    assert!(matches!(
        decode(&bad).unwrap_err().reason(),
        ErrorReason::CoordinatorState {
            defect: Defect::EndOutsideParallelism {
                subtask: 7,
                parallelism: 4
            },
            ..
        }
    ));
    // Ordinary entries out of order.
    let o = SlotEntry {
        committables: Committables::new(),
        watermark: None,
        savepoint: false,
    };
    let bad = enc("u", 4, [(0u32, &e, vec![(5, &o), (5, &o)])]);
    assert!(matches!(
        decode(&bad).unwrap_err().reason(),
        ErrorReason::CoordinatorState {
            defect: Defect::SlotEntriesOutOfOrder {
                subtask: 0,
                checkpoint: 5
            },
            ..
        }
    ));
    let bad = enc("u", 4, [(0u32, &e, vec![(crate::END, &o)])]);
    assert!(decode(&bad).is_err());
    // Id lists out of order, repeated or out of range.
    for (owed, aborted) in [
        (&[(5u64, false), (5, true)][..], &[][..]),
        (&[(6, false), (5, false)][..], &[][..]),
        (&[][..], &[crate::END][..]),
        (&[][..], &[9, 2][..]),
    ] {
        let bad = enc_ids("u", 4, [], Ids { owed, aborted });
        assert!(
            matches!(
                decode(&bad).unwrap_err().reason(),
                ErrorReason::CoordinatorState {
                    defect: Defect::IdsOutOfOrder { .. },
                    ..
                }
            ),
            "{owed:?} {aborted:?}"
        );
    }
    assert!(matches!(
        decode(&enc("", 1, core::iter::empty()))
            .unwrap_err()
            .reason(),
        ErrorReason::CoordinatorState {
            defect: Defect::EmptyCommitUser,
            ..
        }
    ));
    assert!(matches!(
        decode(&enc("u", 0, core::iter::empty()))
            .unwrap_err()
            .reason(),
        ErrorReason::CoordinatorState {
            defect: Defect::ParallelismOutOfRange { parallelism: 0 },
            ..
        }
    ));
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 2000, rng_seed: proptest::test_runner::RngSeed::Fixed(7), ..ProptestConfig::default() })]
    #[test]
    fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..64)) {
        let _ = decode(&bytes);
    }

    #[test]
    fn mutated_state_never_panics(pos in 0usize..60, val in any::<u8>()) {
        let mut b = sample();
        let i = pos % b.len();
        b[i] = val;
        let _ = decode(&b);
    }
}
