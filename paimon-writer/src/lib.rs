//! The writer side of an Apache Paimon append table for a Rust job: rows in, a Parquet
//! data file and its committable out.
//!
//! A writer subtask of a job on a Paimon table (docs/paimon.md) writes each new data file
//! under the table (`<partition path>/bucket-0/<file name>`, [`FinishedFile::key`]) and
//! reports the file's metadata as a committable ([`FinishedFile::committable`], encoding
//! `PCM` v1) to the coordinator, which commits the files of a checkpoint as one Paimon
//! snapshot. [`DataFileWriter`] is that file: rows of one partition, typed by the table's
//! schema, with the value stats Paimon's scan filters use.
//!
//! Supported column types: BOOLEAN, TINYINT, SMALLINT, INT, DATE (INT32), BIGINT (INT64)
//! and STRING/VARCHAR/CHAR (UTF-8 BYTE_ARRAY), the types the committable's values cover.
//! Parquet fields carry Paimon's field ids, as Paimon's own writer sets them.

#![warn(missing_docs)]

use std::fmt;
use std::sync::Arc;

use parquet::basic::{LogicalType, Repetition, Type as PhysicalType};
use parquet::column::writer::ColumnWriter;
use parquet::data_type::ByteArray;
use parquet::file::properties::WriterProperties;
use parquet::file::writer::SerializedFileWriter;
use parquet::schema::types::Type;
use sink_coordinator_paimon::committable::{data_file_key, encode, ColumnStats, DataFile};
use sink_coordinator_paimon::schema::TableSchema;
use sink_coordinator_paimon::types::{ColumnType, Datum};

/// Why a row or a file was refused.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum WriteError {
    /// A row with another number of values than the table has columns.
    Arity {
        /// The table's column count.
        expected: usize,
        /// The row's value count.
        got: usize,
    },
    /// A value that does not fit its column (a null in a NOT NULL column, a string in an
    /// INT column, ...).
    Type {
        /// The column's name.
        column: String,
    },
    /// A column type this writer does not write (nested types, decimals, timestamps, ...).
    UnsupportedColumn {
        /// The column's name.
        column: String,
    },
    /// The partition values do not fit the table's partition keys.
    Partition,
    /// A file name that is not a plain name (see the committable's rules).
    FileName,
    /// A row whose partition values differ from the file's: one file holds one partition.
    OtherPartition,
    /// The Parquet writer failed.
    Parquet(String),
}

impl fmt::Display for WriteError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            WriteError::Arity { expected, got } => {
                write!(f, "a row of {got} values for a table of {expected} columns")
            }
            WriteError::Type { column } => write!(f, "a value that does not fit column {column}"),
            WriteError::UnsupportedColumn { column } => {
                write!(f, "column {column} has a type this writer does not write")
            }
            WriteError::Partition => f.write_str("partition values that do not fit the table"),
            WriteError::FileName => f.write_str("a file name that is not a plain name"),
            WriteError::OtherPartition => f.write_str("a row of another partition than its file's"),
            WriteError::Parquet(e) => write!(f, "parquet: {e}"),
        }
    }
}

impl std::error::Error for WriteError {}

impl From<parquet::errors::ParquetError> for WriteError {
    fn from(e: parquet::errors::ParquetError) -> Self {
        WriteError::Parquet(e.to_string())
    }
}

/// One column's buffered values.
enum Values {
    Bool(Vec<bool>),
    Int(Vec<i32>),
    Long(Vec<i64>),
    Str(Vec<ByteArray>),
}

struct Column {
    name: String,
    kind: ColumnType,
    nullable: bool,
    values: Values,
    /// 1 = present, 0 = null (Parquet definition levels of an optional field).
    defined: Vec<i16>,
    min: Datum,
    max: Datum,
    nulls: i64,
}

impl Column {
    fn push(&mut self, v: &Datum) -> Result<(), WriteError> {
        let bad = || WriteError::Type {
            column: self.name.clone(),
        };
        match (v, &mut self.values) {
            (Datum::Null, _) if self.nullable => {
                self.defined.push(0);
                self.nulls += 1;
                return Ok(());
            }
            (Datum::Bool(b), Values::Bool(vs)) => vs.push(*b),
            (Datum::Int(x), Values::Int(vs)) => vs.push(*x),
            (Datum::Long(x), Values::Long(vs)) => vs.push(*x),
            (Datum::Str(s), Values::Str(vs)) => vs.push(ByteArray::from(s.as_bytes().to_vec())),
            _ => return Err(bad()),
        }
        self.defined.push(1);
        if self.min == Datum::Null || less(v, &self.min) {
            self.min = v.clone();
        }
        if self.max == Datum::Null || less(&self.max, v) {
            self.max = v.clone();
        }
        Ok(())
    }

    fn parquet_type(&self, id: i64) -> Result<Type, WriteError> {
        let (physical, logical) = match self.kind {
            ColumnType::Boolean => (PhysicalType::BOOLEAN, None),
            ColumnType::TinyInt => (PhysicalType::INT32, Some(int(8))),
            ColumnType::SmallInt => (PhysicalType::INT32, Some(int(16))),
            ColumnType::Int => (PhysicalType::INT32, None),
            ColumnType::Date => (PhysicalType::INT32, Some(LogicalType::Date)),
            ColumnType::BigInt => (PhysicalType::INT64, None),
            ColumnType::String => (PhysicalType::BYTE_ARRAY, Some(LogicalType::String)),
            ColumnType::Other => {
                return Err(WriteError::UnsupportedColumn {
                    column: self.name.clone(),
                })
            }
        };
        let repetition = if self.nullable {
            Repetition::OPTIONAL
        } else {
            Repetition::REQUIRED
        };
        Ok(Type::primitive_type_builder(&self.name, physical)
            .with_repetition(repetition)
            .with_logical_type(logical)
            .with_id(i32::try_from(id).ok())
            .build()?)
    }

    /// Writes the buffered values into `w` (the column writer of this column).
    fn write(&self, w: &mut ColumnWriter<'_>) -> Result<(), WriteError> {
        let defs = self.nullable.then_some(self.defined.as_slice());
        match (w, &self.values) {
            (ColumnWriter::BoolColumnWriter(w), Values::Bool(v)) => {
                w.write_batch(v, defs, None)?;
            }
            (ColumnWriter::Int32ColumnWriter(w), Values::Int(v)) => {
                w.write_batch(v, defs, None)?;
            }
            (ColumnWriter::Int64ColumnWriter(w), Values::Long(v)) => {
                w.write_batch(v, defs, None)?;
            }
            (ColumnWriter::ByteArrayColumnWriter(w), Values::Str(v)) => {
                w.write_batch(v, defs, None)?;
            }
            _ => {
                return Err(WriteError::Parquet(format!(
                    "column {}: the Parquet writer has another type",
                    self.name
                )))
            }
        }
        Ok(())
    }
}

fn int(bits: i8) -> LogicalType {
    LogicalType::Integer(parquet::basic::IntType {
        bit_width: bits,
        is_signed: true,
    })
}

/// The order of values of one column type (mixed types never meet: a column holds one).
fn less(a: &Datum, b: &Datum) -> bool {
    match (a, b) {
        (Datum::Bool(a), Datum::Bool(b)) => a < b,
        (Datum::Int(a), Datum::Int(b)) => a < b,
        (Datum::Long(a), Datum::Long(b)) => a < b,
        // Paimon compares strings by their UTF-8 bytes.
        (Datum::Str(a), Datum::Str(b)) => a.as_bytes() < b.as_bytes(),
        _ => false,
    }
}

/// A data file being written: the rows of one partition of one table.
pub struct DataFileWriter {
    table: TableSchema,
    file_name: String,
    partition: Vec<Datum>,
    /// Index of each partition key's column.
    partition_columns: Vec<usize>,
    columns: Vec<Column>,
    rows: u64,
    first_sequence: i64,
    creation_time_millis: i64,
}

/// A written data file: its bytes, where they go, and the committable that reports it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FinishedFile {
    /// The Parquet file.
    pub bytes: Vec<u8>,
    /// Its key under the table directory: `<k=v/...>/bucket-0/<file name>`.
    pub key: String,
    /// Its metadata (Paimon's `DataFileMeta` of an append file).
    pub meta: DataFile,
}

impl FinishedFile {
    /// The committable a writer reports for this file (`PCM` v1, docs/paimon.md).
    pub fn committable(&self) -> Vec<u8> {
        encode(&self.meta)
    }
}

impl DataFileWriter {
    /// A file named `file_name` (a plain name such as `data-<uuid>-0.parquet`; choose one
    /// that no other attempt uses, e.g. from the subtask, attempt and a counter) for the
    /// rows of `partition` (one value per partition key; empty if unpartitioned). Its rows
    /// get the sequence numbers `first_sequence ..`; `creation_time_millis` is recorded in
    /// the committable.
    pub fn new(
        table: &TableSchema,
        file_name: &str,
        partition: Vec<Datum>,
        first_sequence: i64,
        creation_time_millis: i64,
    ) -> Result<Self, WriteError> {
        if !sink_coordinator_paimon::committable::is_plain_file_name(file_name) {
            return Err(WriteError::FileName);
        }
        let types = table.partition_types();
        if types.len() != partition.len() || !partition.iter().zip(&types).all(|(v, t)| v.fits(t)) {
            return Err(WriteError::Partition);
        }
        let mut partition_columns = Vec::new();
        for k in &table.partition_keys {
            let i = table.fields.iter().position(|f| &f.name == k);
            partition_columns.push(i.ok_or(WriteError::Partition)?);
        }
        let columns = table
            .fields
            .iter()
            .map(|f| {
                let values = match f.ty.kind {
                    ColumnType::Boolean => Values::Bool(Vec::new()),
                    ColumnType::TinyInt
                    | ColumnType::SmallInt
                    | ColumnType::Int
                    | ColumnType::Date => Values::Int(Vec::new()),
                    ColumnType::BigInt => Values::Long(Vec::new()),
                    ColumnType::String => Values::Str(Vec::new()),
                    ColumnType::Other => {
                        return Err(WriteError::UnsupportedColumn {
                            column: f.name.clone(),
                        })
                    }
                };
                Ok(Column {
                    name: f.name.clone(),
                    kind: f.ty.kind,
                    nullable: f.ty.nullable,
                    values,
                    defined: Vec::new(),
                    min: Datum::Null,
                    max: Datum::Null,
                    nulls: 0,
                })
            })
            .collect::<Result<Vec<_>, _>>()?;
        Ok(DataFileWriter {
            table: table.clone(),
            file_name: file_name.to_string(),
            partition,
            partition_columns,
            columns,
            rows: 0,
            first_sequence,
            creation_time_millis,
        })
    }

    /// Appends one row: a value per column, in the table's column order. A row that is
    /// refused leaves the file as it was.
    pub fn write_row(&mut self, row: &[Datum]) -> Result<(), WriteError> {
        if row.len() != self.columns.len() {
            return Err(WriteError::Arity {
                expected: self.columns.len(),
                got: row.len(),
            });
        }
        for (c, v) in self.columns.iter().zip(row) {
            if !v.fits(&self.table_field_type(&c.name)) {
                return Err(WriteError::Type {
                    column: c.name.clone(),
                });
            }
        }
        for (k, &i) in self.partition_columns.iter().enumerate() {
            if row[i] != self.partition[k] {
                return Err(WriteError::OtherPartition);
            }
        }
        for (c, v) in self.columns.iter_mut().zip(row) {
            // Checked above: cannot fail.
            c.push(v)?;
        }
        self.rows += 1;
        Ok(())
    }

    fn table_field_type(&self, name: &str) -> sink_coordinator_paimon::types::FieldType {
        self.table.field(name).map(|f| f.ty.clone()).unwrap_or(
            sink_coordinator_paimon::types::FieldType {
                kind: ColumnType::Other,
                nullable: false,
            },
        )
    }

    /// Rows written so far.
    pub fn rows(&self) -> u64 {
        self.rows
    }

    /// The Parquet file (one row group, uncompressed) and its committable.
    pub fn finish(self) -> Result<FinishedFile, WriteError> {
        let fields = self
            .columns
            .iter()
            .zip(&self.table.fields)
            .map(|(c, f)| c.parquet_type(f.id).map(Arc::new))
            .collect::<Result<Vec<_>, _>>()?;
        let schema = Arc::new(
            Type::group_type_builder("paimon_schema")
                .with_fields(fields)
                .build()?,
        );
        let props = Arc::new(WriterProperties::builder().build());
        let mut bytes = Vec::new();
        {
            let mut writer = SerializedFileWriter::new(&mut bytes, schema, props)?;
            let mut group = writer.next_row_group()?;
            let mut columns = self.columns.iter();
            while let Some(mut w) = group.next_column()? {
                let c = columns.next().ok_or_else(|| {
                    WriteError::Parquet("more Parquet columns than table columns".into())
                })?;
                c.write(w.untyped())?;
                w.close()?;
            }
            group.close()?;
            writer.close()?;
        }
        let rows = i64::try_from(self.rows).unwrap_or(i64::MAX);
        let value_stats = self
            .columns
            .iter()
            .map(|c| ColumnStats {
                column: c.name.clone(),
                min: c.min.clone(),
                max: c.max.clone(),
                null_count: Some(c.nulls),
            })
            .collect();
        let meta = DataFile {
            file_name: self.file_name,
            file_size: bytes.len() as u64,
            row_count: self.rows,
            schema_id: u64::try_from(self.table.id).unwrap_or(0),
            min_sequence_number: self.first_sequence,
            max_sequence_number: self.first_sequence + (rows - 1).max(0),
            creation_time_millis: self.creation_time_millis,
            partition: self.partition,
            value_stats,
        };
        let key = data_file_key(&self.table, &meta).ok_or(WriteError::Partition)?;
        Ok(FinishedFile { bytes, key, meta })
    }
}

#[cfg(test)]
mod tests;
