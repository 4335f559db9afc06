package io.skade.lookup;

import io.skade.lookup.PageDecoder.KeptDictionary;
import org.apache.parquet.column.Dictionary;

/**
 * The decoded pages and dictionaries one open file keeps, by row group, column and page, within the
 * bound in bytes that the JVM's probes share: each one kept is reported to the {@link
 * ProbeFile.PageCache} ({@code LookupCaches}), which evicts the oldest through {@link #forget}.
 * Both are immutable once set (a record's final fields), so a probe on another thread sees them
 * whole; a probe that finds its pages here reads and decodes nothing.
 *
 * <p>Hand-written because parquet-mr keeps no decoded page: its readers decode a row group's pages
 * for one pass. ProbeDecodingBenchmark (1M rows in 32 files) puts the figure on it: a warm probe 4
 * to 44 times as fast (four runs on a shared machine) as parquet-mr's over pages its own readers
 * decoded and the harness kept, allocating about 630 bytes against 15,800; and 4 to 10 times as
 * fast as a cold probe, which reads and decodes its pages again.
 */
final class KeptPages {
  private final ProbeFile file;
  private final ProbeFile.PageCache cache;

  /** [row group][column][page]; a row group's arrays made when its page indexes are parsed. */
  private final DecodedPage[][][] pages;

  private final KeptDictionary[][] dictionaries;

  KeptPages(ProbeFile file, ProbeFile.PageCache cache, int groups, int columns) {
    this.file = file;
    this.cache = cache;
    this.pages = new DecodedPage[groups][columns][];
    this.dictionaries = new KeptDictionary[groups][columns];
  }

  /** Makes room for row group {@code g}'s pages, whose offset indexes were just parsed. */
  void makeRoom(int g, FileIndex index) {
    for (int c = 0; c < index.columnCount(); c++) {
      pages[g][c] = new DecodedPage[index.offsets(g, c).getPageCount()];
    }
  }

  /** Page {@code p} of column {@code c} in row group {@code g}, or null when not kept. */
  DecodedPage page(int g, int c, int p) {
    return pages[g][c][p];
  }

  void keep(int g, int c, int p, DecodedPage page) {
    pages[g][c][p] = page;
    cache.added(file, g, c, p, page.weight());
  }

  /** The dictionary of column {@code c} in row group {@code g}, or null when not kept. */
  Dictionary dictionary(int g, int c) {
    KeptDictionary kept = dictionaries[g][c];
    return kept == null ? null : kept.dictionary();
  }

  void keepDictionary(int g, int c, KeptDictionary dictionary) {
    dictionaries[g][c] = dictionary;
    cache.added(file, g, c, -1, dictionary.weight());
  }

  /** Drops a decoded page (or, when {@code page} is -1, dictionary): the cache evicted it. */
  void forget(int g, int c, int page) {
    if (page < 0) {
      dictionaries[g][c] = null;
    } else {
      pages[g][c][page] = null;
    }
  }
}
