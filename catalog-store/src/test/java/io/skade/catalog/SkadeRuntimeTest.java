package io.skade.catalog;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Callable;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.iceberg.HasTableOperations;
import org.apache.iceberg.Table;
import org.apache.iceberg.TableMetadata;
import org.apache.iceberg.catalog.TableIdentifier;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The runtime that owns skade's process-wide state: its components are made once, close newest
 * first with it, and a reset starts from nothing; open stores close with it, once.
 */
class SkadeRuntimeTest {
  private static final TableIdentifier T = TableIdentifier.of(Catalogs.DB, "t");

  @TempDir Path warehouse;

  /** The order components closed in, by name. */
  private final List<String> closed = new CopyOnWriteArrayList<>();

  @BeforeEach
  @AfterEach
  void startFromNothing() {
    SkadeRuntime.reset();
  }

  /** A component that notes its close. */
  private class Noting implements AutoCloseable {
    final String name;

    Noting(String name) {
      this.name = name;
    }

    @Override
    public void close() {
      closed.add(name);
    }
  }

  private final class First extends Noting {
    First() {
      super("first");
    }
  }

  private final class Second extends Noting {
    Second() {
      super("second");
    }
  }

  /** Made while the runtime makes {@link Third}: created before it, so closed after it. */
  private final class Inner extends Noting {
    Inner() {
      super("inner");
    }
  }

  private final class Third extends Noting {
    Third() {
      super("third");
      SkadeRuntime.get().component(Inner.class, Inner::new);
    }
  }

  /** A component with an executor, as skade's prefetch and job-run reporting have. */
  private static final class Threads implements AutoCloseable {
    final ExecutorService executor = Executors.newSingleThreadExecutor();

    @Override
    public void close() {
      SkadeRuntime.shutDown(executor, "test threads");
    }
  }

  @Test
  void aComponentIsMadeOncePerRuntimeEvenWhenAskedForConcurrently() throws Exception {
    SkadeRuntime runtime = SkadeRuntime.get();
    assertThat(SkadeRuntime.get()).isSameAs(runtime);
    AtomicInteger made = new AtomicInteger();
    int threads = 8;
    CountDownLatch go = new CountDownLatch(1);
    ExecutorService pool = Executors.newFixedThreadPool(threads);
    List<Future<First>> asked = new ArrayList<>();
    for (int i = 0; i < threads; i++) {
      asked.add(
          pool.submit(
              (Callable<First>)
                  () -> {
                    go.await();
                    return SkadeRuntime.get()
                        .component(
                            First.class,
                            () -> {
                              made.incrementAndGet();
                              return new First();
                            });
                  }));
    }
    go.countDown();
    First first = asked.get(0).get(1, TimeUnit.MINUTES);
    for (Future<First> one : asked) {
      assertThat(one.get(1, TimeUnit.MINUTES)).isSameAs(first);
    }
    pool.shutdown();
    assertThat(made).hasValue(1);
    assertThat(runtime.component(First.class, First::new)).isSameAs(first);
    assertThat(runtime.componentTypes()).containsExactly(First.class);
  }

  @Test
  void closeClosesTheComponentsNewestFirstOnceAndShutsTheirExecutorsDown() throws Exception {
    SkadeRuntime runtime = SkadeRuntime.get();
    runtime.component(First.class, First::new);
    Threads threads = runtime.component(Threads.class, Threads::new);
    runtime.component(Second.class, Second::new);
    runtime.component(Third.class, Third::new);
    assertThat(runtime.componentTypes())
        .containsExactly(First.class, Threads.class, Second.class, Inner.class, Third.class);
    CountDownLatch running = new CountDownLatch(1);
    Future<?> blocked =
        threads.executor.submit(
            () -> {
              running.countDown();
              new CountDownLatch(1).await(); // until interrupted
              return null;
            });
    running.await();

    runtime.close();
    assertThat(closed).containsExactly("third", "inner", "second", "first");
    assertThat(threads.executor.isTerminated()).as("its thread interrupted and ended").isTrue();
    assertThat(blocked).isDone();
    assertThat(runtime.isClosed()).isTrue();
    assertThat(runtime.componentTypes()).isEmpty();
    assertThatThrownBy(() -> runtime.component(First.class, First::new))
        .isInstanceOf(IllegalStateException.class)
        .hasMessageContaining(First.class.getName())
        .hasMessageContaining("after it closed")
        .hasMessageContaining("SkadeRuntime.get()");

    runtime.close(); // a second close changes nothing
    assertThat(closed).hasSize(4);
    SkadeRuntime next = SkadeRuntime.get();
    assertThat(next).as("a new runtime, after the current one closed").isNotSameAs(runtime);
    assertThat(next.isClosed()).isFalse();
  }

  @Test
  void aComponentFailingToCloseLeavesTheOthersClosedAndIsReported() {
    SkadeRuntime runtime = SkadeRuntime.get();
    runtime.component(First.class, First::new);
    runtime.component(
        AutoCloseable.class,
        () ->
            () -> {
              throw new IllegalStateException("broken component");
            });
    runtime.component(Second.class, Second::new);

    assertThatThrownBy(runtime::close)
        .isInstanceOf(IllegalStateException.class)
        .hasMessageContaining("closing the skade runtime")
        .satisfies(
            e ->
                assertThat(e.getSuppressed())
                    .extracting(Throwable::getMessage)
                    .containsExactly("broken component"));
    assertThat(closed).containsExactly("second", "first");
  }

  @Test
  void aResetStartsFromNothing() throws Exception {
    SkadeRuntime before = SkadeRuntime.get();
    First first = before.component(First.class, First::new);
    String location;
    TableMetadata remembered;
    try (SkadeCatalog catalog = Catalogs.open(warehouse)) {
      Table table = Catalogs.createTable(catalog, "t");
      Catalogs.append(table, "a");
      location = ((HasTableOperations) table).operations().current().metadataFileLocation();
      remembered = CommittedMetadata.read(catalog.io(), location);
      assertThat(CommittedMetadata.read(catalog.io(), location)).isSameAs(remembered);
    }

    SkadeRuntime fresh = SkadeRuntime.reset();
    assertThat(before.isClosed()).isTrue();
    assertThat(closed).containsExactly("first");
    assertThat(SkadeRuntime.get()).isSameAs(fresh);
    assertThat(fresh.componentTypes()).isEmpty();
    assertThat(fresh.component(First.class, First::new)).isNotSameAs(first);
    try (SkadeCatalog catalog = Catalogs.open(warehouse)) {
      TableMetadata again = CommittedMetadata.read(catalog.io(), location);
      assertThat(again)
          .as("parsed again: the fresh runtime remembers nothing")
          .isNotSameAs(remembered);
      assertThat(again.currentSnapshot().snapshotId())
          .isEqualTo(remembered.currentSnapshot().snapshotId());
    }
  }

  @Test
  void aStoreHeldByACatalogClosesOnceWithTheRuntimeAndNotAgainWithTheCatalog() throws Exception {
    Map<String, String> withService =
        Map.of("warehouse", warehouse.toString(), RecordingService.KEY, "runtime");
    SkadeCatalog held = new SkadeCatalog();
    held.initialize("held", withService);
    SharedCatalogs.Handle handle = SharedCatalogs.acquire(withService);
    RecordingService.Recording recording = RecordingService.RECORDINGS.get("runtime");
    Catalogs.createTable(held, "t");
    Map<String, String> plain = Map.of("warehouse", warehouse.toString());
    assertThat(SharedCatalogs.holds(plain)).isEqualTo(2);

    SkadeRuntime.reset();
    assertThat(recording.closes).as("the store's services stopped with it").hasValue(1);
    assertThat(SharedCatalogs.holds(plain)).as("the fresh runtime holds no store").isZero();
    assertThatThrownBy(() -> held.loadTable(T))
        .isInstanceOf(IllegalStateException.class)
        .hasMessageContaining("is closed");

    // The directory opens again (RocksDB let go of it), in the fresh runtime.
    try (SkadeCatalog reopened = Catalogs.open(warehouse);
        CommitSubscription feed = reopened.subscribeCommits()) {
      assertThat(reopened.sharesStoreWith(held)).isFalse();
      held.close();
      handle.close();
      held.close();
      assertThat(recording.closes).as("not closed again by its catalogs").hasValue(1);
      assertThat(SharedCatalogs.holds(plain))
          .as("the old catalogs' closes leave the new store's holds alone")
          .isEqualTo(1);
      Catalogs.append(reopened.loadTable(T), "after");
      long seq = reopened.commitSeq();
      List<Long> heard = new ArrayList<>();
      await()
          .atMost(Duration.ofSeconds(30))
          .pollInSameThread()
          .until(
              () -> {
                CommitEvent event = feed.poll(Duration.ofMillis(100));
                if (event != null) {
                  heard.add(event.commitSeq());
                }
                return heard.contains(seq);
              });
      assertThat(reopened.loadTable(T).snapshots()).hasSize(1);
    }
    assertThat(SharedCatalogs.holds(plain)).isZero();
  }
}
