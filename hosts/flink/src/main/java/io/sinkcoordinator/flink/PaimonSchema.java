package io.sinkcoordinator.flink;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.sinkcoordinator.flink.component.ComponentRuntime;
import io.sinkcoordinator.flink.component.TableLocation;
import io.sinkcoordinator.jvm.BackendException;
import io.sinkcoordinator.jvm.Storage;
import java.io.IOException;
import java.io.Serializable;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Objects;
import org.apache.avro.Schema;

/**
 * The row type of a Paimon table the sink writes (an unpartitioned append table, {@code bucket =
 * -1}): its columns, each of a {@link Type} and nullable unless {@code NOT NULL}. The sink creates
 * the table's {@code schema/schema-0} from it when the table has none (the same JSON as {@code
 * sinkcoord table create --format paimon --option file.format=avro}), and checks the columns of
 * an existing one; its writers write Avro data files of this row type ({@link #avroSchema()}).
 *
 * <pre>{@code
 * PaimonSchema schema = PaimonSchema.parse("id BIGINT NOT NULL, name STRING");
 * }</pre>
 */
public record PaimonSchema(List<Column> columns) implements Serializable {
    private static final long serialVersionUID = 1L;

    /** The column types the writers can write, with the Avro type Paimon stores each as. */
    public enum Type {
        BOOLEAN(Schema.Type.BOOLEAN),
        INT(Schema.Type.INT),
        BIGINT(Schema.Type.LONG),
        FLOAT(Schema.Type.FLOAT),
        DOUBLE(Schema.Type.DOUBLE),
        STRING(Schema.Type.STRING),
        BYTES(Schema.Type.BYTES);

        private final Schema.Type avro;

        Type(Schema.Type avro) {
            this.avro = avro;
        }
    }

    /** One column: {@code nullable} unless declared {@code NOT NULL}. */
    public record Column(String name, Type type, boolean nullable) implements Serializable {
        private static final long serialVersionUID = 1L;

        public Column {
            Objects.requireNonNull(name, "name");
            Objects.requireNonNull(type, "type");
            if (name.isEmpty()) {
                throw new IllegalArgumentException("a column needs a name");
            }
        }

        /** Paimon's type string, as {@code schema/schema-0} holds it: {@code BIGINT NOT NULL}. */
        public String typeText() {
            return nullable ? type.name() : type.name() + " NOT NULL";
        }
    }

    public PaimonSchema {
        columns = List.copyOf(columns);
        if (columns.isEmpty()) {
            throw new IllegalArgumentException("a Paimon table needs at least one column");
        }
        if (columns.stream().map(Column::name).distinct().count() != columns.size()) {
            throw new IllegalArgumentException("two columns of one name: " + columns);
        }
    }

    /**
     * Columns as {@code sinkcoord table create --schema} takes them: {@code name TYPE [NOT NULL]}
     * separated by commas, e.g. {@code "id BIGINT NOT NULL, name STRING"}.
     */
    public static PaimonSchema parse(String columns) {
        List<Column> out = new ArrayList<>();
        for (String column : columns.split(",")) {
            String[] words = column.trim().split("\\s+");
            boolean notNull =
                    words.length == 4
                            && words[2].equalsIgnoreCase("NOT")
                            && words[3].equalsIgnoreCase("NULL");
            if (words.length != 2 && !notNull) {
                throw new IllegalArgumentException(
                        "column '" + column.trim() + "': expected 'name TYPE [NOT NULL]'");
            }
            Type type;
            try {
                type = Type.valueOf(words[1].toUpperCase(Locale.ROOT));
            } catch (IllegalArgumentException e) {
                throw new IllegalArgumentException(
                        "column '" + words[0] + "': unsupported type " + words[1]
                                + " (supported: " + java.util.Arrays.toString(Type.values()) + ")");
            }
            out.add(new Column(words[0], type, !notNull));
        }
        return new PaimonSchema(out);
    }

    /**
     * The Avro schema of the data files, as Paimon's own Avro writer makes it for this row type
     * (AvroSchemaConverter; pypaimon's {@code to_avro_schema}): a record {@code
     * org.apache.paimon.avro.generated.record} with one field per column, a nullable column as
     * the union {@code ["null", T]} with default null.
     */
    public Schema avroSchema() {
        List<Schema.Field> fields = new ArrayList<>();
        for (Column c : columns) {
            Schema type = Schema.create(c.type().avro);
            fields.add(
                    c.nullable()
                            ? new Schema.Field(
                                    c.name(),
                                    Schema.createUnion(Schema.create(Schema.Type.NULL), type),
                                    null,
                                    Schema.Field.NULL_DEFAULT_VALUE)
                            : new Schema.Field(c.name(), type));
        }
        return Schema.createRecord("record", null, "org.apache.paimon.avro.generated", false, fields);
    }

    /**
     * {@code schema/schema-0} of a new table of these columns, byte for byte what the Rust crate
     * writes ({@code paimon/src/schema.rs} {@code encode_schema}, options {@code bucket = -1},
     * {@code manifest.compression = null}, plus {@code file.format = avro}), keys in its order.
     */
    String schemaJson(long timeMillis) {
        StringBuilder fields = new StringBuilder();
        for (int i = 0; i < columns.size(); i++) {
            Column c = columns.get(i);
            fields.append(i == 0 ? "" : ",")
                    .append("{\"id\":").append(i)
                    .append(",\"name\":").append(jsonString(c.name()))
                    .append(",\"type\":").append(jsonString(c.typeText())).append('}');
        }
        return "{\"version\":3,\"id\":0,\"fields\":[" + fields + "],\"highestFieldId\":"
                + (columns.size() - 1) + ",\"partitionKeys\":[],\"primaryKeys\":[],"
                + "\"options\":{\"bucket\":\"-1\",\"file.format\":\"avro\","
                + "\"manifest.compression\":\"null\"},\"timeMillis\":" + timeMillis + "}";
    }

    /** A JSON string as the Rust crate's writer escapes it (other characters as UTF-8). */
    private static String jsonString(String s) {
        StringBuilder out = new StringBuilder("\"");
        for (char ch : s.toCharArray()) {
            switch (ch) {
                case '"' -> out.append("\\\"");
                case '\\' -> out.append("\\\\");
                case '\n' -> out.append("\\n");
                case '\r' -> out.append("\\r");
                case '\t' -> out.append("\\t");
                default -> {
                    if (ch < 0x20) {
                        out.append(String.format("\\u%04x", (int) ch));
                    } else {
                        out.append(ch);
                    }
                }
            }
        }
        return out.append('"').toString();
    }

    /** The key of the schema file in the table. */
    static final String KEY = "schema/schema-0";

    /**
     * Creates {@code schema/schema-0} in the table's {@code storage} unless it exists (atomically:
     * a concurrent creator's file wins and is then checked); an existing schema must have exactly
     * these columns (names, types, nullability), in order.
     */
    void createOrCheck(java.nio.file.Path table) {
        createOrCheck(TableLocation.of(table.toString()).open(ComponentRuntime.CHICORY, true));
    }

    /** {@link #createOrCheck(java.nio.file.Path)} in the table's {@code storage}. */
    void createOrCheck(Storage storage) {
        try {
            createOrCheckFile(storage);
        } catch (IOException e) {
            throw new java.io.UncheckedIOException("the Paimon schema " + KEY + ": " + e.getMessage(), e);
        } catch (BackendException e) {
            throw new IllegalStateException("the Paimon schema " + KEY + ": " + e.getMessage(), e);
        }
    }

    private void createOrCheckFile(Storage storage) throws IOException, BackendException {
        byte[] file = storage.get(KEY);
        if (file == null) {
            // false: another creator was first; its schema is checked below like any existing one
            storage.putIfAbsent(KEY, schemaJson(System.currentTimeMillis()).getBytes(StandardCharsets.UTF_8));
            file = storage.get(KEY);
            if (file == null) {
                throw new IOException("created, but then missing");
            }
        }
        JsonNode fields = new ObjectMapper().readTree(file).path("fields");
        List<String> found = new ArrayList<>();
        for (JsonNode f : fields) {
            found.add(f.path("name").asText() + " " + f.path("type").asText());
        }
        List<String> expected = new ArrayList<>();
        for (Column c : columns) {
            expected.add(c.name() + " " + c.typeText());
        }
        if (!found.equals(expected)) {
            throw new IOException("the table has the columns " + found + ", the sink writes " + expected);
        }
    }
}
