package io.skade.changelog;

import com.github.benmanes.caffeine.cache.Cache;
import com.github.benmanes.caffeine.cache.Caffeine;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.util.ArrayList;
import java.util.List;
import org.apache.iceberg.ContentFile;
import org.apache.iceberg.DataFile;
import org.apache.iceberg.DeleteFile;
import org.apache.iceberg.ManifestContent;
import org.apache.iceberg.ManifestFile;
import org.apache.iceberg.ManifestFiles;
import org.apache.iceberg.ManifestReader;
import org.apache.iceberg.Snapshot;
import org.apache.iceberg.Table;

/**
 * Parsed manifest lists and manifests, shared by every changelog read of this JVM and bounded
 * by an estimate of their heap. Both are immutable files whose paths are never reused, so they
 * are keyed by path and never go stale.
 *
 * <p>Consecutive windows of a table share nearly all manifests: without this cache each window
 * parsed the whole table state twice (its start and its end), so a one-row commit cost as many
 * manifest reads as the table had manifests.
 */
public final class ManifestCache {
  /** A rough heap cost of one parsed file entry or manifest-list entry with its statistics. */
  private static final int ENTRY_BYTES = 1024;
  private static final ManifestCache SHARED =
      new ManifestCache(Math.min(256L << 20, Runtime.getRuntime().maxMemory() / 16));

  private final Cache<String, List<?>> entries;

  /** A cache of at most about {@code maxBytes} of heap. */
  public ManifestCache(long maxBytes) {
    this.entries = Caffeine.newBuilder()
        .maximumWeight(maxBytes)
        .weigher((String key, List<?> value) -> ENTRY_BYTES * Math.max(1, value.size()))
        .build();
  }

  /** The cache every changelog read of this JVM uses. */
  public static ManifestCache shared() {
    return SHARED;
  }

  /** The manifests of {@code snapshot}, data and deletes. */
  @SuppressWarnings("unchecked")
  List<ManifestFile> manifests(Snapshot snapshot, Table table) {
    String list = snapshot.manifestListLocation();
    if (list == null) { // a v1 snapshot may list its manifests inline
      return snapshot.allManifests(table.io());
    }
    return (List<ManifestFile>) entries.get("list:" + list,
        key -> List.copyOf(snapshot.allManifests(table.io())));
  }

  /** The live data files of a data manifest. */
  @SuppressWarnings("unchecked")
  List<DataFile> dataFiles(ManifestFile manifest, Table table) {
    return (List<DataFile>) entries.get("data:" + manifest.path(), key -> {
      try (ManifestReader<DataFile> reader =
          ManifestFiles.read(manifest, table.io(), table.specs())) {
        return copy(reader);
      } catch (IOException e) {
        throw new UncheckedIOException("cannot read manifest " + manifest.path(), e);
      }
    });
  }

  /** The live delete files of a delete manifest. */
  @SuppressWarnings("unchecked")
  List<DeleteFile> deleteFiles(ManifestFile manifest, Table table) {
    return (List<DeleteFile>) entries.get("deletes:" + manifest.path(), key -> {
      try (ManifestReader<DeleteFile> reader =
          ManifestFiles.readDeleteManifest(manifest, table.io(), table.specs())) {
        return copy(reader);
      } catch (IOException e) {
        throw new UncheckedIOException("cannot read manifest " + manifest.path(), e);
      }
    });
  }

  /** Whether the manifest's entries are cached already (so reading it costs nothing). */
  boolean holds(ManifestFile manifest) {
    String prefix = manifest.content() == ManifestContent.DATA
        ? "data:" : "deletes:";
    return entries.getIfPresent(prefix + manifest.path()) != null;
  }

  private static <F extends ContentFile<F>> List<F> copy(ManifestReader<F> reader) {
    List<F> files = new ArrayList<>();
    reader.forEach(files::add); // its iterator yields live entries only, copied
    return List.copyOf(files);
  }
}
