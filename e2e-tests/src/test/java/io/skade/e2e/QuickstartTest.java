package io.skade.e2e;

import static org.assertj.core.api.Assertions.assertThat;

import io.skade.examples.Quickstart;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The main job (the README's quick tour, docs/quickstart.md step by step), run end to end on a
 * fresh warehouse and then again on the same one, and on a warehouse whose path holds characters
 * that need quoting in a URI; and the lines those pages show are the lines it prints.
 */
class QuickstartTest {
  private static final Pattern LIVE =
      Pattern.compile("^  commit_seq (\\d+) .*durable → received", Pattern.MULTILINE);

  /** The primary-key table's window: upserts as -U/+U pairs, a key delete as -D, full rows. */
  private static final String CHANGELOG =
      String.join(
          "\n",
          "  +I INSERT        id=1 name=Ada city=Oslo",
          "  +I INSERT        id=2 name=Bo city=Bergen",
          "  +I INSERT        id=3 name=Cy city=Tromsø",
          "  -U UPDATE_BEFORE id=2 name=Bo city=Bergen",
          "  +U UPDATE_AFTER  id=2 name=Bo city=Oslo",
          "  -D DELETE        id=3 name=Cy city=Tromsø",
          "  +I INSERT        id=4 name=Di city=Bodø");

  private static final String REPLAY = "commit log replays 11 commits (1..11, gapless)";

  private static final String ORDERS = "shop.orders holds 200 rows in 10 snapshots";

  private static final String TAIL =
      String.join(
          "\n",
          "a Flink job tails shop.customers while a writer upserts and deletes:",
          "  job: -U id=1 name=Ada city=Oslo",
          "  job: +U id=1 name=Ada city=Bergen",
          "  job: +I id=5 name=Eve city=Oslo",
          "  job: -D id=4 name=Di city=Bodø",
          "  job: -D id=5 name=Eve city=Oslo");

  private static final String SQL =
      String.join(
          "\n",
          "  select: -U[1, kettle, 25.00]",
          "  select: +U[1, kettle, 22.50]",
          "  select: +I[4, tray, 12.00]",
          "  select: -U[2, teapot, 40.00]",
          "  select: +U[2, teapot, 80.00]",
          "  select: -D[3, mug, 8.50]");

  /** The lookup join sees the table after those statements: 3 deleted, 5 never written. */
  private static final String LOOKUP_JOIN =
      String.join(
          "\n",
          "  join: +I[1, kettle, 22.50]",
          "  join: +I[2, teapot, 80.00]",
          "  join: +I[3, null, null]",
          "  join: +I[4, tray, 12.00]",
          "  join: +I[5, null, null]");

  /** Lineage lines: a commit's, with its snapshot id, and a job run's. */
  private static final Pattern LINEAGE_COMMIT =
      Pattern.compile("^  commit_seq (\\d+) +(\\w+) +(\\S+)@\\d+ by (.+)$", Pattern.MULTILINE);

  @TempDir Path root;

  @Test
  void twoWritersAppendAndTheFeedPrintsEveryCommitLiveInOrder() throws Exception {
    Path warehouse = root.resolve("warehouse");
    assertFirstRun(runQuickstart(warehouse));

    // Reopening the same warehouse continues the log where it stopped: after the 11 commits
    // of shop.orders, the 8 of shop.customers (create, 3 upserts, 1 delete, then the tail's 2
    // upserts and 1 delete) and the 6 of SQL (create, its key as sort order, overwrite,
    // insert, update, delete).
    String second = runQuickstart(warehouse);
    assertThat(second).contains("catalog open at").contains("commit_seq 25\n");
    assertThat(liveSeqs(second)).isEqualTo("26,27,28,29,30,31,32,33,34,35");
    assertThat(second).contains("shop.orders holds 400 rows in 20 snapshots");
    assertThat(second).contains(TAIL).contains(SQL).contains(LOOKUP_JOIN);
  }

  /**
   * Every step on a warehouse whose path holds a space, '%', '#', '+' and a non-ASCII letter: the
   * catalog, the Java writers, the changelog, the source, SQL (catalog, source, sink, lookup) and
   * lineage (OpenLineage's file transport) all reach the same directory.
   */
  @Test
  void theQuickstartRunsOnAWarehouseWhosePathHasSpacesPercentHashPlusAndNonAscii()
      throws Exception {
    Path warehouse = root.resolve("a b%c#d+é").resolve("warehouse");
    String output = runQuickstart(warehouse);
    assertFirstRun(output);
    assertThat(output).contains("catalog open at " + warehouse.resolve("_catalog"));
    assertThat(warehouse.resolve("shop").resolve("orders").resolve("data")).isDirectory();
    assertThat(warehouse.resolve("openlineage.jsonl")).isNotEmptyFile();
  }

  /**
   * The pages show what the main job prints: docs/quickstart.md every line asserted above, the
   * README's quick tour the end of the window and the job's tail.
   */
  @Test
  void theReadmeAndTheQuickstartPageShowWhatTheMainJobPrints() throws Exception {
    String page = Files.readString(Path.of("..", "docs", "quickstart.md"));
    assertThat(page)
        .contains(REPLAY)
        .contains(ORDERS)
        .contains(CHANGELOG)
        .contains(TAIL)
        .contains(SQL)
        .contains(LOOKUP_JOIN)
        .contains("  +I[customer-0, 29, 454.0]")
        .contains("  job START    insert-into_demo.shop.products reads [");

    String readme = Files.readString(Path.of("..", "README.md"));
    String windowEnd = CHANGELOG.substring(CHANGELOG.indexOf("  -U UPDATE_BEFORE"));
    assertThat(readme).contains(REPLAY).contains(ORDERS).contains(windowEnd + "\n" + TAIL);
  }

  /** What the first run on a new warehouse prints. */
  private static void assertFirstRun(String first) {
    // 1 create + 2 writers x 5 appends, each printed live once, in commit_seq order.
    assertThat(liveSeqs(first)).isEqualTo("1,2,3,4,5,6,7,8,9,10,11");
    assertThat(first).contains(REPLAY).contains(ORDERS);

    // The primary-key table's window: upserts as -U/+U pairs, a key delete as -D, full rows.
    assertThat(first).contains(CHANGELOG);

    // A Flink job tails the same table live while a writer upserts and deletes.
    assertThat(first).contains(TAIL);

    // Flink SQL on the same warehouse: a streaming SELECT sees what INSERT, UPDATE and DELETE
    // statements do, and a batch query reads what the Java writers wrote.
    assertThat(first).contains(SQL).contains(LOOKUP_JOIN).contains("  +I[customer-0, 29, 454.0]");

    // The lineage of the run: every commit that wrote data, in commit_seq order, by its writer
    // (a Java writer's name, or a SQL job's name and id), and the SQL jobs' runs.
    List<String> lineage = lineageCommits(first);
    assertThat(lineage).hasSize(10 + 7 + 4);
    assertThat(lineage.get(0)).isEqualTo("2 APPEND shop.orders quickstart-writer-?");
    assertThat(lineage)
        .filteredOn(line -> line.contains("shop.customers"))
        .containsExactly(
            "13 OVERWRITE shop.customers quickstart-customers",
            "14 OVERWRITE shop.customers quickstart-customers",
            "15 DELETE shop.customers quickstart-customers",
            "16 OVERWRITE shop.customers quickstart-customers",
            "17 OVERWRITE shop.customers quickstart-customers",
            "18 OVERWRITE shop.customers quickstart-customers",
            "19 DELETE shop.customers quickstart-customers");
    assertThat(lineage.get(lineage.size() - 2))
        .matches(
            "24 OVERWRITE shop.products insert-into_demo.shop.products \\(\\w+\\)"
                + " from shop.products");
    assertThat(first)
        .contains(
            "  job START    insert-into_demo.shop.products reads []" + " writes [shop.products]");
  }

  private static String runQuickstart(Path warehouse) throws Exception {
    ByteArrayOutputStream bytes = new ByteArrayOutputStream();
    try (PrintStream out = new PrintStream(bytes, true, StandardCharsets.UTF_8)) {
      Quickstart.run(warehouse, out);
    }
    return bytes.toString(StandardCharsets.UTF_8);
  }

  /** The lineage lines of commits: seq, operation, table and writer (writers' digits as ?). */
  private static List<String> lineageCommits(String output) {
    List<String> commits = new ArrayList<>();
    Matcher m = LINEAGE_COMMIT.matcher(output.substring(output.indexOf("Lineage of this run")));
    while (m.find()) {
      commits.add(
          m.group(1)
              + " "
              + m.group(2)
              + " "
              + m.group(3)
              + " "
              + m.group(4).replaceAll("writer-\\d", "writer-?"));
    }
    return commits;
  }

  private static String liveSeqs(String output) {
    StringBuilder seqs = new StringBuilder();
    Matcher m = LIVE.matcher(output);
    while (m.find()) {
      seqs.append(seqs.isEmpty() ? "" : ",").append(m.group(1));
    }
    return seqs.toString();
  }
}
