package io.skade.source;

import static org.assertj.core.api.Assertions.assertThat;

import io.skade.testing.ChangeLines;
import io.skade.testing.IdRows;
import io.skade.testing.TestCatalog;
import io.skade.write.TableWriter;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import org.apache.flink.api.common.eventtime.WatermarkStrategy;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.util.CloseableIterator;
import org.apache.iceberg.PartitionSpec;
import org.apache.iceberg.Schema;
import org.apache.iceberg.Table;
import org.apache.iceberg.catalog.TableIdentifier;
import org.apache.iceberg.data.Record;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * Flink's watermark alignment on a skade source: two slow readers of a bucketed table whose commits
 * lie apart in time, with a drift of 1 ms allowed, so Flink holds back the reader whose commit
 * times run ahead; the changes, applied strictly, still equal the table, so holding back kept each
 * key's changes in commit order. (Pausing one split is tested by {@code ChangelogSplitReaderTest}:
 * a skade reader has one split open at a time, which Flink aligns by pausing the reader.)
 */
class SkadeSourceWatermarkAlignmentTest {
  private static final Schema SCHEMA = IdRows.keyed("v");

  @RegisterExtension final TestCatalog catalog = new TestCatalog();

  @Test
  @Timeout(120)
  void alignedReadersKeepEachKeysOrder() throws Exception {
    Table table =
        catalog
            .get()
            .createTable(
                TableIdentifier.of("db", "aligned"),
                SCHEMA,
                PartitionSpec.builderFor(SCHEMA).bucket("id", 8).build());
    TableWriter writer = new TableWriter(table);
    Random random = new Random(5);
    for (int commit = 0; commit < 12; commit++) {
      List<Record> rows = new ArrayList<>();
      for (long id = commit % 3; id < 48; id += 1 + random.nextInt(3)) {
        rows.add(IdRows.row(SCHEMA, id, "c" + commit));
      }
      writer.upsert(rows);
      Thread.sleep(30); // commit times apart, so splits' watermarks drift
    }

    StreamExecutionEnvironment env = StreamExecutionEnvironment.getExecutionEnvironment();
    env.setParallelism(2);
    env.getConfig().setAutoWatermarkInterval(10);
    SkadeSource<String> source =
        SkadeSource.builder()
            .catalogProperties(catalog.properties())
            .table("db.aligned")
            .startupMode(StartupMode.EARLIEST)
            .bounded()
            .batchRows(4)
            .deserializer(new ChangeLines.Deserializer())
            .build();
    Map<Long, String> rows = new HashMap<>();
    List<String> failures = new ArrayList<>();
    try (CloseableIterator<String> changes =
        env.fromSource(
                source,
                WatermarkStrategy.<String>forMonotonousTimestamps()
                    .withWatermarkAlignment("skade", Duration.ofMillis(1), Duration.ofMillis(10)),
                "aligned")
            .map(
                change -> {
                  Thread.sleep(5); // slow readers: alignment has time to hold back the one ahead
                  return change;
                })
            .executeAndCollect()) {
      changes.forEachRemaining(change -> ChangeLines.applyStrictly(change, rows, failures));
    }
    assertThat(failures).as("changes that met the wrong row").isEmpty();
    assertThat(rows).isEqualTo(ChangeLines.rows(table));
  }
}
