package io.skade.benchmarks;

import io.skade.lookup.LookupStats;
import io.skade.lookup.PointLookup;
import io.skade.lookup.ProbeParts;
import java.io.IOException;
import java.nio.file.Path;
import java.util.List;
import org.apache.iceberg.DataFile;
import org.apache.iceberg.Table;
import org.apache.iceberg.data.Record;

/**
 * One way of probing the table's files in {@link ProbeDecodingBenchmark}: skade's hand-written read
 * ({@link HandWritten}) or parquet-mr doing the same work ({@link ParquetMr}), with or without the
 * pages kept.
 */
interface ProbeSide extends AutoCloseable {
  String name();

  List<Record> probe(int file, long key) throws IOException;

  /** Read calls, bytes read and rows decoded so far. */
  long[] counts();

  @Override
  void close() throws IOException;

  final class HandWritten implements ProbeSide {
    final PointLookup.Counters counters = new PointLookup.Counters();
    final ProbeParts[] files;
    final boolean warm;

    HandWritten(Table table, List<DataFile> dataFiles, boolean keepPages) {
      this.warm = keepPages;
      this.files = new ProbeParts[dataFiles.size()];
      for (int f = 0; f < files.length; f++) {
        files[f] = ProbeParts.open(table, dataFiles.get(f), "id", counters, keepPages);
        files[f].indexAll();
      }
    }

    @Override
    public String name() {
      return "hand-written (ProbeFile" + (warm ? ", pages kept)" : ")");
    }

    @Override
    public List<Record> probe(int file, long key) throws IOException {
      return files[file].probe(key);
    }

    @Override
    public long[] counts() {
      LookupStats stats = counters.stats();
      long decoded = 0;
      for (ProbeParts file : files) {
        decoded += file.rowsDecoded();
      }
      return new long[] {stats.readCalls(), stats.bytesRead(), decoded};
    }

    @Override
    public void close() throws IOException {
      for (ProbeParts file : files) {
        file.close();
      }
    }
  }

  final class ParquetMr implements ProbeSide {
    final ParquetMrProbes.CountingFile[] inputs;
    final ParquetMrProbes[] files;
    final boolean warm;

    ParquetMr(Table table, List<DataFile> dataFiles, boolean cachePages) throws IOException {
      this.warm = cachePages;
      this.inputs = new ParquetMrProbes.CountingFile[dataFiles.size()];
      this.files = new ParquetMrProbes[dataFiles.size()];
      for (int f = 0; f < files.length; f++) {
        inputs[f] = new ParquetMrProbes.CountingFile(localPath(dataFiles.get(f)));
        files[f] = new ParquetMrProbes(inputs[f], table.schema(), cachePages);
        files[f].indexAll();
      }
    }

    @Override
    public String name() {
      return warm ? "parquet-mr (its pages decoded, kept)" : "parquet-mr (column readers)";
    }

    @Override
    public List<Record> probe(int file, long key) throws IOException {
      return files[file].probe(key);
    }

    @Override
    public long[] counts() {
      long reads = 0;
      long bytes = 0;
      long decoded = 0;
      for (int f = 0; f < files.length; f++) {
        reads += inputs[f].reads;
        bytes += inputs[f].bytes;
        decoded += files[f].rowsDecoded();
      }
      return new long[] {reads, bytes, decoded};
    }

    @Override
    public void close() throws IOException {
      for (ParquetMrProbes file : files) {
        file.close();
      }
    }
  }

  /** The local path of a data file of the benchmark's warehouse. */
  static Path localPath(DataFile file) {
    return Path.of(new org.apache.hadoop.fs.Path(file.location()).toUri().getPath());
  }
}
