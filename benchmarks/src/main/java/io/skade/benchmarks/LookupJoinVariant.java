package io.skade.benchmarks;

import java.util.Arrays;
import java.util.stream.Collectors;
import org.apache.flink.table.api.TableEnvironment;

/**
 * A pipeline of {@link LookupJoinBenchmark}: which libraries its JVM gets, and the table its join
 * reads, declared the way a user of that system would: (c) Flink alone, (a) skade, (b) Paimon.
 */
enum LookupJoinVariant {
  NO_JOIN("no-join", "(c) no join: Flink alone", Stack.FLINK),
  EMPTY_JOIN("empty-join", "(c) join to an empty table", Stack.FLINK),
  SKADE("skade", "(a) skade lookup join", Stack.SKADE),
  SKADE_MEMORY_ONLY("skade-memory-only", "(a) skade, disk cache off", Stack.SKADE),
  SKADE_CONNECTOR("skade-connector", "(a) skade, connector table", Stack.SKADE),
  PAIMON_DEFAULT("paimon-default", "(b) Paimon, table defaults", Stack.PAIMON),
  PAIMON_BUCKET1("paimon-bucket1", "(b) Paimon, 'bucket'='1'", Stack.PAIMON);

  /** The pipeline, into the measuring sink. */
  static final String JOIN_QUERY =
      "SELECT p.k, c.id, c.name, c.city, c.score"
          + " FROM probes AS p LEFT JOIN %s FOR SYSTEM_TIME AS OF p.proc_time AS c ON p.k = c.id";

  static final String NO_JOIN_QUERY = "SELECT p.k FROM probes AS p";

  /** Which libraries a forked JVM gets. */
  enum Stack {
    FLINK,
    SKADE,
    PAIMON
  }

  final String id;
  final String label;
  final Stack stack;

  LookupJoinVariant(String id, String label, Stack stack) {
    this.id = id;
    this.label = label;
    this.stack = stack;
  }

  boolean isPaimon() {
    return stack == Stack.PAIMON;
  }

  boolean isSkade() {
    return stack == Stack.SKADE;
  }

  /** Whether its join finds rows (a dimension table of the benchmark's rows). */
  boolean joinsData() {
    return stack != Stack.FLINK;
  }

  static LookupJoinVariant of(String id) {
    for (LookupJoinVariant v : values()) {
      if (v.id.equals(id.trim())) {
        return v;
      }
    }
    throw new IllegalArgumentException(
        "unknown variant '"
            + id
            + "'; known: "
            + Arrays.stream(values()).map(v -> v.id).collect(Collectors.joining(", ")));
  }

  /**
   * Declares in {@code env} the table this variant joins (through its system's catalog, or as a
   * table of its connector) and returns the variant's query. Runs in the variant's own JVM, whose
   * classpath holds only its stack. {@code skadeCatalog} is the options that reach skade's catalog
   * ({@code 'warehouse' = '...'} and, on object storage, {@code 'catalog.path'} and the file IO),
   * {@code paimonCatalog} the DDL of Paimon's.
   */
  String query(TableEnvironment env, String skadeCatalog, String paimonCatalog) {
    return switch (this) {
      case NO_JOIN -> NO_JOIN_QUERY;
      case EMPTY_JOIN -> {
        env.executeSql(
            "CREATE TEMPORARY TABLE dim (id BIGINT, name STRING, city STRING,"
                + " score INT, PRIMARY KEY (id) NOT ENFORCED) WITH ('connector' = 'empty-lookup')");
        yield String.format(JOIN_QUERY, "dim");
      }
      case SKADE, SKADE_MEMORY_ONLY -> {
        // Through skade's catalog, as Paimon's variants go through Paimon's.
        env.executeSql("CREATE CATALOG skade_lake WITH ('type' = 'skade', " + skadeCatalog + ")");
        String options =
            System.getProperty("skade.bench.skadeOptions", "").replaceFirst("^\\s*,", "").trim();
        if (this == SKADE_MEMORY_ONLY) {
          String disk = "'lookup.disk-cache.enabled' = 'false'";
          options = options.isEmpty() ? disk : options + ", " + disk;
        }
        yield String.format(
            JOIN_QUERY,
            "skade_lake."
                + SkadeDim.NAMESPACE
                + "."
                + SkadeDim.TABLE
                + (options.isEmpty() ? "" : " /*+ OPTIONS(" + options + ") */"));
      }
      case SKADE_CONNECTOR -> {
        env.executeSql(
            "CREATE TABLE dim (id BIGINT, name STRING, city STRING, score INT,"
                + " PRIMARY KEY (id) NOT ENFORCED) WITH ('connector' = 'skade', "
                + skadeCatalog
                + ", 'database' = '"
                + SkadeDim.NAMESPACE
                + "', 'table' = '"
                + SkadeDim.TABLE
                + "'"
                + System.getProperty("skade.bench.skadeOptions", "")
                + ")");
        yield String.format(JOIN_QUERY, "dim");
      }
      case PAIMON_DEFAULT, PAIMON_BUCKET1 -> {
        env.executeSql(paimonCatalog);
        yield String.format(
            JOIN_QUERY,
            PaimonDim.CATALOG
                + ".bench."
                + (this == PAIMON_DEFAULT ? PaimonDim.DEFAULT_TABLE : PaimonDim.BUCKET1_TABLE));
      }
    };
  }
}
