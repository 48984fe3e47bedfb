//! Test driver: performs the storage calls the core will perform, on a local directory,
//! with the crate's pure functions. Reads one JSON request on stdin, prints one JSON reply.
//!
//! ops: `create` (schema-0), `commit` (one snapshot of a user's files, exactly-once by the
//! marks), `tag` (tag a snapshot), `inspect` (decode every snapshot and manifest list).

use serde_json::{json, Value};
use sink_coordinator_paimon::committable::{self, ColumnStats, DataFile};
use sink_coordinator_paimon::manifest::{self, ManifestFileMeta, MergeOptions};
use sink_coordinator_paimon::naming::Role;
use sink_coordinator_paimon::snapshot::{self, Marks, NewSnapshot, Snapshot};
use sink_coordinator_paimon::{
    decode_schema, encode_schema, ColumnType, CreateTable, Datum, TableSchema,
};
use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};

#[derive(Default)]
struct Calls {
    get: u32,
    put: u32,
    put_if_absent: u32,
    list: u32,
}

struct Store {
    root: PathBuf,
    calls: Calls,
}

impl Store {
    fn path(&self, key: &str) -> PathBuf {
        self.root.join(key)
    }
    fn get(&mut self, key: &str) -> Option<Vec<u8>> {
        self.calls.get += 1;
        std::fs::read(self.path(key)).ok()
    }
    fn put(&mut self, key: &str, bytes: &[u8]) {
        self.calls.put += 1;
        let p = self.path(key);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        let tmp = p.with_extension("tmp-put");
        std::fs::write(&tmp, bytes).unwrap();
        std::fs::rename(&tmp, &p).unwrap();
    }
    fn put_if_absent(&mut self, key: &str, bytes: &[u8]) -> bool {
        self.calls.put_if_absent += 1;
        let p = self.path(key);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        match std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&p)
        {
            Ok(mut f) => {
                f.write_all(bytes).unwrap();
                true
            }
            Err(_) => false,
        }
    }
    fn list(&mut self, dir: &str) -> Vec<String> {
        self.calls.list += 1;
        let mut v: Vec<String> = std::fs::read_dir(self.path(dir))
            .map(|d| {
                d.filter_map(|e| e.ok()?.file_name().into_string().ok())
                    .collect()
            })
            .unwrap_or_default();
        v.sort();
        v
    }
}

fn fail(kind: &str, detail: String) -> ! {
    println!("{}", json!({ "error": kind, "detail": detail }));
    std::process::exit(3);
}

fn datum(v: &Value, kind: ColumnType) -> Datum {
    match (v, kind) {
        (Value::Null, _) => Datum::Null,
        (Value::Bool(b), _) => Datum::Bool(*b),
        (Value::String(s), _) => Datum::Str(s.clone()),
        (Value::Number(n), ColumnType::BigInt) => Datum::Long(n.as_i64().unwrap()),
        (Value::Number(n), _) => Datum::Int(n.as_i64().unwrap() as i32),
        _ => fail("BadRequest", format!("value {v}")),
    }
}

/// The latest snapshot id: the hint, then forward while the next one exists (a hint may
/// lag), or a listing when there is no hint.
fn latest_id(s: &mut Store) -> Option<i64> {
    let mut id = match s
        .get(snapshot::LATEST_KEY)
        .and_then(|b| snapshot::parse_hint(&b))
    {
        Some(id) => id,
        None => s
            .list("snapshot")
            .iter()
            .filter_map(|n| snapshot::parse_snapshot_file_name(n))
            .max()?,
    };
    while s.path(&snapshot::snapshot_key(id + 1)).exists() {
        id += 1;
    }
    Some(id)
}

fn read_snapshot(s: &mut Store, id: i64) -> (Snapshot, Vec<u8>) {
    let b = s
        .get(&snapshot::snapshot_key(id))
        .unwrap_or_else(|| fail("Missing", format!("snapshot {id}")));
    let snap = snapshot::decode_snapshot(&b).unwrap_or_else(|e| fail("Snapshot", format!("{e:?}")));
    (snap, b)
}

fn read_list(s: &mut Store, name: &str) -> Vec<ManifestFileMeta> {
    let b = s
        .get(&snapshot::manifest_key(name))
        .unwrap_or_else(|| fail("Missing", name.to_string()));
    manifest::decode_manifest_list(&b)
        .unwrap_or_else(|e| fail("ManifestList", format!("{name}: {e:?}")))
}

fn read_schema(s: &mut Store, id: i64) -> TableSchema {
    let b = s
        .get(&sink_coordinator_paimon::schema::schema_key(id))
        .unwrap_or_else(|| fail("Missing", format!("schema {id}")));
    decode_schema(&b).unwrap_or_else(|e| fail("Schema", format!("{e:?}")))
}

/// The marks as of snapshot `prev`: its own, or for a snapshot Paimon wrote, a bounded
/// walk back to the newest snapshot with marks, adding the users seen on the way.
fn marks_at(s: &mut Store, prev: &Snapshot) -> Marks {
    if let Some(m) = prev
        .marks()
        .unwrap_or_else(|e| fail("Marks", format!("{e:?}")))
    {
        return m;
    }
    let mut foreign: Vec<Snapshot> = vec![prev.clone()];
    let mut base = Marks::default();
    let mut id = prev.id - 1;
    while id >= 1 && foreign.len() < 1000 {
        let Some(b) = s.get(&snapshot::snapshot_key(id)) else {
            break;
        };
        let snap = snapshot::decode_snapshot(&b).unwrap();
        if let Some(m) = snap.marks().unwrap() {
            base = m;
            break;
        }
        foreign.push(snap);
        id -= 1;
    }
    for f in foreign.iter().rev() {
        base.users.insert(
            f.commit_user.clone(),
            snapshot::UserMark {
                identifier: f.commit_identifier,
                snapshot_id: f.id,
            },
        );
    }
    base
}

fn create(s: &mut Store, r: &Value) -> Value {
    let cols: Vec<(String, String)> = r["columns"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            (
                c[0].as_str().unwrap().to_string(),
                c[1].as_str().unwrap().to_string(),
            )
        })
        .collect();
    let cols_ref: Vec<(&str, &str)> = cols.iter().map(|(a, b)| (a.as_str(), b.as_str())).collect();
    let keys: Vec<&str> = r["partition_keys"]
        .as_array()
        .map_or(vec![], |a| a.iter().map(|k| k.as_str().unwrap()).collect());
    let opts: Vec<(&str, &str)> = r["options"].as_object().map_or(vec![], |o| {
        o.iter()
            .map(|(k, v)| (k.as_str(), v.as_str().unwrap()))
            .collect()
    });
    let t = CreateTable {
        columns: &cols_ref,
        partition_keys: &keys,
        options: &opts,
    };
    let bytes = encode_schema(&t, r["time_millis"].as_i64().unwrap_or(0))
        .unwrap_or_else(|e| fail("Schema", format!("{e:?}")));
    if !s.put_if_absent("schema/schema-0", &bytes) {
        fail("Exists", "schema/schema-0".into());
    }
    json!({ "created": true })
}

fn commit(s: &mut Store, r: &Value) -> Value {
    let user = r["user"].as_str().unwrap();
    let identifier = r["identifier"].as_i64().unwrap();
    let time = r["time_millis"].as_i64().unwrap_or(0);
    let opts = MergeOptions {
        max_manifests: r["max_manifests"]
            .as_u64()
            .map_or(MergeOptions::default().max_manifests, |v| v as usize),
        ..MergeOptions::default()
    };
    for _attempt in 0..10 {
        let prev_id = latest_id(s);
        let prev = prev_id.map(|id| read_snapshot(s, id).0);
        let schema_id = prev.as_ref().map_or(0, |p| p.schema_id);
        let table = read_schema(s, schema_id);
        let marks = prev
            .as_ref()
            .map_or_else(Marks::default, |p| marks_at(s, p));
        if let Some(m) = marks.users.get(user) {
            if m.identifier >= identifier {
                return json!({ "skipped": true, "committed_in": m.snapshot_id });
            }
        }
        let kinds = table.partition_kinds();
        // Each file goes through the committable encoding and its validating decoder,
        // as a writer's report reaches the core.
        let mut files: Vec<DataFile> = Vec::new();
        for f in r["files"].as_array().unwrap() {
            let stats = f["stats"].as_array().map_or(vec![], |a| {
                a.iter()
                    .map(|c| {
                        let col = c["column"].as_str().unwrap();
                        let k = table.field(col).map_or(ColumnType::Other, |x| x.ty.kind);
                        ColumnStats {
                            column: col.to_string(),
                            min: datum(&c["min"], k),
                            max: datum(&c["max"], k),
                            null_count: c["null_count"].as_i64(),
                        }
                    })
                    .collect()
            });
            let part = f["partition"].as_array().map_or(vec![], |a| {
                a.iter()
                    .enumerate()
                    .map(|(i, v)| datum(v, kinds.get(i).copied().unwrap_or(ColumnType::Other)))
                    .collect()
            });
            let df = DataFile {
                file_name: f["file_name"].as_str().unwrap().to_string(),
                file_size: f["file_size"].as_u64().unwrap(),
                row_count: f["row_count"].as_u64().unwrap(),
                schema_id: f["schema_id"].as_u64().unwrap_or(table.id as u64),
                min_sequence_number: f["min_seq"].as_i64().unwrap_or(0),
                max_sequence_number: f["max_seq"].as_i64().unwrap_or(0),
                creation_time_millis: time,
                partition: part,
                value_stats: stats,
            };
            let bytes = committable::encode(&df);
            let back = committable::decode(&bytes, &table)
                .unwrap_or_else(|e| fail("InvalidCommittable", format!("{e:?}")));
            files.push(back);
        }
        let new_id = prev_id.unwrap_or(0) + 1;
        let mut delta: Vec<ManifestFileMeta> = Vec::new();
        if !files.is_empty() {
            let (meta, bytes) = manifest::write_manifest(&table, &files, new_id).unwrap();
            s.put(&snapshot::manifest_key(&meta.file_name), &bytes);
            delta.push(meta);
        }
        let mut base: Vec<ManifestFileMeta> = Vec::new();
        if let Some(p) = &prev {
            base = read_list(s, &p.base_manifest_list);
            base.extend(read_list(s, &p.delta_manifest_list));
        }
        let mut merged = 0;
        if let Some(range) = manifest::plan_merge(&base, &opts) {
            let inputs: Vec<Vec<u8>> = base[range.clone()]
                .iter()
                .map(|m| s.get(&snapshot::manifest_key(&m.file_name)).unwrap())
                .collect();
            let refs: Vec<&[u8]> = inputs.iter().map(|b| b.as_slice()).collect();
            if let Some(m) =
                manifest::merge_manifests(&kinds, &base[range.clone()], &refs, new_id).unwrap()
            {
                for (meta, bytes) in &m.written {
                    s.put(&snapshot::manifest_key(&meta.file_name), bytes);
                }
                merged = range.len() - m.segment.len() + m.written.len();
                base = manifest::apply_merge(&base, range, &m);
            }
        }
        let (base_name, base_bytes) = manifest::write_manifest_list(&base, Role::BaseList, new_id);
        let (delta_name, delta_bytes) =
            manifest::write_manifest_list(&delta, Role::DeltaList, new_id);
        s.put(&snapshot::manifest_key(&base_name), &base_bytes);
        s.put(&snapshot::manifest_key(&delta_name), &delta_bytes);
        let delta_rows: i64 = files.iter().map(|f| f.row_count as i64).sum();
        let new_marks = marks.advance(user, identifier, new_id);
        let snap = Snapshot::new_append(&NewSnapshot {
            id: new_id,
            schema_id: table.id,
            base_manifest_list: (&base_name, base_bytes.len() as i64),
            delta_manifest_list: (&delta_name, delta_bytes.len() as i64),
            commit_user: user,
            commit_identifier: identifier,
            time_millis: time,
            total_record_count: prev
                .as_ref()
                .and_then(|p| p.total_record_count)
                .unwrap_or(0)
                + delta_rows,
            delta_record_count: delta_rows,
            watermark: r["watermark"].as_i64(),
            marks: &new_marks,
        });
        if !s.put_if_absent(&snapshot::snapshot_key(new_id), &snap.encode()) {
            continue; // another committer took this id: retry on the new latest
        }
        s.put(snapshot::LATEST_KEY, &snapshot::hint_bytes(new_id));
        if new_id == 1 {
            s.put(snapshot::EARLIEST_KEY, &snapshot::hint_bytes(1));
        }
        return json!({ "snapshot_id": new_id, "base_list_len": base.len(), "merged": merged,
                       "base": base_name, "delta": delta_name });
    }
    fail("Conflict", "too many retries".into())
}

fn tag(s: &mut Store, r: &Value) -> Value {
    let id = r["snapshot"]
        .as_i64()
        .unwrap_or_else(|| latest_id(s).unwrap());
    let name = r["name"].as_str().unwrap();
    let key = snapshot::tag_key(name).unwrap_or_else(|e| fail("Tag", format!("{e:?}")));
    let (_, bytes) = read_snapshot(s, id);
    let created = s.put_if_absent(&key, &snapshot::tag_bytes(&bytes, None));
    json!({ "tag": key, "created": created })
}

fn inspect(s: &mut Store) -> Value {
    let mut out = Vec::new();
    let mut ids: Vec<i64> = s
        .list("snapshot")
        .iter()
        .filter_map(|n| snapshot::parse_snapshot_file_name(n))
        .collect();
    ids.sort();
    for id in ids {
        let (snap, _) = read_snapshot(s, id);
        let lists: BTreeMap<&str, Value> = [
            ("base", &snap.base_manifest_list),
            ("delta", &snap.delta_manifest_list),
        ]
        .into_iter()
        .map(|(k, name)| {
            let metas = read_list(s, name);
            (
                k,
                json!(metas
                    .iter()
                    .map(
                        |m| json!({"file_name": m.file_name, "added": m.num_added_files,
                    "deleted": m.num_deleted_files, "file_size": m.file_size})
                    )
                    .collect::<Vec<_>>()),
            )
        })
        .collect();
        let marks = snap.marks().unwrap().map(|m| {
            json!({ "users": m.users.iter().map(|(u, x)| (u.clone(), json!([x.identifier, x.snapshot_id]))).collect::<BTreeMap<_, _>>(),
                    "previous": m.previous_of_user })
        });
        out.push(json!({ "id": id, "user": snap.commit_user, "identifier": snap.commit_identifier,
            "kind": snap.commit_kind, "total": snap.total_record_count, "delta_count": snap.delta_record_count,
            "lists": lists, "marks": marks }));
    }
    json!({ "snapshots": out })
}

fn main() {
    let mut input = String::new();
    std::io::stdin().read_to_string(&mut input).unwrap();
    let r: Value =
        serde_json::from_str(&input).unwrap_or_else(|e| fail("BadRequest", e.to_string()));
    let mut s = Store {
        root: Path::new(r["table"].as_str().unwrap()).to_path_buf(),
        calls: Calls::default(),
    };
    let mut reply = match r["op"].as_str().unwrap_or("") {
        "create" => create(&mut s, &r),
        "commit" => commit(&mut s, &r),
        "tag" => tag(&mut s, &r),
        "inspect" => inspect(&mut s),
        op => fail("BadRequest", format!("op {op}")),
    };
    reply["calls"] = json!({ "get": s.calls.get, "put": s.calls.put, "put_if_absent": s.calls.put_if_absent, "list": s.calls.list });
    println!("{reply}");
}
