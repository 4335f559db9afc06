package io.skade.catalog;

import java.util.List;
import java.util.function.IntConsumer;
import org.apache.iceberg.catalog.TableIdentifier;

/**
 * Benchmark access to the committer alone: a compare-and-swap of a table pointer to a new
 * (fake) metadata location, with no Iceberg metadata written — the commit path's own cost, which
 * group commit amortises. It lives in the catalog's package only to reach the package-private
 * committer; the table it moves becomes unloadable, so use a throwaway catalog.
 */
public final class PointerCommits {
  private PointerCommits() {}

  /** Commit number {@code i} moves {@code table}'s pointer from its current location onwards. */
  public static IntConsumer committer(SkadeCatalog catalog, TableIdentifier table) {
    String key = catalog.commitTableKey(table);
    return i -> catalog.committer().submit(stage -> {
      TablePointer current = stage.pointer(key);
      return stage.commit(key, CommitOperation.UPDATE, List.of(),
          current.metadataLocation() + "#" + i, TablePointer.NO_SNAPSHOT);
    });
  }
}
