//! `sinkcoord table create`: makes the table a coordinator of `table-format = paimon`
//! commits to (issue 22, item 3). A Paimon table is its schema, `schema/schema-0`
//! (Paimon's `TableSchema` JSON, an append table with unaware buckets and uncompressed
//! manifests, docs/paimon.md); a table that Paimon itself created is used as it is. A
//! native table needs no creation: its first commit creates the log.

use clap::{Args, Subcommand, ValueEnum};
use sink_coordinator::Storage;
use sink_coordinator_host::storage::TableUrl;
use sink_coordinator_paimon::schema::{decode_schema, encode_schema, schema_key, CreateTable};

use crate::Failure;

#[derive(Args, Debug)]
pub struct TableArgs {
    #[command(subcommand)]
    op: TableOp,
}

#[derive(Subcommand, Debug)]
enum TableOp {
    /// Create a table: for `--format paimon`, write its schema (`schema/schema-0`) with
    /// put-if-absent. A schema already there (written by Paimon, pypaimon or an earlier
    /// create) is kept and checked; nothing else is written.
    #[command(
        after_help = "Exit status: 0 created, or the table already has a Paimon schema with \
        the same columns and partition keys; 1 the table cannot be opened, or its existing \
        schema differs or does not decode (nothing is written); 2 a usage error (a malformed \
        --schema, a partition key that is no column); 3 the table's storage failed."
    )]
    Create(CreateArgs),
}

/// The formats `table create` knows (`table-format` of the coordinator).
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum Format {
    /// This project's log: created by its first commit, so nothing to do.
    Native,
    /// An Apache Paimon append table (bucket -1).
    Paimon,
}

#[derive(Args, Debug)]
struct CreateArgs {
    /// The table: a directory, or a table URL (`file:///path`, `s3://bucket/prefix`,
    /// `gs://...`, `az://...`). For Paimon readers' catalogs, the table of
    /// `<warehouse>/<db>.db/<name>` is `db.name`.
    table: String,
    /// The table format.
    #[arg(long, value_enum, default_value = "paimon")]
    format: Format,
    /// The columns, as Paimon types: `"id BIGINT NOT NULL, name STRING, dt STRING"`
    /// (BOOLEAN, TINYINT, SMALLINT, INT, BIGINT, DATE, STRING, VARCHAR(n), CHAR(n) can be
    /// partition keys and carry value stats; other Paimon types may be data columns).
    #[arg(long, value_name = "COLUMNS")]
    schema: Option<String>,
    /// A partition key (a column name); repeat for more, in order.
    #[arg(long = "partition-key", value_name = "COLUMN")]
    partition_keys: Vec<String>,
    /// A table option `KEY=VALUE` (e.g. `file.format=parquet`); repeat for more.
    /// `bucket` must stay -1.
    #[arg(long = "option", value_name = "KEY=VALUE")]
    options: Vec<String>,
}

pub fn cmd_table(args: &TableArgs) -> Result<String, Failure> {
    match &args.op {
        TableOp::Create(a) => create(a),
    }
}

/// `"id BIGINT, d DECIMAL(10, 2) NOT NULL"` as (name, type) pairs: commas inside
/// parentheses belong to the type.
fn parse_columns(text: &str) -> Result<Vec<(String, String)>, String> {
    let mut parts = Vec::new();
    let (mut depth, mut start) = (0i32, 0usize);
    for (i, ch) in text.char_indices() {
        match ch {
            '(' => depth += 1,
            ')' => depth -= 1,
            ',' if depth == 0 => {
                parts.push(&text[start..i]);
                start = i + 1;
            }
            _ => {}
        }
        if depth < 0 {
            return Err("a ')' without its '('".into());
        }
    }
    if depth != 0 {
        return Err("a '(' without its ')'".into());
    }
    parts.push(&text[start..]);
    parts
        .into_iter()
        .map(|p| {
            let p = p.trim();
            let (name, ty) = p
                .split_once(char::is_whitespace)
                .ok_or_else(|| format!("column {p:?} has no type (write \"NAME TYPE\")"))?;
            let ty = ty.trim();
            if name.is_empty() || ty.is_empty() {
                return Err(format!("column {p:?} has no type (write \"NAME TYPE\")"));
            }
            Ok((name.to_string(), ty.to_string()))
        })
        .collect()
}

fn parse_options(options: &[String]) -> Result<Vec<(String, String)>, String> {
    options
        .iter()
        .map(|o| {
            let (k, v) = o
                .split_once('=')
                .ok_or_else(|| format!("option {o:?} is not KEY=VALUE"))?;
            Ok((k.trim().to_string(), v.trim().to_string()))
        })
        .collect()
}

fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}

fn create(args: &CreateArgs) -> Result<String, Failure> {
    let url = TableUrl::parse(&args.table).map_err(|e| Failure::host(e.to_string()))?;
    if args.format == Format::Native {
        return Ok(format!(
            "{}: a native table needs no creation (its first commit creates the log); nothing written\n",
            args.table
        ));
    }
    let Some(schema) = args.schema.as_deref() else {
        return Err(Failure::malformed(
            "--schema COLUMNS is required for --format paimon (e.g. --schema \"id BIGINT, name STRING\")",
        ));
    };
    let columns =
        parse_columns(schema).map_err(|e| Failure::malformed(format!("--schema: {e}")))?;
    let options = parse_options(&args.options).map_err(Failure::malformed)?;
    let column_refs: Vec<(&str, &str)> = columns
        .iter()
        .map(|(n, t)| (n.as_str(), t.as_str()))
        .collect();
    let key_refs: Vec<&str> = args.partition_keys.iter().map(String::as_str).collect();
    let option_refs: Vec<(&str, &str)> = options
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_str()))
        .collect();
    let bytes = encode_schema(
        &CreateTable {
            columns: &column_refs,
            partition_keys: &key_refs,
            options: &option_refs,
        },
        now_ms(),
    )
    .map_err(|e| Failure::malformed(format!("--schema: {e:?}")))?;
    let wanted =
        decode_schema(&bytes).map_err(|e| Failure::malformed(format!("--schema: {e:?}")))?;
    let mut storage = url
        .open(true, &[])
        .map_err(|e| Failure::host(e.to_string()))?;
    let key = schema_key(0);
    let created = storage
        .put_if_absent(&key, &bytes)
        .map_err(|e| Failure::storage(format!("{}: put-if-absent {key}: {e}", args.table)))?;
    if created {
        return Ok(format!(
            "{}: created the Paimon table ({key}: {} column(s), partition keys [{}])\n",
            args.table,
            wanted.fields.len(),
            wanted.partition_keys.join(", ")
        ));
    }
    let existing = storage
        .get(&key)
        .map_err(|e| Failure::storage(format!("{}: get {key}: {e}", args.table)))?
        .ok_or_else(|| Failure::host(format!("{}: {key} exists but cannot be read", args.table)))?;
    let found = decode_schema(&existing).map_err(|e| {
        Failure::host(format!(
            "{}: the table's {key} is not a Paimon append table this coordinator commits to: {e:?}",
            args.table
        ))
    })?;
    let same = found.partition_keys == wanted.partition_keys
        && found.fields.len() == wanted.fields.len()
        && found
            .fields
            .iter()
            .zip(&wanted.fields)
            .all(|(a, b)| a.name == b.name && a.ty == b.ty);
    if !same {
        let describe = |s: &sink_coordinator_paimon::TableSchema| {
            let cols: Vec<String> = s
                .fields
                .iter()
                .map(|f| format!("{} {}", f.name, f.type_text))
                .collect();
            format!(
                "[{}] partitioned by [{}]",
                cols.join(", "),
                s.partition_keys.join(", ")
            )
        };
        return Err(Failure::host(format!(
            "{}: the table already has {key} with other columns: {} (asked: {}); nothing written",
            args.table,
            describe(&found),
            describe(&wanted)
        )));
    }
    Ok(format!(
        "{}: the Paimon table exists ({key}, schema {}); kept as it is\n",
        args.table, found.id
    ))
}

#[cfg(test)]
mod tests {
    use super::parse_columns;

    #[test]
    fn columns_split_outside_parentheses() {
        let c = parse_columns(" id BIGINT NOT NULL, d DECIMAL(10, 2), s VARCHAR(3)").unwrap();
        assert_eq!(
            c,
            vec![
                ("id".into(), "BIGINT NOT NULL".into()),
                ("d".into(), "DECIMAL(10, 2)".into()),
                ("s".into(), "VARCHAR(3)".into())
            ]
        );
        assert!(parse_columns("id").is_err());
        assert!(parse_columns("a INT, ").is_err());
        assert!(parse_columns("a DECIMAL(1, 2").is_err());
    }
}
