package io.skade.table;

import static org.assertj.core.api.Assertions.assertThat;

import io.skade.write.TableWriter;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.stream.Collectors;
import org.apache.flink.api.common.JobID;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.metrics.Gauge;
import org.apache.flink.table.api.TableEnvironment;
import org.apache.flink.table.api.TableResult;
import org.apache.flink.types.Row;
import org.apache.flink.util.CloseableIterator;
import org.apache.iceberg.Schema;
import org.apache.iceberg.Table;
import org.apache.iceberg.catalog.Namespace;
import org.apache.iceberg.catalog.TableIdentifier;
import org.apache.iceberg.data.Record;
import org.apache.iceberg.types.Types;
import org.junit.jupiter.api.Test;

/**
 * {@code LIMIT} pushed into the source at parallelism 2: a batch query returns the limit's rows,
 * each a row of the table (Iceberg's own read), and its readers read only the data files those rows
 * need ({@code dataFilesRead}, summed over the job's readers), where the query without a limit
 * reads every file; under a pushed filter too.
 */
class SqlLimitTest extends SqlTestBase {
  private static final int FILES = 10;
  private static final int ROWS_PER_FILE = 100;

  @Test
  void aLimitedBatchQueryReadsOnlyTheFilesItsRowsNeed() throws Exception {
    catalog.catalog().createNamespace(Namespace.of("default_database"));
    Table table =
        catalog
            .catalog()
            .createTable(
                TableIdentifier.of("default_database", "events"),
                new Schema(
                    Types.NestedField.optional(1, "id", Types.LongType.get()),
                    Types.NestedField.optional(2, "name", Types.StringType.get())));
    TableWriter writer = new TableWriter(table);
    for (int file = 0; file < FILES; file++) {
      List<Record> rows = new ArrayList<>();
      for (int n = 0; n < ROWS_PER_FILE; n++) {
        rows.add(record(table, (long) file * ROWS_PER_FILE + n, "r" + file));
      }
      writer.append(rows);
    }
    Set<String> tableRows =
        icebergRows("events").stream()
            .map(row -> row.getField("id") + "," + row.getField("name"))
            .collect(Collectors.toSet());
    assertThat(tableRows).hasSize(FILES * ROWS_PER_FILE);

    assertThat(twoReaders().explainSql("SELECT * FROM events LIMIT 5")).contains("limit=[5]");

    Read all = read("SELECT * FROM events");
    assertThat(all.rows()).hasSize(FILES * ROWS_PER_FILE);
    assertThat(all.dataFilesRead()).as("data files read without a limit").isEqualTo(FILES);

    Read limited = read("SELECT * FROM events LIMIT 5");
    assertThat(limited.rows()).hasSize(5).doesNotHaveDuplicates().isSubsetOf(tableRows);
    assertThat(limited.dataFilesRead())
        .as("data files read for 5 rows by 2 readers, 100 rows a file")
        .isBetween(1L, 2L);

    Read filtered = read("SELECT * FROM events WHERE name = 'r7' LIMIT 5");
    assertThat(filtered.rows())
        .hasSize(5)
        .doesNotHaveDuplicates()
        .isSubsetOf(tableRows)
        .allSatisfy(row -> assertThat(row).endsWith(",r7"));
  }

  /** The rows a query returned, as {@code id,name}, and the data files its readers read. */
  private record Read(List<String> rows, long dataFilesRead) {}

  /**
   * A batch environment at parallelism 2 with the table declared, whose jobs' gauges {@link
   * ReaderGauges} keeps.
   */
  private TableEnvironment twoReaders() {
    TableEnvironment env = batch(ReaderGauges.addTo(new Configuration()), 2);
    declare(env, "events", "id BIGINT, name STRING");
    return env;
  }

  private Read read(String query) throws Exception {
    TableResult result = twoReaders().executeSql(query);
    JobID job = result.getJobClient().orElseThrow().getJobID();
    List<String> rows = new ArrayList<>();
    try (CloseableIterator<Row> it = result.collect()) {
      it.forEachRemaining(row -> rows.add(row.getField(0) + "," + row.getField(1)));
    }
    result.getJobClient().orElseThrow().getJobExecutionResult().get();
    List<Gauge<?>> gauges = ReaderGauges.of(job, "dataFilesRead");
    assertThat(gauges).as("%s: the readers' dataFilesRead gauges", query).hasSize(2);
    long files = gauges.stream().mapToLong(gauge -> (Long) gauge.getValue()).sum();
    return new Read(rows, files);
  }
}
