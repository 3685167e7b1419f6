// Reads Iceberg tables with the Apache Iceberg Java library (the reference
// implementation) and prints what it sees as one JSON document on stdout, for
// tests/integration/test_iceberg_java.py to compare with what was written.
//
//   java -cp <.cache/java/iceberg/*>:<classes> IcebergRead TABLE...
//
// TABLE is a metadata JSON file (StaticTableOperations + HadoopFileIO) or
// "records:" + a metadata file: a typed table's schemas and rows as {column: value};
// "parts:" + [COLUMN=VALUE]@ + a metadata file: the spec, every planned file's
// partition tuple, and the files and rows a filter COLUMN = VALUE (VALUE read as the
// column's type: string, boolean, int, long, float, double; none: every row) plans and
// reads, so that wrong partition values or summaries would
// make Java prune files holding matching rows;
// "dir:" + a table directory (HadoopTables: version-hint.text, v<N>.metadata.json);
// "hint:" + a table directory reports only the metadata location HadoopTables loads.
// Per table: snapshots, every row of the current snapshot, the planned data files
// with their data/file sequence numbers, the rows of the files, entries, manifests
// and snapshots metadata tables, and every row of the oldest retained snapshot.
// "probes": filtered reads (equality on key, value, timestamp, partition+offset;
// key IS NULL) of sample rows, so that wrong column bounds or partition values
// would make Java prune files holding matching rows.
// Rows are [partition, offset, timestamp micros, key hex|null, value hex|null,
// [[header key, header value hex|null], ...]].

import java.nio.ByteBuffer;
import java.time.LocalDate;
import java.time.OffsetDateTime;
import java.time.ZoneOffset;
import java.time.temporal.ChronoUnit;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Map;

import org.apache.hadoop.conf.Configuration;
import org.apache.iceberg.BaseTable;
import org.apache.iceberg.DataFile;
import org.apache.iceberg.FileScanTask;
import org.apache.iceberg.MetadataTableType;
import org.apache.iceberg.MetadataTableUtils;
import org.apache.iceberg.PartitionSpec;
import org.apache.iceberg.Snapshot;
import org.apache.iceberg.StaticTableOperations;
import org.apache.iceberg.StructLike;
import org.apache.iceberg.Table;
import org.apache.iceberg.TableScan;
import org.apache.iceberg.data.IcebergGenerics;
import org.apache.iceberg.data.Record;
import org.apache.iceberg.expressions.Expression;
import org.apache.iceberg.expressions.Expressions;
import org.apache.iceberg.hadoop.HadoopFileIO;
import org.apache.iceberg.hadoop.HadoopTables;
import org.apache.iceberg.io.CloseableIterable;
import org.apache.iceberg.types.Type;
import org.apache.iceberg.types.Types;

public class IcebergRead {
    private static final OffsetDateTime EPOCH = OffsetDateTime.of(1970, 1, 1, 0, 0, 0, 0, ZoneOffset.UTC);

    // ---- a small JSON writer ----------------------------------------------

    private static void str(StringBuilder sb, String s) {
        sb.append('"');
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            switch (c) {
                case '"': sb.append("\\\""); break;
                case '\\': sb.append("\\\\"); break;
                case '\n': sb.append("\\n"); break;
                case '\r': sb.append("\\r"); break;
                case '\t': sb.append("\\t"); break;
                default:
                    if (c < 0x20) {
                        sb.append(String.format("\\u%04x", (int) c));
                    } else {
                        sb.append(c);
                    }
            }
        }
        sb.append('"');
    }

    private static String hex(ByteBuffer buf) {
        ByteBuffer b = buf.duplicate();
        StringBuilder sb = new StringBuilder(b.remaining() * 2);
        while (b.hasRemaining()) {
            sb.append(String.format("%02x", b.get() & 0xff));
        }
        return sb.toString();
    }

    private static void num(StringBuilder sb, Object v) {
        sb.append(v == null ? "null" : v.toString());
    }

    /** A value of Iceberg type t (generic or internal representation) as JSON. */
    private static void value(StringBuilder sb, Object v, Type t) {
        if (v == null) {
            sb.append("null");
        } else if (t.isStructType()) {
            Types.StructType st = t.asStructType();
            StructLike s = (StructLike) v;
            sb.append('{');
            List<Types.NestedField> fields = st.fields();
            for (int i = 0; i < fields.size(); i++) {
                if (i > 0) sb.append(',');
                str(sb, fields.get(i).name());
                sb.append(':');
                value(sb, s.get(i, Object.class), fields.get(i).type());
            }
            sb.append('}');
        } else if (t.isListType()) {
            Type et = t.asListType().elementType();
            sb.append('[');
            boolean first = true;
            for (Object e : (List<?>) v) {
                if (!first) sb.append(',');
                first = false;
                value(sb, e, et);
            }
            sb.append(']');
        } else if (t.isMapType()) {
            // a map as [[key, value], ...]: keys are not always strings
            Types.MapType mt = t.asMapType();
            sb.append('[');
            boolean first = true;
            for (Map.Entry<?, ?> e : ((Map<?, ?>) v).entrySet()) {
                if (!first) sb.append(',');
                first = false;
                sb.append('[');
                value(sb, e.getKey(), mt.keyType());
                sb.append(',');
                value(sb, e.getValue(), mt.valueType());
                sb.append(']');
            }
            sb.append(']');
        } else if (v instanceof ByteBuffer) {
            str(sb, hex((ByteBuffer) v));
        } else if (v instanceof byte[]) {
            str(sb, hex(ByteBuffer.wrap((byte[]) v)));
        } else if (v instanceof CharSequence) {
            str(sb, v.toString());
        } else if (v instanceof OffsetDateTime) {
            num(sb, ChronoUnit.MICROS.between(EPOCH, (OffsetDateTime) v));
        } else if (v instanceof LocalDate) {
            num(sb, ((LocalDate) v).toEpochDay());
        } else if (v instanceof Number || v instanceof Boolean) {
            num(sb, v);
        } else {
            str(sb, v.toString());
        }
    }

    // ---- the table --------------------------------------------------------

    private static Table load(String arg) {
        Configuration conf = new Configuration();
        if (arg.startsWith("dir:")) {
            return new HadoopTables(conf).load(arg.substring(4));
        }
        if (arg.startsWith("hint:")) {
            return new HadoopTables(conf).load(arg.substring(5));
        }
        StaticTableOperations ops = new StaticTableOperations(arg, new HadoopFileIO(conf));
        return new BaseTable(ops, arg);
    }

    private static void rows(StringBuilder sb, Table table, Long snapshotId) throws Exception {
        IcebergGenerics.ScanBuilder b = IcebergGenerics.read(table);
        if (snapshotId != null) {
            b = b.useSnapshot(snapshotId);
        }
        sb.append('[');
        boolean first = true;
        try (CloseableIterable<Record> it = b.build()) {
            for (Record r : it) {
                if (!first) sb.append(',');
                first = false;
                sb.append('[');
                num(sb, r.getField("partition"));
                sb.append(',');
                num(sb, r.getField("offset"));
                sb.append(',');
                value(sb, r.getField("timestamp"), Types.TimestampType.withZone());
                sb.append(',');
                value(sb, r.getField("key"), Types.BinaryType.get());
                sb.append(',');
                value(sb, r.getField("value"), Types.BinaryType.get());
                sb.append(",[");
                Object hs = r.getField("headers");
                if (hs != null) {
                    boolean hfirst = true;
                    for (Object o : (List<?>) hs) {
                        Record h = (Record) o;
                        if (!hfirst) sb.append(',');
                        hfirst = false;
                        sb.append('[');
                        value(sb, h.getField("key"), Types.StringType.get());
                        sb.append(',');
                        value(sb, h.getField("value"), Types.BinaryType.get());
                        sb.append(']');
                    }
                } else {
                    sb.append("\"null-list\"");
                }
                sb.append("]]");
            }
        }
        sb.append(']');
    }

    /** [partition, offset] of every row a filtered read returns, with the number
     * of files the filter leaves to read. */
    private static void probe(StringBuilder sb, Table table, String what, Expression filter) throws Exception {
        sb.append("{\"what\":");
        str(sb, what);
        sb.append(",\"files\":");
        int n = 0;
        try (CloseableIterable<FileScanTask> tasks = table.newScan().filter(filter).planFiles()) {
            for (FileScanTask t : tasks) {
                n++;
            }
        }
        num(sb, n);
        sb.append(",\"rows\":[");
        boolean first = true;
        try (CloseableIterable<Record> it = IcebergGenerics.read(table).where(filter).build()) {
            for (Record r : it) {
                if (!first) sb.append(',');
                first = false;
                sb.append('[');
                num(sb, r.getField("partition"));
                sb.append(',');
                num(sb, r.getField("offset"));
                sb.append(']');
            }
        }
        sb.append("]}");
    }

    private static void probes(StringBuilder sb, Table table) throws Exception {
        List<Record> all = new ArrayList<>();
        try (CloseableIterable<Record> it = IcebergGenerics.read(table).build()) {
            for (Record r : it) {
                all.add(r.copy());
            }
        }
        all.sort(Comparator.comparingLong((Record r) -> (Long) r.getField("offset"))
            .thenComparingInt(r -> (Integer) r.getField("partition")));
        sb.append('[');
        boolean first = true;
        int step = Math.max(1, all.size() / 6);
        List<Record> picks = new ArrayList<>();
        for (int i = 0; i < all.size(); i += step) {
            picks.add(all.get(i));
        }
        // and a few values with 0xff bytes, whose upper bounds are the hardest
        int ff = 0;
        for (Record r : all) {
            ByteBuffer v = (ByteBuffer) r.getField("value");
            if (ff < 3 && v != null && v.remaining() > 16 && hex(v).contains("ff")) {
                picks.add(r);
                ff++;
            }
        }
        for (Record r : picks) {
            List<Object[]> ps = new ArrayList<>();
            ps.add(new Object[] {"partition+offset", Expressions.and(
                Expressions.equal("partition", r.getField("partition")),
                Expressions.equal("offset", r.getField("offset")))});
            long micros = ChronoUnit.MICROS.between(EPOCH, (OffsetDateTime) r.getField("timestamp"));
            ps.add(new Object[] {"timestamp", Expressions.equal("timestamp", micros)});
            if (r.getField("key") != null) {
                ps.add(new Object[] {"key", Expressions.equal("key", r.getField("key"))});
            }
            if (r.getField("value") != null) {
                ps.add(new Object[] {"value", Expressions.equal("value", r.getField("value"))});
            }
            for (Object[] p : ps) {
                if (!first) sb.append(',');
                first = false;
                probe(sb, table, p[0] + "@" + r.getField("partition") + ":" + r.getField("offset"),
                    (Expression) p[1]);
            }
        }
        if (!first) sb.append(',');
        probe(sb, table, "key-is-null", Expressions.isNull("key"));
        sb.append(']');
    }

    private static void metadataTable(StringBuilder sb, Table table, MetadataTableType type) throws Exception {
        Table meta = MetadataTableUtils.createMetadataTableInstance(table, type);
        Types.StructType st = meta.schema().asStruct();
        sb.append('[');
        boolean first = true;
        try (CloseableIterable<FileScanTask> tasks = meta.newScan().planFiles()) {
            for (FileScanTask task : tasks) {
                try (CloseableIterable<StructLike> rs = task.asDataTask().rows()) {
                    for (StructLike row : rs) {
                        if (!first) sb.append(',');
                        first = false;
                        value(sb, row, st);
                    }
                }
            }
        }
        sb.append(']');
    }

    /** "records:" + a metadata file: a typed table's schemas (ids and structs, in id
     * order), its current schema id, its identifier fields (dotted names, in the
     * schema's order) and every row as {column: value}, read with
     * the current schema (older data files projected by field id). */
    private static void records(StringBuilder sb, String arg) throws Exception {
        Table table = load(arg.substring(8));
        sb.append("{\"arg\":");
        str(sb, arg);
        sb.append(",\"schemas\":[");
        List<Integer> ids = new ArrayList<>(table.schemas().keySet());
        ids.sort(Comparator.naturalOrder());
        for (int i = 0; i < ids.size(); i++) {
            if (i > 0) sb.append(',');
            sb.append("{\"id\":");
            num(sb, ids.get(i));
            sb.append(",\"struct\":");
            str(sb, table.schemas().get(ids.get(i)).asStruct().toString());
            sb.append('}');
        }
        sb.append("],\"current_schema_id\":");
        num(sb, table.schema().schemaId());
        sb.append(",\"identifier_field_names\":[");
        List<String> idn = new ArrayList<>();
        for (Integer fid : table.schema().identifierFieldIds())
            idn.add(table.schema().findColumnName(fid));
        for (int i = 0; i < idn.size(); i++) {
            if (i > 0) sb.append(',');
            str(sb, idn.get(i));
        }
        sb.append(']');
        sb.append(",\"records\":[");
        boolean first = true;
        try (CloseableIterable<Record> it = IcebergGenerics.read(table).build()) {
            for (Record r : it) {
                if (!first) sb.append(',');
                first = false;
                value(sb, r, table.schema().asStruct());
            }
        }
        sb.append("]}");
    }

    /** "parts:" + COLUMN=VALUE@ + a metadata file (see the file comment). */
    private static void parts(StringBuilder sb, String arg) throws Exception {
        String rest = arg.substring(6);
        int at = rest.indexOf('@'), eq = rest.indexOf('=');
        Table table = load(rest.substring(at + 1));
        Expression filter = Expressions.alwaysTrue();
        if (eq >= 0 && eq < at) { // the value as the column's type (strings bind as strings only)
            String col = rest.substring(0, eq), text = rest.substring(eq + 1, at);
            Type ct = table.schema().findType(col);
            Object lit = text;
            switch (ct == null ? Type.TypeID.STRING : ct.typeId()) {
                case BOOLEAN: lit = Boolean.parseBoolean(text); break;
                case INTEGER: lit = Integer.parseInt(text); break;
                case LONG: lit = Long.parseLong(text); break;
                case FLOAT: lit = Float.parseFloat(text); break;
                case DOUBLE: lit = Double.parseDouble(text); break;
                default: break;
            }
            filter = Expressions.equal(col, lit);
        }
        sb.append("{\"arg\":");
        str(sb, arg);
        sb.append(",\"spec\":");
        str(sb, table.spec().toString());
        sb.append(",\"planned\":[");
        boolean first = true;
        try (CloseableIterable<FileScanTask> tasks = table.newScan().planFiles()) {
            for (FileScanTask t : tasks) {
                if (!first) sb.append(',');
                first = false;
                value(sb, t.file().partition(), table.specs().get(t.file().specId()).partitionType());
            }
        }
        sb.append("],\"filtered_files\":");
        int n = 0;
        try (CloseableIterable<FileScanTask> tasks = table.newScan().filter(filter).planFiles()) {
            for (FileScanTask t : tasks) n++;
        }
        num(sb, n);
        sb.append(",\"filtered_rows\":");
        n = 0;
        try (CloseableIterable<Record> it = IcebergGenerics.read(table).where(filter).build()) {
            for (Record r : it) n++;
        }
        num(sb, n);
        sb.append('}');
    }

    private static void table(StringBuilder sb, String arg) throws Exception {
        if (arg.startsWith("records:")) {
            records(sb, arg);
            return;
        }
        if (arg.startsWith("parts:")) {
            parts(sb, arg);
            return;
        }
        Table table = load(arg);
        sb.append("{\"arg\":");
        str(sb, arg);
        sb.append(",\"metadata_location\":");
        str(sb, ((BaseTable) table).operations().current().metadataFileLocation());
        if (arg.startsWith("hint:")) {    // only which metadata version-hint.text leads to
            sb.append('}');
            return;
        }
        sb.append(",\"format_version\":");
        num(sb, ((BaseTable) table).operations().current().formatVersion());
        sb.append(",\"last_sequence_number\":");
        num(sb, ((BaseTable) table).operations().current().lastSequenceNumber());
        Snapshot cur = table.currentSnapshot();
        sb.append(",\"current_snapshot_id\":");
        num(sb, cur == null ? null : cur.snapshotId());
        sb.append(",\"spec\":");
        str(sb, table.spec().toString());

        // snapshots in commit order
        List<Snapshot> snaps = new ArrayList<>();
        for (Snapshot s : table.snapshots()) {
            snaps.add(s);
        }
        snaps.sort(Comparator.comparingLong(Snapshot::sequenceNumber));
        sb.append(",\"snapshots\":[");
        for (int i = 0; i < snaps.size(); i++) {
            Snapshot s = snaps.get(i);
            if (i > 0) sb.append(',');
            sb.append("{\"id\":");
            num(sb, s.snapshotId());
            sb.append(",\"parent\":");
            num(sb, s.parentId());
            sb.append(",\"seq\":");
            num(sb, s.sequenceNumber());
            sb.append(",\"ts\":");
            num(sb, s.timestampMillis());
            sb.append(",\"operation\":");
            str(sb, String.valueOf(s.operation()));
            sb.append(",\"manifests\":");
            num(sb, s.allManifests(table.io()).size());
            sb.append(",\"first_row_id\":");   // format version 3: row lineage
            num(sb, s.firstRowId());
            sb.append(",\"added_rows\":");
            num(sb, s.addedRows());
            sb.append(",\"summary\":{");
            boolean first = true;
            for (Map.Entry<String, String> e : s.summary().entrySet()) {
                if (!first) sb.append(',');
                first = false;
                str(sb, e.getKey());
                sb.append(':');
                str(sb, e.getValue());
            }
            sb.append("}}");
        }
        sb.append(']');

        sb.append(",\"rows\":");
        rows(sb, table, null);
        sb.append(",\"probes\":");
        probes(sb, table);

        // planned data files of the current snapshot
        sb.append(",\"planned\":[");
        boolean first = true;
        try (CloseableIterable<FileScanTask> tasks = table.newScan().planFiles()) {
            for (FileScanTask t : tasks) {
                DataFile f = t.file();
                if (!first) sb.append(',');
                first = false;
                sb.append("{\"path\":");
                str(sb, f.location());
                sb.append(",\"data_seq\":");
                num(sb, f.dataSequenceNumber());
                sb.append(",\"file_seq\":");
                num(sb, f.fileSequenceNumber());
                sb.append(",\"records\":");
                num(sb, f.recordCount());
                sb.append(",\"size\":");
                num(sb, f.fileSizeInBytes());
                sb.append(",\"spec_id\":");
                num(sb, f.specId());
                sb.append(",\"deletes\":");
                num(sb, t.deletes().size());
                sb.append(",\"first_row_id\":");
                num(sb, f.firstRowId());
                sb.append(",\"delete_refs\":[");   // a deletion vector's data file
                for (int d = 0; d < t.deletes().size(); d++) {
                    if (d > 0) sb.append(',');
                    String ref = t.deletes().get(d).referencedDataFile();
                    if (ref == null) sb.append("null"); else str(sb, ref);
                }
                sb.append(']');
                PartitionSpec spec = table.specs().get(f.specId());
                sb.append(",\"partition\":");
                value(sb, f.partition(), spec.partitionType());
                sb.append('}');
            }
        }
        sb.append(']');

        sb.append(",\"meta\":{");
        MetadataTableType[] types = {MetadataTableType.FILES, MetadataTableType.ENTRIES,
            MetadataTableType.MANIFESTS, MetadataTableType.SNAPSHOTS, MetadataTableType.HISTORY};
        for (int i = 0; i < types.length; i++) {
            if (i > 0) sb.append(',');
            str(sb, types[i].name().toLowerCase());
            sb.append(':');
            metadataTable(sb, table, types[i]);
        }
        sb.append('}');

        // time travel to the oldest retained snapshot
        if (!snaps.isEmpty()) {
            Snapshot oldest = snaps.get(0);
            sb.append(",\"oldest_snapshot_id\":");
            num(sb, oldest.snapshotId());
            sb.append(",\"oldest_rows\":");
            rows(sb, table, oldest.snapshotId());
            TableScan ts = table.newScan().useSnapshot(oldest.snapshotId());
            int n = 0;
            try (CloseableIterable<FileScanTask> tasks = ts.planFiles()) {
                for (FileScanTask t : tasks) {
                    n++;
                }
            }
            sb.append(",\"oldest_planned\":");
            num(sb, n);
        }
        sb.append('}');
    }

    public static void main(String[] args) throws Exception {
        StringBuilder sb = new StringBuilder(1 << 20);
        sb.append("{\"iceberg_version\":");
        str(sb, String.valueOf(org.apache.iceberg.IcebergBuild.version()));
        sb.append(",\"tables\":[");
        for (int i = 0; i < args.length; i++) {
            if (i > 0) sb.append(',');
            table(sb, args[i]);
        }
        sb.append("]}\n");
        System.out.print(sb);
        System.out.flush();
    }
}
