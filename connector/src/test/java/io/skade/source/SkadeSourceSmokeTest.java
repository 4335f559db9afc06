package io.skade.source;

import static io.skade.testing.IdRows.row;
import static org.assertj.core.api.Assertions.assertThat;

import io.skade.testing.ChangeLines;
import io.skade.testing.IdRows;
import io.skade.testing.TestCatalog;
import io.skade.write.TableWriter;
import java.util.ArrayList;
import java.util.List;
import org.apache.flink.api.common.eventtime.WatermarkStrategy;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.table.data.RowData;
import org.apache.flink.util.CloseableIterator;
import org.apache.iceberg.Schema;
import org.apache.iceberg.Table;
import org.apache.iceberg.catalog.TableIdentifier;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

class SkadeSourceSmokeTest {
  private static final Schema SCHEMA = IdRows.SCHEMA;

  @RegisterExtension final TestCatalog catalog = new TestCatalog();

  @Test
  void aFullStartTailsTheTableAsCommitsHappen() throws Exception {
    Table table = catalog.get().createTable(TableIdentifier.of("db", "t"), SCHEMA);
    TableWriter writer = new TableWriter(table);
    writer.append(List.of(row(1, "a"), row(2, "b")));
    writer.upsert(List.of(row(2, "b2")));
    StreamExecutionEnvironment env = StreamExecutionEnvironment.getExecutionEnvironment();
    env.setParallelism(2);
    SkadeSource<RowData> source =
        SkadeSource.builder().catalogProperties(catalog.properties()).table("db.t").build();
    List<String> seen = new ArrayList<>();
    try (CloseableIterator<RowData> rows =
        env.fromSource(source, WatermarkStrategy.noWatermarks(), "skade").executeAndCollect()) {
      for (int i = 0; i < 2; i++) {
        seen.add(ChangeLines.text(rows.next()));
      }
      writer.upsert(List.of(row(1, "a2")));
      writer.deleteKeys(List.of(row(2, null)));
      for (int i = 0; i < 3; i++) {
        seen.add(ChangeLines.text(rows.next()));
      }
    }
    assertThat(seen.subList(0, 2)).containsExactlyInAnyOrder("+I 1 a", "+I 2 b2");
    assertThat(seen.subList(2, 5)).containsExactly("-U 1 a", "+U 1 a2", "-D 2 b2");
  }
}
