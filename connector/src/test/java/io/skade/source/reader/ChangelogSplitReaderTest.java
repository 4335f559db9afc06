package io.skade.source.reader;

import static org.assertj.core.api.Assertions.assertThat;

import io.skade.TestCatalog;
import io.skade.changelog.ChangelogOptions;
import io.skade.source.split.ChangelogSplit;
import io.skade.write.TableWriter;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import org.apache.flink.connector.base.source.reader.RecordsWithSplitIds;
import org.apache.flink.connector.base.source.reader.splitreader.SplitsAddition;
import org.apache.flink.table.data.RowData;
import org.apache.iceberg.HasTableOperations;
import org.apache.iceberg.Schema;
import org.apache.iceberg.Table;
import org.apache.iceberg.catalog.TableIdentifier;
import org.apache.iceberg.data.GenericRecord;
import org.apache.iceberg.data.Record;
import org.apache.iceberg.types.Types;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/** A split is read from its own metadata file, in bounded fetches, and resumes where it was. */
class ChangelogSplitReaderTest {
  private static final Schema SCHEMA = new Schema(
      List.of(Types.NestedField.required(1, "id", Types.LongType.get()),
          Types.NestedField.optional(2, "name", Types.StringType.get())),
      Set.of(1));

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
    split = ChangelogSplit.window(catalog.get().commitTableKey(TableIdentifier.of("db", "t")),
        ((HasTableOperations) table).operations().current().metadataFileLocation(),
        ChangelogSplit.BEFORE_FIRST, table.currentSnapshot().snapshotId(),
        catalog.get().commitSeq());
  }

  @Test
  void aSplitIsEmittedInBoundedFetchesWithRowKindsAndCommitTimes() throws Exception {
    List<ChangeRecord> records = readAll(split, 2);
    assertThat(records).extracting(r -> r.row().getRowKind().shortString() + " "
            + r.row().getLong(0) + " " + r.row().getString(1))
        .containsExactly("+I 1 a", "+I 2 b", "+I 3 c", "-U 2 b", "+U 2 b2", "-D 3 c");
    assertThat(records).extracting(ChangeRecord::emittedAfter)
        .containsExactly(1L, 2L, 3L, 4L, 5L, 6L);
    List<Long> commits = new ArrayList<>(); // each snapshot's commit time, in commit order
    table.snapshots().forEach(s -> commits.add(s.timestampMillis()));
    assertThat(records).extracting(ChangeRecord::commitMillis).containsExactly(
        commits.get(0), commits.get(0), commits.get(0), commits.get(1), commits.get(1),
        commits.get(2));
  }

  @Test
  void aRestoredSplitResumesAfterWhatItHadEmitted() throws Exception {
    List<ChangeRecord> rest = readAll(split.withEmitted(4), 100);
    assertThat(rest).extracting(r -> r.row().getRowKind().shortString() + " " + r.row().getLong(0))
        .containsExactly("+U 2", "-D 3");
    assertThat(rest).extracting(ChangeRecord::emittedAfter).containsExactly(5L, 6L);
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
          for (ChangeRecord r = fetched.nextRecordFromSplit(); r != null;
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

  private static Record row(long id, String name) {
    GenericRecord record = GenericRecord.create(SCHEMA);
    record.setField("id", id);
    record.setField("name", name);
    return record;
  }
}
