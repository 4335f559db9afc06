package io.skade.scan;

import static org.assertj.core.api.Assertions.assertThat;

import io.skade.catalog.SkadeRuntime;
import io.skade.testing.S3Bucket;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.URL;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Enumeration;
import java.util.List;
import java.util.concurrent.atomic.AtomicReference;
import org.apache.iceberg.CatalogUtil;
import org.apache.iceberg.DataFile;
import org.apache.iceberg.DataFiles;
import org.apache.iceberg.FileFormat;
import org.apache.iceberg.PartitionSpec;
import org.apache.iceberg.aws.s3.S3FileIO;
import org.apache.iceberg.inmemory.InMemoryFileIO;
import org.apache.iceberg.inmemory.InMemoryInputFile;
import org.apache.iceberg.io.FileIO;
import org.apache.iceberg.io.InputFile;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * skade's shared fetch threads are often started by a Flink task, and outlive its job: Flink then
 * closes the task's user-code class loader, and a thread that kept it as its context class loader
 * fails wherever a class is loaded through it (the AWS SDK builds its S3 client that way), for
 * every later job of the TaskManager (the AWS SDK's HTTP client looks up its logging through it for
 * each new connection). Here a task starts every thread of the pool, its class loader closes as
 * Flink closes one, and a later job's files on a real S3 server still arrive fetched ahead.
 */
class FetchThreadsTest {
  @RegisterExtension static final S3Bucket s3 = new S3Bucket("fetchthreads");

  @Test
  void fetchThreadsStartedByATaskKeepFetchingAfterItsClassLoaderCloses() throws Exception {
    SkadeRuntime.reset(); // a pool of this test's own, started by the task below
    DataFile later = write("later");

    // An earlier job's task reads its files (in memory, so that nothing it does touches the S3
    // client's classes) and starts every thread of the pool; then its job ends.
    TaskLoader task = new TaskLoader(getClass().getClassLoader());
    runWithContextLoader(
        task,
        () -> {
          try (InMemoryFileIO io = new InMemoryFileIO();
              FileFetch fetch = new FileFetch(io)) {
            List<DataFile> files = new ArrayList<>();
            for (int i = 0; i < FileFetch.MAX_IN_FLIGHT; i++) {
              String location = s3.run() + "/earlier/" + i + ".parquet";
              io.addFile(location, new byte[] {(byte) i});
              files.add(dataFile(location, 1));
            }
            fetch.ahead(files);
            for (DataFile file : files) {
              assertThat(fetch.input(file)).isInstanceOf(InMemoryInputFile.class);
            }
          }
        });
    task.close();

    try (FileIO io = s3FileIO();
        FileFetch fetch = new FileFetch(io)) {
      fetch.ahead(List.of(later));
      InputFile input = fetch.input(later);
      assertThat(input).as("fetched ahead by the pool").isInstanceOf(InMemoryInputFile.class);
      try (InputStream in = input.newStream()) {
        assertThat(new String(in.readAllBytes(), StandardCharsets.UTF_8)).isEqualTo("later");
      }
    }
  }

  private static FileIO s3FileIO() {
    return CatalogUtil.loadFileIO(S3FileIO.class.getName(), s3.fileIoProperties(), null);
  }

  private static DataFile write(String text) throws IOException {
    String location = s3.run() + "/data/" + text + ".parquet";
    byte[] bytes = text.getBytes(StandardCharsets.UTF_8);
    try (FileIO io = s3FileIO();
        OutputStream out = io.newOutputFile(location).create()) {
      out.write(bytes);
    }
    return dataFile(location, bytes.length);
  }

  private static DataFile dataFile(String location, long length) {
    return DataFiles.builder(PartitionSpec.unpartitioned())
        .withPath(location)
        .withFileSizeInBytes(length)
        .withRecordCount(1)
        .withFormat(FileFormat.PARQUET)
        .build();
  }

  private static void runWithContextLoader(ClassLoader loader, ThrowingRunnable work)
      throws Exception {
    AtomicReference<Throwable> failure = new AtomicReference<>();
    Thread thread =
        new Thread(
            () -> {
              try {
                work.run();
              } catch (Throwable t) {
                failure.set(t);
              }
            },
            "task");
    thread.setContextClassLoader(loader);
    thread.start();
    thread.join();
    if (failure.get() instanceof Exception e) {
      throw e;
    } else if (failure.get() instanceof Error e) {
      throw e;
    }
  }

  private interface ThrowingRunnable {
    void run() throws Exception;
  }

  /** A task's user-code class loader, which fails every use once closed, as Flink's does. */
  private static final class TaskLoader extends ClassLoader {
    private volatile boolean closed;

    TaskLoader(ClassLoader parent) {
      super(parent);
    }

    void close() {
      closed = true;
    }

    private void requireOpen() {
      if (closed) {
        throw new IllegalStateException("Trying to access closed classloader");
      }
    }

    @Override
    protected Class<?> loadClass(String name, boolean resolve) throws ClassNotFoundException {
      requireOpen();
      return super.loadClass(name, resolve);
    }

    @Override
    public URL getResource(String name) {
      requireOpen();
      return super.getResource(name);
    }

    @Override
    public Enumeration<URL> getResources(String name) throws IOException {
      requireOpen();
      return super.getResources(name);
    }
  }
}
