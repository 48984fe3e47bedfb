//! `paimon-rust-read WAREHOUSE DB TABLE [TAG | snapshot=N]`: reads every row of `DB.TABLE`
//! in the filesystem catalog at `WAREHOUSE` (optionally as of the tag `TAG`, Paimon's
//! `scan.tag-name`, or of the snapshot `N`, `scan.snapshot-id`) with the `paimon` crate,
//! and prints its `id` column sorted, as one JSON line (the same list
//! tests/paimon/JavaRead.java prints).
use std::collections::HashMap;
use std::process::ExitCode;

use arrow_array::cast::AsArray;
use arrow_array::types::Int64Type;
use arrow_array::Array;
use arrow_schema::DataType;
use futures::TryStreamExt;
use paimon::catalog::Identifier;
use paimon::{Catalog, CatalogOptions, FileSystemCatalog, Options};

type BoxError = Box<dyn std::error::Error + Send + Sync>;

async fn read_ids(
    warehouse: &str,
    db: &str,
    table: &str,
    as_of: Option<&str>,
) -> Result<Vec<i64>, BoxError> {
    let mut options = Options::new();
    options.set(CatalogOptions::WAREHOUSE, warehouse);
    let catalog = FileSystemCatalog::new(options)?;
    let mut table = catalog.get_table(&Identifier::new(db, table)).await?;
    if let Some(as_of) = as_of {
        let (key, value) = match as_of.strip_prefix("snapshot=") {
            Some(id) => ("scan.snapshot-id", id),
            None => ("scan.tag-name", as_of),
        };
        // Strict: a missing tag or snapshot is an error, not a silent read of the latest.
        let travel = HashMap::from([(key.to_string(), value.to_string())]);
        table = table.copy_with_time_travel_strict(travel).await?;
    }
    let mut rb = table.new_read_builder();
    rb.with_projection(&["id"])?;
    let plan = rb.new_scan().plan().await?;
    let batches: Vec<_> = rb
        .new_read()?
        .to_arrow(plan.splits())?
        .try_collect()
        .await?;
    let mut ids = Vec::new();
    for batch in batches {
        let col = batch
            .column_by_name("id")
            .ok_or("no `id` column in the read batch")?;
        let col = arrow_cast::cast(col, &DataType::Int64)?;
        let col = col.as_primitive::<Int64Type>();
        if col.null_count() > 0 {
            return Err("null `id`".into());
        }
        ids.extend(col.values().iter().copied());
    }
    ids.sort_unstable();
    Ok(ids)
}

#[tokio::main]
async fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if !(3..=4).contains(&args.len()) {
        eprintln!("usage: paimon-rust-read WAREHOUSE DB TABLE [TAG | snapshot=N]");
        return ExitCode::from(2);
    }
    match read_ids(
        &args[0],
        &args[1],
        &args[2],
        args.get(3).map(String::as_str),
    )
    .await
    {
        Ok(ids) => {
            let list: Vec<String> = ids.iter().map(i64::to_string).collect();
            println!("[{}]", list.join(", "));
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("paimon-rust-read: {e}");
            ExitCode::FAILURE
        }
    }
}
