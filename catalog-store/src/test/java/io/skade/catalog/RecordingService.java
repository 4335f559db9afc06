package io.skade.catalog;

import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * A {@link CatalogService} for the sharing tests, started only for stores opened with {@link #KEY}:
 * it follows the store's commit feed on its own thread and, for each commit that added a snapshot,
 * loads the table through the catalog it was started with, as skade's lineage does.
 */
public final class RecordingService implements CatalogService {
  /** The property that starts the service; its value names the recording. */
  static final String KEY = "test.recording";

  static final Map<String, Recording> RECORDINGS = new ConcurrentHashMap<>();

  /** What one run of the service saw. */
  static final class Recording implements AutoCloseable {
    final SkadeCatalog catalog;
    final List<Long> seqs = new CopyOnWriteArrayList<>();
    final List<Long> loadedSnapshots = new CopyOnWriteArrayList<>();
    final List<Throwable> failures = new CopyOnWriteArrayList<>();
    private final CommitSubscription subscription;
    private final Thread thread;
    volatile boolean closed;
    final AtomicInteger closes = new AtomicInteger();

    private Recording(SkadeCatalog catalog) {
      this.catalog = catalog;
      this.subscription = catalog.subscribeCommits();
      this.thread = new Thread(this::run, "recording-service");
      thread.setDaemon(true);
      thread.start();
    }

    private void run() {
      while (!closed) {
        try {
          CommitEvent event = subscription.poll(Duration.ofMillis(50));
          if (event == null) {
            continue;
          }
          seqs.add(event.commitSeq());
          if (event.snapshotId().isPresent()) {
            long id = event.snapshotId().getAsLong();
            if (catalog.loadTable(catalog.commitTableIdentifier(event.tableKey())).snapshot(id)
                != null) {
              loadedSnapshots.add(id);
            }
          }
        } catch (InterruptedException e) {
          return;
        } catch (RuntimeException e) {
          if (!closed) {
            failures.add(e);
          }
          return;
        }
      }
    }

    @Override
    public void close() throws InterruptedException {
      closes.incrementAndGet();
      closed = true;
      subscription.close();
      thread.join();
    }
  }

  @Override
  public AutoCloseable start(SkadeCatalog catalog, Map<String, String> properties) {
    String name = properties.get(KEY);
    if (name == null) {
      return null;
    }
    Recording recording = new Recording(catalog);
    RECORDINGS.put(name, recording);
    return recording;
  }

  @Override
  public Map<String, String> settings(Map<String, String> properties) {
    String name = properties.get(KEY);
    return name == null ? Map.of() : Map.of(KEY, name);
  }
}
