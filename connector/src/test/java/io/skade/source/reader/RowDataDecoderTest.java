package io.skade.source.reader;

import static org.assertj.core.api.Assertions.assertThat;

import io.skade.changelog.ChangeRow;
import io.skade.changelog.ChangelogOptions;
import io.skade.changelog.ChangelogOptions.BeforeImage;
import io.skade.changelog.ChangelogOptions.Mode;
import io.skade.changelog.ChangelogReader;
import io.skade.testing.TestCatalog;
import io.skade.write.TableWriter;
import java.math.BigDecimal;
import java.nio.ByteBuffer;
import java.time.LocalDate;
import java.time.LocalDateTime;
import java.time.ZoneOffset;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.UUID;
import org.apache.flink.table.data.RowData;
import org.apache.flink.table.types.logical.RowType;
import org.apache.flink.types.RowKind;
import org.apache.iceberg.PartitionSpec;
import org.apache.iceberg.Schema;
import org.apache.iceberg.Snapshot;
import org.apache.iceberg.Table;
import org.apache.iceberg.catalog.TableIdentifier;
import org.apache.iceberg.data.GenericRecord;
import org.apache.iceberg.data.Record;
import org.apache.iceberg.expressions.Expressions;
import org.apache.iceberg.flink.FlinkSchemaUtil;
import org.apache.iceberg.flink.data.StructRowData;
import org.apache.iceberg.types.Types;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * Changes read with data files decoded into Flink rows equal, value for value, those read through
 * Iceberg's generic records: in the engine (what deletes, filters and pairing see) and as Flink
 * gets them, for every column type the decoder takes, nulls, identity-partition values, equality
 * and position deletes, rewrites, filters, projections and key-only before-images.
 */
class RowDataDecoderTest {
  private static final Schema SCHEMA =
      new Schema(
          List.of(
              Types.NestedField.required(1, "id", Types.LongType.get()),
              Types.NestedField.required(2, "region", Types.StringType.get()),
              Types.NestedField.optional(3, "flag", Types.BooleanType.get()),
              Types.NestedField.optional(4, "small", Types.IntegerType.get()),
              Types.NestedField.optional(5, "ratio", Types.FloatType.get()),
              Types.NestedField.optional(6, "score", Types.DoubleType.get()),
              Types.NestedField.optional(7, "price", Types.DecimalType.of(9, 2)),
              Types.NestedField.optional(8, "big", Types.DecimalType.of(30, 4)),
              Types.NestedField.optional(9, "day", Types.DateType.get()),
              Types.NestedField.optional(10, "local_ts", Types.TimestampType.withoutZone()),
              Types.NestedField.optional(11, "utc_ts", Types.TimestampType.withZone()),
              Types.NestedField.optional(12, "name", Types.StringType.get()),
              Types.NestedField.optional(13, "uid", Types.UUIDType.get()),
              Types.NestedField.optional(14, "code", Types.FixedType.ofLength(3)),
              Types.NestedField.optional(15, "blob", Types.BinaryType.get())),
          Set.of(1, 2));

  @RegisterExtension final TestCatalog catalog = new TestCatalog();

  @Test
  void decodedChangesEqualGenericOnesOnAPrimaryKeyTable() {
    Table table =
        catalog
            .get()
            .createTable(
                TableIdentifier.of("db", "keyed"),
                SCHEMA,
                PartitionSpec.builderFor(SCHEMA).identity("region").build());
    TableWriter writer = new TableWriter(table);
    writer.append(List.of(row(1, "eu", 1), row(2, "eu", 2), row(3, "us", 3), nulls(4, "us")));
    Snapshot upsert = writer.upsert(List.of(row(2, "eu", 20), row(4, "us", 40)));
    writer.deleteKeys(List.of(row(3, "us", 0)));
    String file = upsert.addedDataFiles(table.io()).iterator().next().location();
    writer.deletePositions(Map.of(file, List.of(0L)));
    writer.append(List.of(nulls(5, "eu"), row(6, "us", 6)));

    assertSameChanges(table);
  }

  @Test
  void decodedChangesEqualGenericOnesOnALogTable() {
    Schema log = new Schema(SCHEMA.columns());
    Table table = catalog.get().createTable(TableIdentifier.of("db", "log"), log);
    TableWriter writer = new TableWriter(table);
    writer.append(List.of(row(1, "eu", 1), row(2, "eu", 2), nulls(3, "us")));
    writer.append(List.of(row(4, "us", 4)));
    writer.overwrite(
        Expressions.alwaysTrue(), List.of(row(1, "eu", 1), nulls(3, "us"), row(5, "eu", 50)));

    assertSameChanges(table);
  }

  @Test
  void aSchemaWithAColumnItCannotDecodeExactlyIsLeftToTheGenericReader() {
    RowDataDecoder decoder = new RowDataDecoder();
    assertThat(decoder.decodes(SCHEMA)).isTrue();
    for (Types.NestedField lossy :
        List.of(
            Types.NestedField.optional(20, "at", Types.TimeType.get()),
            Types.NestedField.optional(
                20, "tags", Types.ListType.ofOptional(21, Types.StringType.get())),
            Types.NestedField.optional(
                20,
                "point",
                Types.StructType.of(
                    Types.NestedField.optional(21, "x", Types.IntegerType.get()))))) {
      List<Types.NestedField> columns = new ArrayList<>(SCHEMA.columns());
      columns.add(lossy);
      assertThat(decoder.decodes(new Schema(columns))).as(lossy.toString()).isFalse();
    }
  }

  /** Every option that changes what rows are read or emitted, decoded and generic, compared. */
  private static void assertSameChanges(Table table) {
    List<ChangelogOptions> options =
        List.of(
            ChangelogOptions.defaults(),
            ChangelogOptions.defaults().withMode(Mode.COLLAPSED),
            ChangelogOptions.defaults().withFilter(Expressions.greaterThan("price", "2.50")),
            ChangelogOptions.defaults().withFilter(Expressions.equal("region", "us")),
            ChangelogOptions.defaults().withColumns(List.of("utc_ts", "id", "region", "name")));
    if (!table.schema().identifierFieldIds().isEmpty()) {
      options = new ArrayList<>(options);
      options.add(
          ChangelogOptions.defaults()
              .withBeforeImage(BeforeImage.KEY_ONLY)
              .withColumns(List.of("id", "region", "blob")));
    }
    long last = table.currentSnapshot().snapshotId();
    for (ChangelogOptions option : options) {
      RowDataDecoder decoder = new RowDataDecoder();
      List<ChangeRow> generic = new ChangelogReader(table, option).read(null, last);
      List<ChangeRow> decoded =
          new ChangelogReader(table, option, Map.of(), decoder).read(null, last);

      assertThat(generic).as("changes of " + option).isNotEmpty();
      assertThat(decoded)
          .as("decoded rows among " + option)
          .anyMatch(c -> decoder.decoded(c.row()));
      assertThat(decoded).as(option.toString()).hasSameSizeAs(generic);
      Schema emitted =
          option.columns() == null ? table.schema() : table.schema().select(option.columns());
      for (int i = 0; i < generic.size(); i++) {
        ChangeRow expected = generic.get(i);
        ChangeRow actual = decoded.get(i);
        String at = option + ", change " + i + " " + expected.type() + " " + expected.row();
        assertThat(actual.type()).as(at).isEqualTo(expected.type());
        assertThat(actual.snapshotId()).as(at).isEqualTo(expected.snapshotId());
        assertThat(values(actual.row())).as(at).isEqualTo(values(expected.row()));
        assertThat(flink(actual, emitted)).as(at).isEqualTo(flink(expected, emitted));
      }
    }
  }

  /** A record's generic values, binary ones as buffers so that they compare by content. */
  private static List<Object> values(Record row) {
    List<Object> values = new ArrayList<>();
    for (int i = 0; i < row.size(); i++) {
      Object value = row.get(i, Object.class);
      values.add(value instanceof byte[] bytes ? ByteBuffer.wrap(bytes) : value);
    }
    return values;
  }

  /** The change as the split reader hands it to Flink: its kind and internal values. */
  private static List<Object> flink(ChangeRow change, Schema emitted) {
    RowKind kind = FlinkChanges.rowKind(change.type());
    RowData decoded = RowDataDecoder.rowData(change.row(), kind);
    RowData row =
        decoded != null
            ? decoded
            : new StructRowData(emitted.asStruct(), kind).setStruct(change.row());
    RowType rowType = FlinkSchemaUtil.convert(emitted);
    List<Object> values = new ArrayList<>();
    values.add(row.getRowKind());
    for (int i = 0; i < rowType.getFieldCount(); i++) {
      Object value = RowData.createFieldGetter(rowType.getTypeAt(i), i).getFieldOrNull(row);
      values.add(value instanceof byte[] bytes ? ByteBuffer.wrap(bytes) : value);
    }
    return values;
  }

  private static Record row(long id, String region, int n) {
    GenericRecord row = GenericRecord.create(SCHEMA);
    LocalDateTime local = LocalDateTime.of(2026, 12, 5, 12, 34, 56, 789_012_000).plusHours(n);
    row.setField("id", id);
    row.setField("region", region);
    row.setField("flag", n % 2 == 0);
    row.setField("small", n * 7);
    row.setField("ratio", n + 0.5f);
    row.setField("score", n * 1.25);
    row.setField("price", new BigDecimal(n + ".25"));
    row.setField("big", new BigDecimal("12345678901234567890." + (1000 + n)));
    row.setField("day", LocalDate.of(2026, 12, 5).plusDays(n));
    row.setField("local_ts", local);
    row.setField("utc_ts", local.atOffset(ZoneOffset.UTC));
    row.setField("name", "näme " + n);
    row.setField("uid", new UUID(n, -n));
    row.setField("code", new byte[] {(byte) n, 2, 3});
    row.setField("blob", ByteBuffer.wrap(new byte[] {4, (byte) n}));
    return row;
  }

  private static Record nulls(long id, String region) {
    GenericRecord row = GenericRecord.create(SCHEMA);
    row.setField("id", id);
    row.setField("region", region);
    return row;
  }
}
