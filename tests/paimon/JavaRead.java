import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import org.apache.paimon.catalog.Catalog;
import org.apache.paimon.catalog.CatalogContext;
import org.apache.paimon.catalog.CatalogFactory;
import org.apache.paimon.catalog.Identifier;
import org.apache.paimon.data.InternalRow;
import org.apache.paimon.options.Options;
import org.apache.paimon.reader.RecordReader;
import org.apache.paimon.table.Table;
import org.apache.paimon.table.source.ReadBuilder;
import org.apache.paimon.table.source.Split;

/** Reads every row's `id` of warehouse/db.db/<table> (optionally as of a tag), sorted. */
public class JavaRead {
    public static void main(String[] args) throws Exception {
        Options o = new Options();
        o.set("warehouse", args[0]);
        Catalog c = CatalogFactory.createCatalog(CatalogContext.create(o));
        Table t = c.getTable(Identifier.create("db", args[1]));
        if (args.length > 2) {
            t = t.copy(Collections.singletonMap("scan.tag-name", args[2]));
        }
        ReadBuilder rb = t.newReadBuilder();
        List<Split> splits = rb.newScan().plan().splits();
        int id = t.rowType().getFieldNames().indexOf("id");
        List<Long> ids = new ArrayList<>();
        try (RecordReader<InternalRow> r = rb.newRead().createReader(splits)) {
            r.forEachRemaining(row -> ids.add(row.getLong(id)));
        }
        Collections.sort(ids);
        System.out.println(ids);
    }
}
