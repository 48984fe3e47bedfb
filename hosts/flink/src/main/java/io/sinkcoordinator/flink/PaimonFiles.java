package io.sinkcoordinator.flink;

import io.sinkcoordinator.flink.component.ComponentRuntime;
import io.sinkcoordinator.flink.component.TableLocation;
import io.sinkcoordinator.jvm.PaimonCommittable;
import io.sinkcoordinator.jvm.Storage;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.UUID;
import org.apache.avro.Schema;
import org.apache.avro.file.DataFileReader;
import org.apache.avro.file.DataFileWriter;
import org.apache.avro.file.SeekableByteArrayInput;
import org.apache.avro.generic.GenericData;
import org.apache.avro.generic.GenericDatumReader;
import org.apache.avro.generic.GenericDatumWriter;
import org.apache.avro.generic.GenericRecord;

/**
 * The writers' data files of a Paimon table: Avro object container files (codec {@code null}) of
 * the table's row type, at {@code <table>/bucket-0/data-<uuid>-0.avro} as Paimon names them, each
 * reported as its {@code PCM} committable (docs/paimon.md, "The committable": schema 0, sequence
 * numbers {@code 0 .. rows-1}, the creation time, no value stats) once it is flushed and fsynced.
 * Files of failed attempts stay unreferenced, as Paimon's own orphan files do.
 */
final class PaimonFiles {
    private PaimonFiles() {}

    /** The bucket directory of an unpartitioned append table (unaware buckets write bucket 0). */
    static final String BUCKET = "bucket-0";

    /** Files of rows {@code rows} makes of the records, for the table at {@code table}. */
    static <T> WriterFiles<T> of(
            TableLocation table, ComponentRuntime runtime, PaimonSchema schema, PaimonRows<T> rows) {
        return new RowFiles<>(table, runtime, schema, rows);
    }

    private static final class RowFiles<T> extends WriterFiles.OnTable<T> {
        private static final long serialVersionUID = 1L;
        private final PaimonSchema schema;
        private final PaimonRows<T> rows;

        RowFiles(TableLocation table, ComponentRuntime runtime, PaimonSchema schema, PaimonRows<T> rows) {
            super(table, runtime);
            this.schema = Objects.requireNonNull(schema, "schema");
            this.rows = Objects.requireNonNull(rows, "rows");
        }

        @Override
        public File<T> create(int subtask) throws IOException {
            String name = "data-" + UUID.randomUUID() + "-0.avro";
            return new Writer<>(newFile(BUCKET + "/" + name), name, schema, rows);
        }
    }

    /** An open Avro data file. */
    private static final class Writer<T> implements WriterFiles.File<T> {
        private final String name;
        private final PaimonSchema schema;
        private final PaimonRows<T> rows;
        private final Schema avro;
        private final WriterFiles.NewFile file;
        private final DataFileWriter<GenericRecord> out;
        private final long createdMillis = System.currentTimeMillis();
        private long records;

        Writer(WriterFiles.NewFile file, String name, PaimonSchema schema, PaimonRows<T> rows)
                throws IOException {
            this.name = name;
            this.schema = schema;
            this.rows = rows;
            this.avro = schema.avroSchema();
            this.file = file;
            this.out = new DataFileWriter<GenericRecord>(new GenericDatumWriter<>(avro))
                    .create(avro, file.out);
        }

        @Override
        public void write(T record) throws IOException {
            Object[] values = rows.row(record);
            List<PaimonSchema.Column> columns = schema.columns();
            if (values == null || values.length != columns.size()) {
                throw new IllegalArgumentException(
                        "a row of " + columns.size() + " columns expected, got "
                                + (values == null ? "null" : values.length + " values"));
            }
            GenericData.Record row = new GenericData.Record(avro);
            for (int i = 0; i < values.length; i++) {
                row.put(i, avroValue(columns.get(i), values[i]));
            }
            out.append(row);
            records++;
        }

        @Override
        public long records() {
            return records;
        }

        @Override
        public byte[] finish() throws IOException {
            file.sync(out);
            out.close();
            return PaimonCommittable.builder(name)
                    .fileSize(file.size())
                    .rowCount(records)
                    .schemaId(0)
                    .sequenceNumbers(0, records - 1)
                    .creationTimeMillis(createdMillis)
                    .build()
                    .encode();
        }

        @Override
        public void discard() {
            file.discard(out);
        }
    }

    /** A column value as Avro's generic writer takes it; refuses what the column cannot hold. */
    static Object avroValue(PaimonSchema.Column column, Object value) {
        if (value == null) {
            if (!column.nullable()) {
                throw new IllegalArgumentException("column " + column.name() + " is NOT NULL");
            }
            return null;
        }
        Object v =
                switch (column.type()) {
                    case BOOLEAN -> value instanceof Boolean ? value : null;
                    case INT -> value instanceof Integer || value instanceof Short
                                    || value instanceof Byte
                            ? ((Number) value).intValue()
                            : null;
                    case BIGINT -> value instanceof Long || value instanceof Integer
                                    || value instanceof Short || value instanceof Byte
                            ? ((Number) value).longValue()
                            : null;
                    case FLOAT -> value instanceof Float ? value : null;
                    case DOUBLE -> value instanceof Double || value instanceof Float
                            ? ((Number) value).doubleValue()
                            : null;
                    case STRING -> value instanceof CharSequence ? value.toString() : null;
                    case BYTES -> value instanceof byte[] b ? ByteBuffer.wrap(b) : null;
                };
        if (v == null) {
            throw new IllegalArgumentException(
                    "column " + column.name() + " (" + column.type() + "): a "
                            + value.getClass().getName() + " is no value of it");
        }
        return v;
    }

    /** The data file name a {@code PCM} committable reports (its first field). */
    static String fileName(byte[] committable) throws IOException {
        ByteBuffer b = ByteBuffer.wrap(committable).order(ByteOrder.LITTLE_ENDIAN);
        if (committable.length < 8
                || b.get(0) != 'P' || b.get(1) != 'C' || b.get(2) != 'M' || b.get(3) != 1) {
            throw new IOException("not a PCM v1 committable");
        }
        int length = b.getInt(4);
        if (length < 0 || length > committable.length - 8) {
            throw new IOException("a PCM committable's file name runs past its end");
        }
        return new String(committable, 8, length, StandardCharsets.UTF_8);
    }

    /**
     * The rows of the unpartitioned table's data file a committable reports, each as its column
     * values in the file's order (STRING as String, BYTES as byte[]).
     */
    static List<Object[]> read(Storage storage, byte[] committable) throws IOException {
        byte[] file = TableReader.file(storage, BUCKET + "/" + fileName(committable));
        List<Object[]> rows = new ArrayList<>();
        try (DataFileReader<GenericRecord> in =
                new DataFileReader<>(new SeekableByteArrayInput(file), new GenericDatumReader<>())) {
            for (GenericRecord r : in) {
                int n = r.getSchema().getFields().size();
                Object[] row = new Object[n];
                for (int i = 0; i < n; i++) {
                    Object v = r.get(i);
                    if (v instanceof CharSequence s) {
                        v = s.toString();
                    } else if (v instanceof ByteBuffer bb) {
                        byte[] bytes = new byte[bb.remaining()];
                        bb.duplicate().get(bytes);
                        v = bytes;
                    }
                    row[i] = v;
                }
                rows.add(row);
            }
        }
        return rows;
    }
}
