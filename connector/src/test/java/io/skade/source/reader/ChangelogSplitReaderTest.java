package io.skade.source.reader;

import static io.skade.testing.IdRows.row;
import static org.assertj.core.api.Assertions.assertThat;

import io.skade.changelog.ChangelogOptions;
import io.skade.source.split.ChangelogSplit;
import io.skade.testing.IdRows;
import io.skade.testing.TestCatalog;
import io.skade.write.TableWriter;
import java.math.BigDecimal;
import java.nio.ByteBuffer;
import java.time.LocalDate;
import java.time.LocalDateTime;
import java.time.LocalTime;
import java.time.ZoneOffset;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.UUID;
import org.apache.flink.connector.base.source.reader.RecordsWithSplitIds;
import org.apache.flink.connector.base.source.reader.splitreader.SplitsAddition;
import org.apache.flink.table.data.ArrayData;
import org.apache.flink.table.data.DecimalData;
import org.apache.flink.table.data.RowData;
import org.apache.flink.table.data.StringData;
import org.apache.flink.table.data.TimestampData;
import org.apache.flink.table.types.logical.RowType;
import org.apache.flink.types.RowKind;
import org.apache.iceberg.HasTableOperations;
import org.apache.iceberg.Schema;
import org.apache.iceberg.Table;
import org.apache.iceberg.catalog.TableIdentifier;
import org.apache.iceberg.data.GenericRecord;
import org.apache.iceberg.flink.FlinkSchemaUtil;
import org.apache.iceberg.types.Types;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/** A split is read from its own metadata file, in bounded fetches, and resumes where it was. */
class ChangelogSplitReaderTest {
  private static final Schema SCHEMA = IdRows.SCHEMA;

  @RegisterExtension final TestCatalog catalog = new TestCatalog();
  private Table table;
  private ChangelogSplit split;

  @BeforeEach
  void history() {
    table = catalog.get().createTable(TableIdentifier.of("db", "t"), SCHEMA);
    TableWriter writer = new TableWriter(table);
    writer.append(List.of(row(1, "a"), row(2, "b"), row(3, "c")));
    writer.upsert(List.of(row(2, "b2")));
    writer.deleteKeys(List.of(row(3, null)));
    split =
        ChangelogSplit.window(
            catalog.get().commitTableKey(TableIdentifier.of("db", "t")),
            ((HasTableOperations) table).operations().current().metadataFileLocation(),
            ChangelogSplit.BEFORE_FIRST,
            table.currentSnapshot().snapshotId(),
            catalog.get().commitSeq());
  }

  @Test
  void aSplitIsEmittedInBoundedFetchesWithRowKindsAndCommitTimes() throws Exception {
    List<ChangeRecord> records = readAll(split, 2);
    assertThat(records)
        .extracting(
            r ->
                r.row().getRowKind().shortString()
                    + " "
                    + r.row().getLong(0)
                    + " "
                    + r.row().getString(1))
        .containsExactly("+I 1 a", "+I 2 b", "+I 3 c", "-U 2 b", "+U 2 b2", "-D 3 c");
    assertThat(records)
        .extracting(ChangeRecord::emittedAfter)
        .containsExactly(1L, 2L, 3L, 4L, 5L, 6L);
    List<Long> commits = new ArrayList<>(); // each snapshot's commit time, in commit order
    table.snapshots().forEach(s -> commits.add(s.timestampMillis()));
    assertThat(records)
        .extracting(ChangeRecord::commitMillis)
        .containsExactly(
            commits.get(0),
            commits.get(0),
            commits.get(0),
            commits.get(1),
            commits.get(1),
            commits.get(2));
  }

  @Test
  void aPausedSplitIsNotReadNorAnySplitAfterItUntilItIsResumed() throws Exception {
    ChangelogSplit later =
        ChangelogSplit.window(
            split.tableKey(),
            split.metadataLocation(),
            table.currentSnapshot().snapshotId(),
            table.currentSnapshot().snapshotId(),
            split.commitSeq() + 1);
    try (ChangelogSplitReader reader =
        new ChangelogSplitReader(table.io(), ChangelogOptions.defaults(), 2)) {
      reader.handleSplitsChanges(new SplitsAddition<>(List.of(split, later)));
      assertThat(reader.fetch().nextSplit()).isEqualTo(split.splitId());
      reader.pauseOrResumeSplits(List.of(split), List.of());
      for (int i = 0; i < 3; i++) {
        assertThat(reader.fetch().nextSplit()).as("a fetch while the split is paused").isNull();
      }
      reader.pauseOrResumeSplits(List.of(), List.of(split));
      List<String> kinds = new ArrayList<>();
      RecordsWithSplitIds<ChangeRecord> fetched;
      do {
        fetched = reader.fetch();
        for (String id = fetched.nextSplit(); id != null; id = fetched.nextSplit()) {
          assertThat(id).isEqualTo(split.splitId());
          for (ChangeRecord r = fetched.nextRecordFromSplit();
              r != null;
              r = fetched.nextRecordFromSplit()) {
            kinds.add(r.row().getRowKind().shortString() + " " + r.row().getLong(0));
          }
        }
      } while (!fetched.finishedSplits().contains(split.splitId()));
      assertThat(kinds)
          .as("the rest of the split, where it stood")
          .containsExactly("+I 3", "-U 2", "+U 2", "-D 3");
    }
  }

  @Test
  void aRestoredSplitResumesAfterWhatItHadEmitted() throws Exception {
    List<ChangeRecord> rest = readAll(split.withEmitted(4), 100);
    assertThat(rest)
        .extracting(r -> r.row().getRowKind().shortString() + " " + r.row().getLong(0))
        .containsExactly("+U 2", "-D 3");
    assertThat(rest).extracting(ChangeRecord::emittedAfter).containsExactly(5L, 6L);
  }

  @Test
  void aRestoredSnapshotSplitResumesAfterTheRowsItHadEmitted() throws Exception {
    ChangelogSplit rows =
        ChangelogSplit.snapshot(
            split.tableKey(),
            split.metadataLocation(),
            table.currentSnapshot().snapshotId(),
            split.commitSeq());
    List<String> all =
        readAll(rows, 100).stream()
            .map(r -> r.row().getRowKind().shortString() + " " + r.row().getLong(0))
            .toList();
    assertThat(all).containsExactlyInAnyOrder("+I 1", "+I 2");
    assertThat(readAll(rows.withEmitted(1), 100))
        .extracting(r -> r.row().getRowKind().shortString() + " " + r.row().getLong(0))
        .containsExactly(all.get(1));
  }

  @Test
  void everyColumnTypeReachesFlinkAsItsInternalValue() throws Exception {
    Schema types =
        new Schema(
            Types.NestedField.required(1, "id", Types.LongType.get()),
            Types.NestedField.optional(2, "flag", Types.BooleanType.get()),
            Types.NestedField.optional(3, "small", Types.IntegerType.get()),
            Types.NestedField.optional(4, "ratio", Types.FloatType.get()),
            Types.NestedField.optional(5, "score", Types.DoubleType.get()),
            Types.NestedField.optional(6, "price", Types.DecimalType.of(9, 2)),
            Types.NestedField.optional(7, "day", Types.DateType.get()),
            Types.NestedField.optional(8, "at", Types.TimeType.get()),
            Types.NestedField.optional(9, "local_ts", Types.TimestampType.withoutZone()),
            Types.NestedField.optional(10, "utc_ts", Types.TimestampType.withZone()),
            Types.NestedField.optional(11, "name", Types.StringType.get()),
            Types.NestedField.optional(12, "uid", Types.UUIDType.get()),
            Types.NestedField.optional(13, "code", Types.FixedType.ofLength(3)),
            Types.NestedField.optional(14, "blob", Types.BinaryType.get()),
            Types.NestedField.optional(
                15, "tags", Types.ListType.ofOptional(17, Types.StringType.get())),
            Types.NestedField.optional(
                16,
                "point",
                Types.StructType.of(Types.NestedField.optional(18, "x", Types.IntegerType.get()))),
            Types.NestedField.optional(19, "missing", Types.StringType.get()));
    Table typed = catalog.get().createTable(TableIdentifier.of("db", "typed"), types);
    UUID uid = UUID.fromString("12345678-1234-5678-9abc-def012345678");
    LocalDateTime local = LocalDateTime.of(2026, 11, 30, 12, 34, 56, 789_012_000);
    GenericRecord point = GenericRecord.create(types.findField("point").type().asStructType());
    point.setField("x", 7);
    GenericRecord record = GenericRecord.create(types);
    record.setField("id", 1L);
    record.setField("flag", true);
    record.setField("small", 42);
    record.setField("ratio", 1.5f);
    record.setField("score", 2.25);
    record.setField("price", new BigDecimal("1234.56"));
    record.setField("day", LocalDate.of(2026, 11, 30));
    record.setField("at", LocalTime.of(1, 2, 3, 4_000_000));
    record.setField("local_ts", local);
    record.setField("utc_ts", local.atOffset(ZoneOffset.UTC));
    record.setField("name", "skade");
    record.setField("uid", uid);
    record.setField("code", new byte[] {1, 2, 3});
    record.setField("blob", ByteBuffer.wrap(new byte[] {4, 5}));
    record.setField("tags", List.of("a", "b"));
    record.setField("point", point);
    new TableWriter(typed).append(List.of(record));
    ChangelogSplit whole =
        ChangelogSplit.window(
            catalog.get().commitTableKey(TableIdentifier.of("db", "typed")),
            ((HasTableOperations) typed).operations().current().metadataFileLocation(),
            ChangelogSplit.BEFORE_FIRST,
            typed.currentSnapshot().snapshotId(),
            catalog.get().commitSeq());
    table = typed;

    RowData read = readAll(whole, 10).get(0).row();

    RowType rowType = FlinkSchemaUtil.convert(types);
    ByteBuffer uidBytes = ByteBuffer.allocate(16);
    uidBytes.putLong(uid.getMostSignificantBits()).putLong(uid.getLeastSignificantBits());
    List<Object> flat =
        Arrays.asList(
            1L,
            true,
            42,
            1.5f,
            2.25,
            DecimalData.fromBigDecimal(new BigDecimal("1234.56"), 9, 2),
            (int) LocalDate.of(2026, 11, 30).toEpochDay(),
            (int) (LocalTime.of(1, 2, 3, 4_000_000).toNanoOfDay() / 1_000_000),
            TimestampData.fromLocalDateTime(local),
            TimestampData.fromInstant(local.toInstant(ZoneOffset.UTC)),
            StringData.fromString("skade"),
            uidBytes.array(),
            new byte[] {1, 2, 3},
            new byte[] {4, 5});
    assertThat(read.getRowKind()).isEqualTo(RowKind.INSERT);
    assertThat(read.getArity()).isEqualTo(types.columns().size());
    for (int i = 0; i < flat.size(); i++) {
      Object value = RowData.createFieldGetter(rowType.getTypeAt(i), i).getFieldOrNull(read);
      assertThat(value).as(rowType.getFieldNames().get(i)).isEqualTo(flat.get(i));
    }
    ArrayData tags = read.getArray(14);
    assertThat(List.of(tags.size(), tags.getString(0), tags.getString(1)))
        .containsExactly(2, StringData.fromString("a"), StringData.fromString("b"));
    assertThat(read.getRow(15, 1).getInt(0)).isEqualTo(7);
    assertThat(read.isNullAt(16)).isTrue();
  }

  /** Fetches until the split is finished, checking no fetch exceeds its bound (plus a pair). */
  private List<ChangeRecord> readAll(ChangelogSplit s, int batchRows) throws Exception {
    List<ChangeRecord> all = new ArrayList<>();
    try (ChangelogSplitReader reader =
        new ChangelogSplitReader(table.io(), ChangelogOptions.defaults(), batchRows)) {
      reader.handleSplitsChanges(new SplitsAddition<>(List.of(s)));
      boolean finished = false;
      while (!finished) {
        RecordsWithSplitIds<ChangeRecord> fetched = reader.fetch();
        int inFetch = 0;
        for (String id = fetched.nextSplit(); id != null; id = fetched.nextSplit()) {
          assertThat(id).isEqualTo(s.splitId());
          for (ChangeRecord r = fetched.nextRecordFromSplit();
              r != null;
              r = fetched.nextRecordFromSplit()) {
            all.add(r);
            inFetch++;
          }
        }
        assertThat(inFetch).isLessThanOrEqualTo(batchRows + 1);
        finished = fetched.finishedSplits().contains(s.splitId());
      }
      assertThat(reader.fetch().nextSplit()).as("nothing left once finished").isNull();
    }
    return all;
  }
}
