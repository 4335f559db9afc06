package io.skade.source;

import io.skade.catalog.SkadeCatalog;
import io.skade.testing.IdRows;
import io.skade.write.TableWriter;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Map;
import org.apache.iceberg.Schema;
import org.apache.iceberg.catalog.Namespace;
import org.apache.iceberg.catalog.TableIdentifier;

/**
 * Child process of {@link SkadeSourceFollowerTest}: owns the catalog of warehouse {@code args[0]}
 * and appends {@code args[1]} one-row commits ({@code id} 0, 1, ...) to the log table {@code
 * db.events}, {@code args[2]} ms apart.
 *
 * <p>Protocol, one line each: on stdout {@code READY} once the table exists; then {@code ACK <id>}
 * after each append returned, the first half of the rows before and the second half after a {@code
 * GO} line on stdin; then {@code DONE}. It keeps owning the catalog until its stdin is closed, then
 * closes it and exits 0.
 */
public final class OwnerProcess {
  static final TableIdentifier TABLE = TableIdentifier.of("db", "events");
  static final Schema SCHEMA = IdRows.log("v");

  private OwnerProcess() {}

  public static void main(String[] args) throws Exception {
    int rows = Integer.parseInt(args[1]);
    long pauseMs = Long.parseLong(args[2]);
    BufferedReader stdin =
        new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
    try (SkadeCatalog catalog = new SkadeCatalog()) {
      catalog.initialize("owner", Map.of("warehouse", args[0]));
      catalog.createNamespace(Namespace.of("db"));
      TableWriter writer = new TableWriter(catalog.buildTable(TABLE, SCHEMA).create());
      say("READY");
      for (long id = 0; id < rows; id++) {
        if (id == rows / 2 && !"GO".equals(stdin.readLine())) {
          throw new IllegalStateException("expected GO on stdin before row " + id);
        }
        writer.append(List.of(IdRows.row(SCHEMA, id, "v" + id)));
        say("ACK " + id);
        Thread.sleep(pauseMs); // paces the commits, so the follower meets them one by one
      }
      say("DONE");
      while (stdin.readLine() != null) {
        // owns the catalog until the test closes our stdin
      }
    }
  }

  private static void say(String line) {
    System.out.println(line);
    System.out.flush();
  }
}
