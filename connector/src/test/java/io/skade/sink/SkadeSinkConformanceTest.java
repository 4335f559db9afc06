package io.skade.sink;

import io.skade.testing.IdRows;
import io.skade.testing.TestCatalog;
import java.io.IOException;
import java.io.Serializable;
import java.io.UncheckedIOException;
import java.net.URL;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Random;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.flink.api.common.typeinfo.TypeInformation;
import org.apache.flink.api.connector.sink2.Sink;
import org.apache.flink.connector.testframe.environment.MiniClusterTestEnvironment;
import org.apache.flink.connector.testframe.external.ExternalContextFactory;
import org.apache.flink.connector.testframe.external.ExternalSystemDataReader;
import org.apache.flink.connector.testframe.external.sink.DataStreamSinkV2ExternalContext;
import org.apache.flink.connector.testframe.external.sink.TestingSinkSettings;
import org.apache.flink.connector.testframe.junit.annotations.TestContext;
import org.apache.flink.connector.testframe.junit.annotations.TestEnv;
import org.apache.flink.connector.testframe.junit.annotations.TestSemantics;
import org.apache.flink.connector.testframe.testsuites.SinkTestSuiteBase;
import org.apache.flink.core.execution.CheckpointingMode;
import org.apache.flink.table.data.ArrayData;
import org.apache.flink.table.data.DecimalData;
import org.apache.flink.table.data.MapData;
import org.apache.flink.table.data.RawValueData;
import org.apache.flink.table.data.RowData;
import org.apache.flink.table.data.StringData;
import org.apache.flink.table.data.TimestampData;
import org.apache.flink.table.runtime.typeutils.InternalTypeInfo;
import org.apache.flink.types.RowKind;
import org.apache.flink.types.variant.Variant;
import org.apache.iceberg.Schema;
import org.apache.iceberg.Table;
import org.apache.iceberg.catalog.TableIdentifier;
import org.apache.iceberg.data.IcebergGenerics;
import org.apache.iceberg.data.Record;
import org.apache.iceberg.flink.FlinkSchemaUtil;
import org.apache.iceberg.io.CloseableIterable;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * Flink's own sink conformance suite against {@link SkadeSink}: a basic write, a restore from a
 * savepoint at the same, a higher and a lower parallelism, and the standard sink metric {@code
 * numRecordsSend}, each read back from the table through Iceberg's reader and compared with what
 * was written, exactly once.
 */
class SkadeSinkConformanceTest extends SinkTestSuiteBase<SkadeSinkConformanceTest.Row> {
  private static final Schema SCHEMA = IdRows.log("v");
  private static final AtomicInteger TABLES = new AtomicInteger();

  @RegisterExtension final TestCatalog catalog = new TestCatalog();

  @TestEnv final MiniClusterTestEnvironment flink = new MiniClusterTestEnvironment();

  @TestSemantics final CheckpointingMode[] semantics = {CheckpointingMode.EXACTLY_ONCE};

  @TestContext final ExternalContextFactory<Context> tables = testName -> new Context();

  /** A row of the test table that the suite can sort (Flink's own rows are not comparable). */
  static final class Row implements RowData, Comparable<Row>, Serializable {
    private static final long serialVersionUID = 1L;
    private final long id;
    private final String v;

    Row(long id, String v) {
      this.id = id;
      this.v = v;
    }

    @Override
    public int compareTo(Row other) {
      int byId = Long.compare(id, other.id);
      return byId != 0 ? byId : v.compareTo(other.v);
    }

    @Override
    public boolean equals(Object other) {
      return other instanceof Row row && row.id == id && row.v.equals(v);
    }

    @Override
    public int hashCode() {
      return Objects.hash(id, v);
    }

    @Override
    public String toString() {
      return "(" + id + ", " + v + ")";
    }

    @Override
    public int getArity() {
      return 2;
    }

    @Override
    public RowKind getRowKind() {
      return RowKind.INSERT;
    }

    @Override
    public void setRowKind(RowKind kind) {
      throw new UnsupportedOperationException();
    }

    @Override
    public boolean isNullAt(int pos) {
      return false;
    }

    @Override
    public long getLong(int pos) {
      return id;
    }

    @Override
    public StringData getString(int pos) {
      return StringData.fromString(v);
    }

    @Override
    public boolean getBoolean(int pos) {
      throw new UnsupportedOperationException();
    }

    @Override
    public byte getByte(int pos) {
      throw new UnsupportedOperationException();
    }

    @Override
    public short getShort(int pos) {
      throw new UnsupportedOperationException();
    }

    @Override
    public int getInt(int pos) {
      throw new UnsupportedOperationException();
    }

    @Override
    public float getFloat(int pos) {
      throw new UnsupportedOperationException();
    }

    @Override
    public double getDouble(int pos) {
      throw new UnsupportedOperationException();
    }

    @Override
    public DecimalData getDecimal(int pos, int precision, int scale) {
      throw new UnsupportedOperationException();
    }

    @Override
    public TimestampData getTimestamp(int pos, int precision) {
      throw new UnsupportedOperationException();
    }

    @Override
    public <T> RawValueData<T> getRawValue(int pos) {
      throw new UnsupportedOperationException();
    }

    @Override
    public byte[] getBinary(int pos) {
      throw new UnsupportedOperationException();
    }

    @Override
    public ArrayData getArray(int pos) {
      throw new UnsupportedOperationException();
    }

    @Override
    public MapData getMap(int pos) {
      throw new UnsupportedOperationException();
    }

    @Override
    public RowData getRow(int pos, int numFields) {
      throw new UnsupportedOperationException();
    }

    @Override
    public Variant getVariant(int pos) {
      throw new UnsupportedOperationException();
    }
  }

  /** One test's table, created when the suite first asks for the sink or its reader. */
  final class Context implements DataStreamSinkV2ExternalContext<Row> {
    private final TableIdentifier table = TableIdentifier.of("db", "t" + TABLES.incrementAndGet());

    private Table table() {
      return catalog.get().tableExists(table)
          ? catalog.get().loadTable(table)
          : catalog.get().createTable(table, SCHEMA);
    }

    @Override
    @SuppressWarnings({"unchecked", "rawtypes"})
    public Sink<Row> createSink(TestingSinkSettings settings) {
      table();
      return (Sink)
          SkadeSink.builder().catalogProperties(catalog.properties()).table(table).build();
    }

    @Override
    public ExternalSystemDataReader<Row> createSinkDataReader(TestingSinkSettings settings) {
      Table read = table();
      Map<Row, Integer> returned = new HashMap<>();
      return new ExternalSystemDataReader<>() {
        @Override
        public List<Row> poll(Duration timeout) {
          // The rows committed since the last poll: all rows, less those returned before.
          read.refresh();
          Map<Row, Integer> left = new HashMap<>(returned);
          List<Row> fresh = new ArrayList<>();
          try (CloseableIterable<Record> records = IcebergGenerics.read(read).build()) {
            for (Record record : records) {
              Row row = new Row(record.get(0, Long.class), record.get(1, String.class));
              if (left.merge(row, -1, Integer::sum) < 0) {
                fresh.add(row);
                returned.merge(row, 1, Integer::sum);
              }
            }
          } catch (IOException e) {
            throw new UncheckedIOException(e);
          }
          return fresh;
        }

        @Override
        public void close() {}
      };
    }

    @Override
    public List<Row> generateTestData(TestingSinkSettings settings, long seed) {
      Random random = new Random(seed);
      List<Row> rows = new ArrayList<>();
      for (int i = 0, n = 200 + random.nextInt(300); i < n; i++) {
        rows.add(new Row(random.nextInt(1000), "v" + random.nextInt(100)));
      }
      return rows;
    }

    @Override
    @SuppressWarnings({"unchecked", "rawtypes"})
    public TypeInformation<Row> getProducedType() {
      return (TypeInformation) InternalTypeInfo.of(FlinkSchemaUtil.convert(SCHEMA));
    }

    @Override
    public List<URL> getConnectorJarPaths() {
      return List.of();
    }

    @Override
    public void close() {}
  }
}
