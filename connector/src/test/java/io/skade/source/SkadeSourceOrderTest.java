package io.skade.source;

import static org.assertj.core.api.Assertions.assertThat;

import io.skade.testing.ChangeLines;
import io.skade.testing.IdRows;
import io.skade.testing.TestCatalog;
import io.skade.write.TableWriter;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Random;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import org.apache.flink.api.common.eventtime.WatermarkStrategy;
import org.apache.flink.api.common.functions.RichMapFunction;
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
 * With four readers, a bucket-partitioned primary-key table under heavy upsert churn on a few keys:
 * each key's changes come from one reader, in commit order, so the changelog applied strictly to an
 * empty state equals the table; and the partitions are spread over readers.
 */
class SkadeSourceOrderTest {
  private static final Schema SCHEMA = IdRows.keyed("v");

  @RegisterExtension final TestCatalog catalog = new TestCatalog();

  @Test
  @Timeout(240)
  void eachKeysChangesComeFromOneReaderInCommitOrderAtParallelismFour() throws Exception {
    long seed = System.nanoTime();
    System.out.println("SkadeSourceOrderTest seed " + seed);
    Table table =
        catalog
            .get()
            .buildTable(TableIdentifier.of("db", "churn"), SCHEMA)
            .withPartitionSpec(PartitionSpec.builderFor(SCHEMA).bucket("id", 8).build())
            .create();
    TableWriter writer = new TableWriter(table);
    writer.upsert(List.of(row(0, "start")));
    StreamExecutionEnvironment env = StreamExecutionEnvironment.getExecutionEnvironment();
    env.setParallelism(4);
    SkadeSource<String> source =
        SkadeSource.builder()
            .catalogProperties(catalog.properties())
            .table("db.churn")
            .deserializer(new ChangeLines.Deserializer())
            .build();
    Map<Long, String> state = new HashMap<>();
    Map<Long, Set<Integer>> readersOfKey = new HashMap<>();
    Set<Integer> readers = new HashSet<>();
    try (CloseableIterator<String> lines =
        env.fromSource(source, WatermarkStrategy.noWatermarks(), "churn")
            .map(new TagWithSubtask())
            .executeAndCollect()) {
      Random random = new Random(seed);
      CompletableFuture<Void> churn =
          CompletableFuture.runAsync(
              () -> {
                for (int c = 0; c < 40; c++) {
                  List<Record> upserts = new ArrayList<>();
                  Set<Long> keys = new LinkedHashSet<>();
                  for (int i = 0; i < 6; i++) {
                    keys.add((long) random.nextInt(12));
                  }
                  keys.forEach(id -> upserts.add(row(id, "v" + random.nextInt(100))));
                  writer.upsert(upserts);
                  if (random.nextInt(4) == 0) {
                    writer.deleteKeys(List.of(row(random.nextInt(12), null)));
                  }
                }
              });
      Map<Long, String> expected = null;
      while (expected == null || !state.equals(expected)) {
        String[] parts = lines.next().split(" ", 4); // subtask kind id v
        int reader = Integer.parseInt(parts[0]);
        long id = Long.parseLong(parts[2]);
        String v = parts[3].equals("null") ? null : parts[3];
        readers.add(reader);
        readersOfKey.computeIfAbsent(id, k -> new HashSet<>()).add(reader);
        if (parts[1].startsWith("+")) {
          assertThat(state).as("%s meets no row of key %d", parts[1], id).doesNotContainKey(id);
          state.put(id, v);
        } else {
          assertThat(state.containsKey(id) && Objects.equals(state.get(id), v))
              .as("%s %d %s retracts the row there, %s", parts[1], id, v, state.get(id))
              .isTrue();
          state.remove(id);
        }
        if (expected == null && churn.isDone()) {
          churn.join();
          expected = ChangeLines.rows(table);
        }
      }
    }
    assertThat(readersOfKey.values()).allSatisfy(r -> assertThat(r).hasSize(1));
    assertThat(readers).as("partitions spread over readers").hasSizeGreaterThan(1);
  }

  /** Prefixes each change with the index of the reader that emitted it. */
  private static final class TagWithSubtask extends RichMapFunction<String, String> {
    @Override
    public String map(String line) {
      return getRuntimeContext().getTaskInfo().getIndexOfThisSubtask() + " " + line;
    }
  }

  private static Record row(long id, String v) {
    return IdRows.row(SCHEMA, id, v);
  }
}
