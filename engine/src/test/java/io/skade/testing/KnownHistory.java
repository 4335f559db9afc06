package io.skade.testing;

import io.skade.catalog.SkadeCatalog;
import io.skade.write.TableWriter;
import java.util.List;
import org.apache.iceberg.Schema;
import org.apache.iceberg.Snapshot;
import org.apache.iceberg.Table;
import org.apache.iceberg.catalog.TableIdentifier;
import org.apache.iceberg.data.Record;

/**
 * Primary-key table {@code db.t (id bigint key, name string)} with a known history of four commits
 * (appends, an upsert, a key delete) and two more a test makes while a job runs. What each commit
 * changes is written out by hand as change lines ({@code "-U 2 b"}), never computed by the code
 * under test.
 */
public final class KnownHistory {
  public static final Schema SCHEMA = IdRows.SCHEMA;

  /** {@code append (1 a), (2 b)}. */
  public static final List<String> S1 = List.of("+I 1 a", "+I 2 b");

  /** {@code upsert (2 b2), (3 c)}: one update, one new key. */
  public static final List<String> S2 = List.of("-U 2 b", "+U 2 b2", "+I 3 c");

  /** {@code delete key 1}. */
  public static final List<String> S3 = List.of("-D 1 a");

  /** {@code append (4 d)}. */
  public static final List<String> S4 = List.of("+I 4 d");

  /** {@code upsert (3 c2)}, made while a job runs. */
  public static final List<String> S5 = List.of("-U 3 c", "+U 3 c2");

  /** {@code delete key 4}, made while a job runs. */
  public static final List<String> S6 = List.of("-D 4 d");

  /** The table's rows after S4, as inserts. */
  public static final List<String> ROWS_AT_S4 = List.of("+I 2 b2", "+I 3 c", "+I 4 d");

  public final Table table;
  public final Snapshot s1;
  public final Snapshot s2;
  public final Snapshot s3;
  public final Snapshot s4;

  /** A time after S2's commit and not after S3's. */
  public final long beforeS3Millis;

  /** The catalog's commit_seq right after S2. */
  public final long seqAfterS2;

  private final TableWriter writer;

  private KnownHistory(SkadeCatalog catalog) {
    table = catalog.createTable(TableIdentifier.of("db", "t"), SCHEMA);
    writer = new TableWriter(table);
    s1 = writer.append(List.of(row(1, "a"), row(2, "b")));
    s2 = writer.upsert(List.of(row(2, "b2"), row(3, "c")));
    seqAfterS2 = catalog.commitSeq();
    while (System.currentTimeMillis() <= s2.timestampMillis()) {
      Thread.onSpinWait(); // at most a millisecond: S3 must carry a later timestamp than S2
    }
    beforeS3Millis = System.currentTimeMillis();
    s3 = writer.deleteKeys(List.of(row(1, null)));
    s4 = writer.append(List.of(row(4, "d")));
  }

  /** Creates {@code db.t} and commits S1 to S4. */
  public static KnownHistory write(SkadeCatalog catalog) {
    return new KnownHistory(catalog);
  }

  public Snapshot commitS5() {
    return writer.upsert(List.of(row(3, "c2")));
  }

  public Snapshot commitS6() {
    return writer.deleteKeys(List.of(row(4, null)));
  }

  public static Record row(long id, String name) {
    return IdRows.row(id, name);
  }
}
