//! An independent reader of the table: the simulator's oracle for what is
//! stored, written from the byte layout (guest/src/table.rs, wire.rs) and
//! sharing no code with the core's decoder.
//!
//! Layout of a record: `varint(version) ++ postcard(body)`. Postcard writes
//! unsigned integers as LEB128 varints (at most 5 bytes for `u32`, 10 for
//! `u64`), signed ones zigzag-encoded, `bool` as one byte 0/1, `Option` as a
//! byte 0/1 before the value, strings and byte strings as `varint(len)` then
//! the bytes, sequences as `varint(len)` then the items, and structs and
//! tuples as their fields in order.
//!
//! - `snapshot/<id, 20 digits>` (version 1): `{id: u64, commit_user: str,
//!   identifier: u64, watermark: Option<i64>, time_ms: u64, committables:
//!   [(u32, bytes)], previous_of_user: Option<{identifier: u64, snapshot_id:
//!   u64}>, users: [{commit_user: str, mark: {identifier, snapshot_id}}]}`;
//! - `tag/<name>` (version 1): `{name: str, snapshot_id: u64, identifier:
//!   u64, commit_user: str, create_time_ms: u64, expire_time_ms: Option<u64>}`.
//!
//! The table is read by **listing** keys (`list("snapshot/")`), never by
//! probing ids until a missing one, so a snapshot written past a gap is seen
//! (and reported).

use sink_coordinator::{Snapshot, Storage, Tag};

pub const SNAPSHOT_PREFIX: &str = "snapshot/";
pub const TAG_PREFIX: &str = "tag/";

/// A user's last snapshot as of some snapshot: `(identifier, snapshot id)`.
pub type Mark = (u64, u64);

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RawSnapshot {
    pub id: u64,
    pub commit_user: String,
    pub identifier: u64,
    pub watermark: Option<i64>,
    pub time_ms: u64,
    pub committables: Vec<(u32, Vec<u8>)>,
    pub previous_of_user: Option<Mark>,
    /// Every commit user's last snapshot as of this one, in the stored order.
    pub users: Vec<(String, Mark)>,
    /// The stored bytes (snapshots are immutable: compared again at the end).
    pub bytes: Vec<u8>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RawTag {
    pub name: String,
    pub snapshot_id: u64,
    pub identifier: u64,
    pub commit_user: String,
    pub create_time_ms: u64,
    pub expire_time_ms: Option<u64>,
}

impl RawSnapshot {
    /// The public view, as the core's reader should return it.
    pub fn public(&self) -> Snapshot {
        Snapshot {
            id: self.id,
            commit_user: self.commit_user.clone(),
            identifier: self.identifier,
            watermark: self.watermark,
            time_ms: self.time_ms,
            committables: self.committables.clone(),
        }
    }
}

impl RawTag {
    pub fn public(&self) -> Tag {
        Tag {
            name: self.name.clone(),
            snapshot_id: self.snapshot_id,
            identifier: self.identifier,
            create_time_ms: self.create_time_ms,
            expire_time_ms: self.expire_time_ms,
        }
    }
}

/// A cursor over postcard bytes.
struct Reader<'a> {
    bytes: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    fn new(bytes: &'a [u8]) -> Self {
        Reader { bytes, pos: 0 }
    }

    fn byte(&mut self) -> Result<u8, String> {
        let b = *self
            .bytes
            .get(self.pos)
            .ok_or_else(|| format!("truncated at byte {}", self.pos))?;
        self.pos += 1;
        Ok(b)
    }

    /// LEB128 of at most `max_bytes` bytes, value at most `bits` wide.
    fn varint(&mut self, bits: u32) -> Result<u64, String> {
        let max_bytes = bits.div_ceil(7);
        let mut value: u64 = 0;
        for i in 0..max_bytes {
            let b = self.byte()?;
            let part = u64::from(b & 0x7f);
            let shift = 7 * i;
            // The 10th byte of a u64 holds its top bit only.
            if shift == 63 && part > 1 {
                return Err(format!("varint overflows at byte {}", self.pos));
            }
            value |= part << shift;
            if b & 0x80 == 0 {
                if bits < 64 && value >> bits != 0 {
                    return Err(format!(
                        "varint wider than {bits} bits at byte {}",
                        self.pos
                    ));
                }
                return Ok(value);
            }
        }
        Err(format!("varint too long at byte {}", self.pos))
    }

    fn u32(&mut self) -> Result<u32, String> {
        Ok(self.varint(32)? as u32)
    }

    fn u64(&mut self) -> Result<u64, String> {
        self.varint(64)
    }

    fn i64(&mut self) -> Result<i64, String> {
        let z = self.varint(64)?;
        Ok(((z >> 1) as i64) ^ -((z & 1) as i64))
    }

    fn flag(&mut self, what: &str) -> Result<bool, String> {
        match self.byte()? {
            0 => Ok(false),
            1 => Ok(true),
            b => Err(format!("{what}: byte {b} is neither 0 nor 1")),
        }
    }

    fn option<T>(
        &mut self,
        what: &str,
        f: impl FnOnce(&mut Self) -> Result<T, String>,
    ) -> Result<Option<T>, String> {
        if self.flag(what)? {
            f(self).map(Some)
        } else {
            Ok(None)
        }
    }

    fn len(&mut self) -> Result<usize, String> {
        let n = self.varint(64)?;
        // Every item takes at least one byte: a longer length is a lie.
        if n > (self.bytes.len() - self.pos) as u64 {
            return Err(format!("length {n} exceeds the remaining bytes"));
        }
        Ok(n as usize)
    }

    fn bytes(&mut self) -> Result<&'a [u8], String> {
        let n = self.len()?;
        let out = &self.bytes[self.pos..self.pos + n];
        self.pos += n;
        Ok(out)
    }

    fn str(&mut self) -> Result<String, String> {
        let b = self.bytes()?;
        String::from_utf8(b.to_vec()).map_err(|_| "a string is not UTF-8".to_string())
    }

    fn mark(&mut self) -> Result<Mark, String> {
        Ok((self.u64()?, self.u64()?))
    }

    fn done(&self) -> Result<(), String> {
        if self.pos == self.bytes.len() {
            Ok(())
        } else {
            Err(format!("{} trailing bytes", self.bytes.len() - self.pos))
        }
    }
}

/// Decodes a stored snapshot record.
pub fn decode_snapshot(bytes: &[u8]) -> Result<RawSnapshot, String> {
    let mut r = Reader::new(bytes);
    let version = r.u32()?;
    if version != 1 {
        return Err(format!("snapshot record version {version}"));
    }
    let id = r.u64()?;
    let commit_user = r.str()?;
    let identifier = r.u64()?;
    let watermark = r.option("watermark", Reader::i64)?;
    let time_ms = r.u64()?;
    let n = r.len()?;
    let mut committables = Vec::new();
    for _ in 0..n {
        let s = r.u32()?;
        committables.push((s, r.bytes()?.to_vec()));
    }
    let previous_of_user = r.option("previous_of_user", Reader::mark)?;
    let n = r.len()?;
    let mut users = Vec::new();
    for _ in 0..n {
        let user = r.str()?;
        users.push((user, r.mark()?));
    }
    r.done()?;
    Ok(RawSnapshot {
        id,
        commit_user,
        identifier,
        watermark,
        time_ms,
        committables,
        previous_of_user,
        users,
        bytes: bytes.to_vec(),
    })
}

/// Decodes a stored tag record.
pub fn decode_tag(bytes: &[u8]) -> Result<RawTag, String> {
    let mut r = Reader::new(bytes);
    let version = r.u32()?;
    if version != 1 {
        return Err(format!("tag record version {version}"));
    }
    let tag = RawTag {
        name: r.str()?,
        snapshot_id: r.u64()?,
        identifier: r.u64()?,
        commit_user: r.str()?,
        create_time_ms: r.u64()?,
        expire_time_ms: r.option("expire_time_ms", Reader::u64)?,
    };
    r.done()?;
    Ok(tag)
}

/// The snapshot id of a `snapshot/` key: exactly 20 decimal digits.
pub fn snapshot_id_of(key: &str) -> Option<u64> {
    let digits = key.strip_prefix(SNAPSHOT_PREFIX)?;
    if digits.len() != 20 || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits.parse().ok()
}

/// The listed snapshot ids, checked dense from 1: any other key under
/// `snapshot/`, a gap, or an id past a gap is an error.
pub fn list_snapshot_ids(st: &mut dyn Storage) -> Result<Vec<u64>, String> {
    let keys = st
        .list(SNAPSHOT_PREFIX)
        .map_err(|e| format!("cannot list {SNAPSHOT_PREFIX}: {e}"))?;
    let mut ids = Vec::with_capacity(keys.len());
    for key in &keys {
        let id = snapshot_id_of(key)
            .ok_or_else(|| format!("the table holds {key:?}, which is no snapshot key"))?;
        ids.push(id);
    }
    ids.sort_unstable();
    for (i, id) in ids.iter().enumerate() {
        let expected = i as u64 + 1;
        if *id != expected {
            return Err(format!(
                "snapshot ids are not dense: snapshot {expected} is missing, snapshot {id} exists (listed: {})",
                describe_ids(&ids)
            ));
        }
    }
    Ok(ids)
}

fn describe_ids(ids: &[u64]) -> String {
    if ids.len() <= 12 {
        format!("{ids:?}")
    } else {
        format!("{:?} ... {:?}", &ids[..6], &ids[ids.len() - 6..])
    }
}

/// The value of `key`, which a listing named.
fn read_listed(st: &mut dyn Storage, key: &str) -> Result<Vec<u8>, String> {
    st.get(key)
        .map_err(|e| format!("cannot read {key}: {e}"))?
        .ok_or_else(|| format!("{key} is listed but cannot be read"))
}

/// Reads and decodes snapshot `id`.
pub fn read_snapshot(st: &mut dyn Storage, id: u64) -> Result<RawSnapshot, String> {
    let key = format!("{SNAPSHOT_PREFIX}{id:020}");
    let bytes = read_listed(st, &key)?;
    let snap = decode_snapshot(&bytes).map_err(|e| format!("{key} does not decode: {e}"))?;
    if snap.id != id {
        return Err(format!("{key} holds snapshot id {}", snap.id));
    }
    Ok(snap)
}

/// Every tag, by name in byte order.
pub fn read_tags(st: &mut dyn Storage) -> Result<Vec<RawTag>, String> {
    let keys = st
        .list(TAG_PREFIX)
        .map_err(|e| format!("cannot list {TAG_PREFIX}: {e}"))?;
    let mut out = Vec::with_capacity(keys.len());
    for key in keys {
        let name = key.strip_prefix(TAG_PREFIX).unwrap_or_default().to_string();
        let bytes = read_listed(st, &key)?;
        let tag = decode_tag(&bytes).map_err(|e| format!("{key} does not decode: {e}"))?;
        if tag.name != name {
            return Err(format!("{key} holds tag {:?}", tag.name));
        }
        out.push(tag);
    }
    out.sort_by(|a, b| a.name.as_bytes().cmp(b.name.as_bytes()));
    Ok(out)
}

/// The bookkeeping every snapshot carries for the exactly-once filter,
/// checked against the log before it: `users` is the previous snapshot's map
/// with this user's mark set to `(identifier, id)`, sorted by user and
/// without duplicates; `previous_of_user` is this user's mark before it; and
/// the user's identifiers strictly increase.
pub fn check_chain(prev: Option<&RawSnapshot>, snap: &RawSnapshot) -> Result<(), String> {
    let mut expected: Vec<(String, Mark)> = prev.map(|p| p.users.clone()).unwrap_or_default();
    let before = expected
        .iter()
        .find(|(u, _)| *u == snap.commit_user)
        .map(|(_, m)| *m);
    if snap.previous_of_user != before {
        return Err(format!(
            "snapshot {} says the previous snapshot of {:?} is {:?}, the log says {:?}",
            snap.id, snap.commit_user, snap.previous_of_user, before
        ));
    }
    if let Some((identifier, _)) = before {
        if snap.identifier <= identifier {
            return Err(format!(
                "commit user {:?} commits identifier {} in snapshot {} after identifier {}",
                snap.commit_user,
                sink_coordinator::checkpoint_name(snap.identifier),
                snap.id,
                sink_coordinator::checkpoint_name(identifier)
            ));
        }
    }
    expected.retain(|(u, _)| *u != snap.commit_user);
    expected.push((snap.commit_user.clone(), (snap.identifier, snap.id)));
    expected.sort_by(|a, b| a.0.cmp(&b.0));
    if snap.users != expected {
        return Err(format!(
            "snapshot {} carries the user marks {:?}, the log gives {:?}",
            snap.id, snap.users, expected
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use sink_coordinator::env::{AsEnv, MemEnv};
    use sink_coordinator::table::TableLog;

    /// The independent decoder reads what the core writes (and agrees with
    /// the core's reader), including the user marks.
    #[test]
    fn reads_what_the_core_writes() {
        let mut mem = MemEnv::default();
        let mut env = mem.as_env();
        let mut log = TableLog::default();
        let c: &[u8] = b"s0-c1";
        log.commit(&mut env, "u", 1, Some(-7), &[(0, c), (3, b"")])
            .unwrap();
        log.commit(&mut env, "v", 1, None, &[]).unwrap();
        log.commit(&mut env, "u", sink_coordinator::END, Some(i64::MAX), &[])
            .unwrap();
        sink_coordinator::table::create_tag(&mut env, "savepoint-1", 1, 1, "u", Some(5)).unwrap();
        let st = &mut mem.storage;
        let ids = list_snapshot_ids(st).unwrap();
        assert_eq!(ids, vec![1, 2, 3]);
        let core = sink_coordinator::table::list_snapshots(st).unwrap();
        let mut prev: Option<RawSnapshot> = None;
        for (id, theirs) in ids.iter().zip(&core) {
            let ours = read_snapshot(st, *id).unwrap();
            assert_eq!(ours.public(), *theirs);
            check_chain(prev.as_ref(), &ours).unwrap();
            prev = Some(ours);
        }
        let last = prev.unwrap();
        assert_eq!(last.previous_of_user, Some((1, 1)));
        assert_eq!(
            last.users,
            vec![
                ("u".to_string(), (sink_coordinator::END, 3)),
                ("v".to_string(), (1, 2))
            ]
        );
        let tags = read_tags(st).unwrap();
        assert_eq!(tags[0].commit_user, "u");
        assert_eq!(
            tags.iter().map(RawTag::public).collect::<Vec<_>>(),
            sink_coordinator::table::list_tags(st).unwrap()
        );
    }

    #[test]
    fn rejects_bad_bytes_and_gaps() {
        assert!(decode_snapshot(&[]).is_err());
        assert!(decode_snapshot(&[2]).is_err());
        // A varint that never ends, and a length longer than the input.
        assert!(decode_snapshot(&[1, 0xff, 0xff, 0xff]).is_err());
        assert!(decode_tag(&[1, 0x7f, b'a']).is_err());
        let mut st = sink_coordinator::MemStorage::default();
        st.put("snapshot/00000000000000000001", b"x").unwrap();
        st.put("snapshot/00000000000000000003", b"x").unwrap();
        let err = list_snapshot_ids(&mut st).unwrap_err();
        assert!(err.contains("snapshot 2 is missing"), "{err}");
        st.put("snapshot/2", b"x").unwrap();
        assert!(list_snapshot_ids(&mut st)
            .unwrap_err()
            .contains("no snapshot key"));
    }

    #[test]
    fn zigzag_and_varint_limits() {
        let mut r = Reader::new(&[0x01]);
        assert_eq!(r.i64().unwrap(), -1);
        let mut r = Reader::new(&[0x02]);
        assert_eq!(r.i64().unwrap(), 1);
        // u32::MAX fits in 5 bytes; 2^32 does not fit a u32.
        let mut r = Reader::new(&[0xff, 0xff, 0xff, 0xff, 0x0f]);
        assert_eq!(r.u32().unwrap(), u32::MAX);
        let mut r = Reader::new(&[0x80, 0x80, 0x80, 0x80, 0x10]);
        assert!(r.u32().is_err());
        // u64::MAX in 10 bytes; a 10th byte above 1 overflows.
        let mut max = vec![0xff; 9];
        max.push(0x01);
        assert_eq!(Reader::new(&max).u64().unwrap(), u64::MAX);
        max[9] = 0x02;
        assert!(Reader::new(&max).u64().is_err());
    }
}
