package io.skade.source;

import static org.assertj.core.api.Assertions.assertThat;

import io.skade.catalog.CommitEvent;
import io.skade.testing.ChangeLines;
import io.skade.testing.IdRows;
import io.skade.testing.TestCatalog;
import io.skade.write.TableWriter;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.CompletableFuture;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.streaming.api.functions.KeyedProcessFunction;
import org.apache.flink.util.CloseableIterator;
import org.apache.flink.util.Collector;
import org.apache.iceberg.PartitionSpec;
import org.apache.iceberg.Schema;
import org.apache.iceberg.Table;
import org.apache.iceberg.catalog.TableIdentifier;
import org.apache.iceberg.data.Record;
import org.apache.iceberg.util.BucketUtil;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * Watermarks on commit time ({@link SkadeSourceBuilder#commitTimeWatermarks}) at parallelism 2:
 * downstream of both readers, no change arrives at or behind the watermark, while commits land
 * during the job (a backlog first, then live), some of them only in one bucket so that one reader
 * is given no split for a while; and the watermark passes every commit of the table once the
 * catalog's log moves on past it, by a commit of another table.
 */
class SkadeSourceCommitTimeWatermarkTest {
  private static final Schema SCHEMA = IdRows.keyed("v");

  @RegisterExtension final TestCatalog catalog = new TestCatalog();

  @Test
  @Timeout(180)
  void noChangeArrivesBehindTheWatermarkAndTheWatermarkFollowsTheLog() throws Exception {
    Table table =
        catalog
            .get()
            .createTable(
                TableIdentifier.of("db", "events"),
                SCHEMA,
                PartitionSpec.builderFor(SCHEMA).bucket("id", 4).build());
    Table other = catalog.get().createTable(TableIdentifier.of("db", "other"), SCHEMA);
    TableWriter writer = new TableWriter(table);
    Random random = new Random(11);
    for (int commit = 0; commit < 10; commit++) { // the backlog the job starts on
      writer.upsert(rows(random, commit, false));
    }

    StreamExecutionEnvironment env = StreamExecutionEnvironment.getExecutionEnvironment();
    env.setParallelism(2);
    env.getConfig().setAutoWatermarkInterval(20);
    SkadeSource<String> source =
        SkadeSource.builder()
            .catalogProperties(catalog.properties())
            .table("db.events")
            .startupMode(StartupMode.EARLIEST)
            .pollInterval(Duration.ofMillis(50))
            .commitTimeWatermarks(Duration.ZERO)
            .deserializer(new ChangeLines.Deserializer())
            .build();
    List<String> late = new ArrayList<>();
    Set<Long> fired = new TreeSet<>();
    try (CloseableIterator<String> lines =
        env.fromSource(source, source.commitTimeWatermarks(), "events")
            .keyBy(change -> 0)
            .process(new LateOrFired())
            .executeAndCollect()) {
      CompletableFuture<Void> live =
          CompletableFuture.runAsync(
              () -> {
                for (int commit = 10; commit < 40; commit++) {
                  // commits 20..29 touch one bucket only: the other reader idles meanwhile
                  writer.upsert(rows(random, commit, commit >= 20 && commit < 30));
                }
              });
      live.join();
      Set<Long> stamps = new TreeSet<>();
      String key = catalog.get().commitTableKey(TableIdentifier.of("db", "events"));
      for (CommitEvent event : catalog.get().commitsSince(0)) {
        if (event.tableKey().equals(key) && !event.addedSnapshotIds().isEmpty()) {
          stamps.add(event.tsMicros() / 1000);
        }
      }
      long last = stamps.stream().mapToLong(Long::longValue).max().orElseThrow();
      while (System.currentTimeMillis() <= last) {
        Thread.onSpinWait();
      }
      new TableWriter(other).append(List.of(IdRows.row(SCHEMA, 1, "moves-the-log-on")));
      while (!fired.containsAll(stamps)) {
        String line = lines.next();
        if (line.startsWith("LATE")) {
          late.add(line);
        } else if (line.startsWith("FIRED")) {
          fired.add(Long.parseLong(line.substring("FIRED ".length())));
        }
      }
    }
    assertThat(late).as("changes at or behind the watermark when they arrived").isEmpty();
  }

  /** Rows of {@code commit}: a spread of keys, or keys of one bucket only. */
  private static List<Record> rows(Random random, int commit, boolean oneBucket) {
    List<Record> rows = new ArrayList<>();
    for (long id = 0; id < 64; id += 1 + random.nextInt(4)) {
      if (!oneBucket || (BucketUtil.hash(id) & Integer.MAX_VALUE) % 4 == 0) {
        rows.add(IdRows.row(SCHEMA, id, "c" + commit));
      }
    }
    return rows;
  }

  /**
   * Each change: {@code LATE} when its timestamp is not after the watermark (the minimum over both
   * readers); a timer at its timestamp reports {@code FIRED} once the watermark passed it.
   */
  private static final class LateOrFired extends KeyedProcessFunction<Integer, String, String> {
    @Override
    public void processElement(String change, Context context, Collector<String> out) {
      long watermark = context.timerService().currentWatermark();
      if (context.timestamp() <= watermark) {
        out.collect("LATE " + change + " at " + context.timestamp() + " <= " + watermark);
      }
      context.timerService().registerEventTimeTimer(context.timestamp());
    }

    @Override
    public void onTimer(long timestamp, OnTimerContext context, Collector<String> out) {
      out.collect("FIRED " + timestamp);
    }
  }
}
