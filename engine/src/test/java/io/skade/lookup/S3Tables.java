package io.skade.lookup;

import io.skade.catalog.SkadeCatalog;
import io.skade.testing.S3FaultProxy;
import io.skade.testing.S3Server;
import io.skade.write.TableWriter;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.apache.iceberg.Schema;
import org.apache.iceberg.SortOrder;
import org.apache.iceberg.Table;
import org.apache.iceberg.catalog.Catalog;
import org.apache.iceberg.catalog.Namespace;
import org.apache.iceberg.catalog.TableIdentifier;
import org.apache.iceberg.data.GenericRecord;
import org.apache.iceberg.data.Record;
import org.apache.iceberg.types.Types;

/**
 * Lookup tables on object storage for tests: an embedded skade catalog whose warehouse is a bucket
 * of a real S3 server reached through a counting proxy, and tables laid out for lookups whose rows
 * follow from their keys ({@link #row}), so a test (or a child process) knows every answer.
 */
final class S3Tables implements AutoCloseable {
  static final Schema SCHEMA =
      new Schema(
          List.of(
              Types.NestedField.required(1, "id", Types.LongType.get()),
              Types.NestedField.optional(2, "name", Types.StringType.get()),
              Types.NestedField.optional(3, "city", Types.StringType.get()),
              Types.NestedField.optional(4, "score", Types.IntegerType.get())),
          Set.of(1));

  final S3Server s3;
  final S3FaultProxy proxy;
  final SkadeCatalog catalog;

  private S3Tables(S3Server s3, S3FaultProxy proxy, SkadeCatalog catalog) {
    this.s3 = s3;
    this.proxy = proxy;
    this.catalog = catalog;
  }

  /** A server with its files under {@code dir}, a proxy, and a catalog with namespace db. */
  static S3Tables start(Path dir, String bucket) throws Exception {
    S3Server s3 = S3Server.start(dir.resolve("s3"));
    s3.bucket(bucket);
    S3FaultProxy proxy = new S3FaultProxy(s3.endpoint());
    Map<String, String> props = new HashMap<>(S3Server.fileIoProperties(proxy.endpoint()));
    props.put("warehouse", "s3://" + bucket + "/wh");
    props.put(SkadeCatalog.CATALOG_PATH, dir.resolve("catalog").toString());
    SkadeCatalog catalog = new SkadeCatalog();
    catalog.initialize("s3-lookups", props);
    catalog.createNamespace(Namespace.of("db"));
    return new S3Tables(s3, proxy, catalog);
  }

  /** A keyed table sorted by id, with bloom filters on it, laid out for lookups. */
  Table createTable(String name) {
    return createTable(catalog, name);
  }

  /** A keyed table {@code db.name} of {@link #SCHEMA} in {@code catalog}, laid out for lookups. */
  static Table createTable(Catalog catalog, String name) {
    return catalog
        .buildTable(TableIdentifier.of("db", name), SCHEMA)
        .withSortOrder(SortOrder.builderFor(SCHEMA).asc("id").build())
        .withProperty("format-version", "2")
        .withProperty("write.parquet.bloom-filter-enabled.column.id", "true")
        .withProperties(PointLookup.LOOKUP_FILE_PROPERTIES)
        .create();
  }

  /** Appends file {@code f}: rows {@code [f * rows, (f + 1) * rows)} with ids {@link #id}. */
  static void appendFile(Table table, int f, int rows) {
    List<Record> records = new ArrayList<>(rows);
    for (int i = 0; i < rows; i++) {
      records.add(row(id(f, i, rows)));
    }
    new TableWriter(table).append(records);
  }

  /** The id of row {@code i} of file {@code f}: even ids, so odd ones are misses. */
  static long id(int f, int i, int rowsPerFile) {
    return 2L * ((long) f * rowsPerFile + i);
  }

  /** The row with key {@code id}. */
  static Record row(long id) {
    GenericRecord row = GenericRecord.create(SCHEMA);
    row.setField("id", id);
    row.setField("name", id % 7 == 0 ? null : "name-" + id);
    row.setField("city", "city-" + id % 40);
    row.setField("score", (int) (id % 1000));
    return row;
  }

  /** What a probe of {@code key} returns when the table holds {@code files} files of this shape. */
  static List<String> expected(long key, int files, int rowsPerFile) {
    boolean written = key >= 0 && key % 2 == 0 && key / 2 < (long) files * rowsPerFile;
    return written ? List.of(IcebergReference.canonical(row(key), SCHEMA)) : List.of();
  }

  @Override
  public void close() throws Exception {
    catalog.close();
    proxy.close();
    s3.close();
  }
}
