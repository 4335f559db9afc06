package io.skade.lineage;

import io.skade.catalog.CatalogService;
import io.skade.catalog.SkadeCatalog;
import io.skade.catalog.SkadeRuntime;
import java.net.URI;
import java.nio.file.Path;
import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.CopyOnWriteArrayList;
import org.apache.iceberg.Table;
import org.apache.iceberg.catalog.TableIdentifier;

/**
 * Lineage of an owner skade catalog store, started with it when its properties ask for it ({@link
 * #SINK}) and stopped before it closes: every commit is described ({@link CommitLineage}) and
 * delivered best effort ({@link BestEffortLineage}) to the configured sink. It runs once per store,
 * however many catalogs of the JVM share it ({@link #settings}).
 */
public final class CatalogLineage implements CatalogService {
  /** Where lineage goes: {@code none} (default), {@code table} or {@code openlineage}. */
  public static final String SINK = "lineage.sink";

  /** The values {@link #SINK} takes. */
  public static final List<String> SINKS = List.of("none", "table", "openlineage");

  /**
   * The OpenLineage destination: an {@code http(s)://} collector URL, {@code file:<path>} for JSON
   * lines in a file, or {@code console}.
   */
  public static final String OPENLINEAGE_URL = "lineage.openlineage.url";

  /** The actor of commits whose writer names none (a Flink job names itself). */
  public static final String ACTOR = "lineage.actor";

  /** The default of {@link #ACTOR}. */
  public static final String DEFAULT_ACTOR = "skade";

  private static final Duration HTTP_TIMEOUT = Duration.ofSeconds(5);

  /**
   * The lineage running in a {@link SkadeRuntime}, for job-run events: an entry per open store with
   * lineage, removed when the store closes (the runtime's open stores close with it).
   */
  private static final class Registry {
    final List<Running> running = new CopyOnWriteArrayList<>();
  }

  private static Registry registry() {
    return SkadeRuntime.get().component(Registry.class, Registry::new);
  }

  /** One store's running lineage, on the store's own catalog (open until the store closes). */
  public record Running(SkadeCatalog catalog, BestEffortLineage out, CommitLineage commits) {
    /** The {@code commit_seq} of the last commit described (or skipped). */
    public long cursor() {
      return commits.cursor();
    }

    /**
     * Waits, at most {@code timeout}, until every commit made so far is described and handed to the
     * sink; returns whether that happened in time.
     */
    public boolean awaitCaughtUp(Duration timeout) throws InterruptedException {
      long deadline = System.nanoTime() + timeout.toNanos();
      long target = catalog.commitSeq();
      while (cursor() < target) {
        if (System.nanoTime() > deadline) {
          return false;
        }
        Thread.sleep(5);
      }
      return out.awaitDelivered(Duration.ofNanos(Math.max(0, deadline - System.nanoTime())));
    }

    /**
     * {@code dataset} as this lineage names it: one in this catalog's warehouse becomes the table
     * with its location and columns (another process named it by namespace and name only); any
     * other is returned as it is.
     */
    public LineageDataset resolve(LineageDataset dataset) {
      return dataset.namespace().equals(catalog.warehouse())
          ? CommitLineage.table(catalog, TableIdentifier.parse(dataset.name()))
          : dataset;
    }

    /**
     * The running lineage of {@code catalog}'s store, if it has one: the lineage of every catalog
     * sharing that store (it runs once per store, on the store's own catalog).
     */
    public static Optional<Running> of(SkadeCatalog catalog) {
      return registry().running.stream()
          .filter(running -> running.catalog().sharesStoreWith(catalog))
          .findFirst();
    }
  }

  /** The lineage of the open owner catalogs of this JVM. */
  public static List<Running> running() {
    return List.copyOf(registry().running);
  }

  @Override
  public AutoCloseable start(SkadeCatalog catalog, Map<String, String> properties) {
    String kind = properties.getOrDefault(SINK, "none");
    String actor = properties.getOrDefault(ACTOR, DEFAULT_ACTOR);
    LineageSink sink;
    long after = -1;
    Set<TableIdentifier> unrecorded = Set.of();
    switch (kind) {
      case "none" -> {
        return null;
      }
      case "table" -> {
        Table table = WarehouseLineageSink.open(catalog);
        sink = new WarehouseLineageSink(table);
        after = WarehouseLineageSink.recorded(table);
        unrecorded = Set.of(WarehouseLineageSink.TABLE);
      }
      case "openlineage" -> sink = openLineage(catalog.name(), properties.get(OPENLINEAGE_URL));
      default ->
          throw new IllegalArgumentException(
              "skade catalog '"
                  + catalog.name()
                  + "': property '"
                  + SINK
                  + "' is '"
                  + kind
                  + "'; "
                  + acceptedSinks());
    }
    BestEffortLineage out = new BestEffortLineage(sink);
    CommitLineage commits = new CommitLineage(catalog, out, actor, after, unrecorded);
    Running running = new Running(catalog, out, commits);
    Registry registry = registry(); // the one it leaves, whichever is current when it stops
    registry.running.add(running);
    return () -> {
      registry.running.remove(running);
      commits.close();
      out.close();
    };
  }

  /**
   * Lineage runs once per store, so the catalogs sharing one must agree on it: its sink, and when
   * it is on, the actor and the OpenLineage URL.
   */
  @Override
  public Map<String, String> settings(Map<String, String> properties) {
    String kind = properties.getOrDefault(SINK, "none");
    if (kind.equals("none")) {
      return Map.of(SINK, kind);
    }
    Map<String, String> settings = new HashMap<>();
    settings.put(SINK, kind);
    settings.put(ACTOR, properties.getOrDefault(ACTOR, DEFAULT_ACTOR));
    if (kind.equals("openlineage")) {
      settings.put(OPENLINEAGE_URL, String.valueOf(properties.get(OPENLINEAGE_URL)));
    }
    return settings;
  }

  /** The values {@link #SINK} takes, as an error message lists them. */
  public static String acceptedSinks() {
    List<String> quoted = SINKS.stream().map(sink -> "'" + sink + "'").toList();
    return "accepted values are "
        + String.join(", ", quoted.subList(0, quoted.size() - 1))
        + " and "
        + quoted.get(quoted.size() - 1);
  }

  private static LineageSink openLineage(String catalog, String url) {
    if (url == null || url.isBlank()) {
      throw new IllegalArgumentException(
          "skade catalog '"
              + catalog
              + "': '"
              + SINK
              + "' = 'openlineage' needs '"
              + OPENLINEAGE_URL
              + "': a collector's http(s):// URL,"
              + " file:<path> or console");
    }
    if (url.equals("console")) {
      return OpenLineageSink.console(OpenLineageSink.DEFAULT_NAMESPACE);
    }
    if (url.startsWith("file:")) {
      return OpenLineageSink.file(
          Path.of(url.substring("file:".length())), OpenLineageSink.DEFAULT_NAMESPACE);
    }
    if (url.startsWith("http://") || url.startsWith("https://")) {
      return OpenLineageSink.http(URI.create(url), HTTP_TIMEOUT, OpenLineageSink.DEFAULT_NAMESPACE);
    }
    throw new IllegalArgumentException(
        "skade catalog '"
            + catalog
            + "': '"
            + OPENLINEAGE_URL
            + "' is '"
            + url
            + "'; give a collector's http(s):// URL, file:<path> or console");
  }
}
