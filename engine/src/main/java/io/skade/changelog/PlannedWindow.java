package io.skade.changelog;

import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.io.ObjectInputStream;
import java.io.ObjectOutputStream;
import java.io.ObjectStreamClass;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.util.Collection;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.apache.iceberg.BaseTable;
import org.apache.iceberg.DataFile;
import org.apache.iceberg.HasTableOperations;
import org.apache.iceberg.Snapshot;
import org.apache.iceberg.StaticTableOperations;
import org.apache.iceberg.Table;
import org.apache.iceberg.TableMetadata;
import org.apache.iceberg.TableMetadataParser;
import org.apache.iceberg.TableProperties;
import org.apache.iceberg.io.FileIO;

/**
 * What a reader elsewhere needs of a window its planner planned, besides the data and delete files
 * themselves: the table's metadata cut down to the window's snapshots, and the data files each of
 * its plain-append snapshots added. A reader given it parses no metadata file, and reads no
 * manifest list or manifest for an append: the planner read those once. For a reader that shares
 * its planner's {@link io.skade.scan.MetadataCache}, which holds the table's metadata already, a
 * plan carries the appended files alone ({@link #appendsOnly}): cutting the metadata costs the
 * planner time in proportion to the table's snapshots, per window.
 *
 * <p>It is an optimization only: the files it lists are exactly what the reader would find in the
 * manifests ({@link io.skade.scan.WindowFiles#appendedBy}), and a plan that cannot be decoded (one
 * written by another Iceberg release) is read as none — the reader then reads the metadata file the
 * split names, as it always can. Its bytes are bounded: a window of more than {@link #MAX_FILES}
 * appended files carries none of them, and one whose metadata is larger than {@link
 * #MAX_METADATA_BYTES} cut down carries no plan at all.
 */
public final class PlannedWindow {
  /** The most appended data files a plan carries; beyond, the reader reads the manifests. */
  public static final int MAX_FILES = 256;

  /** The largest cut-down metadata a plan carries. */
  public static final int MAX_METADATA_BYTES = 256 << 10;

  /** The layout {@link #toBytes} writes (1 always carried the metadata; read as no plan). */
  private static final int FORMAT = 2;

  /** The cut-down metadata, or null in a plan of appended files only. */
  private final String metadataJson;

  private final Map<Long, List<DataFile>> appended;

  private PlannedWindow(String metadataJson, Map<Long, List<DataFile>> appended) {
    this.metadataJson = metadataJson;
    this.appended = appended;
  }

  /**
   * The plan of a window of {@code table} that reads {@code snapshots} (its start among them, when
   * it has one), with no appended files yet; null when its metadata would be too large to carry.
   */
  public static PlannedWindow of(Table table, Collection<Long> snapshots) {
    TableMetadata metadata = ((HasTableOperations) table).operations().current();
    Set<Long> keep = new HashSet<>(snapshots);
    Set<Long> drop = new HashSet<>(); // a set: the builder asks it of every snapshot
    for (Snapshot snapshot : metadata.snapshots()) {
      if (!keep.contains(snapshot.snapshotId())) {
        drop.add(snapshot.snapshotId());
      }
    }
    TableMetadata cut =
        TableMetadata.buildFrom(metadata)
            .removeSnapshots(drop)
            // A read-only copy: keeping one entry of the metadata log rather than a hundred keeps
            // the plan small, and no one writes through it.
            .setProperties(Map.of(TableProperties.METADATA_PREVIOUS_VERSIONS_MAX, "1"))
            .discardChanges()
            .build();
    String json = TableMetadataParser.toJson(cut);
    return json.length() > MAX_METADATA_BYTES ? null : new PlannedWindow(json, Map.of());
  }

  /**
   * A plan without the table's metadata, with no appended files yet: for a reader whose JVM holds
   * the metadata the planner read.
   */
  public static PlannedWindow appendsOnly() {
    return new PlannedWindow(null, Map.of());
  }

  /**
   * This plan with {@code files}: per plain-append snapshot of the window, every data file it added
   * that the reader reads; none when they are more than {@link #MAX_FILES}.
   */
  public PlannedWindow withAppended(Map<Long, List<DataFile>> files) {
    int count = files.values().stream().mapToInt(List::size).sum();
    return new PlannedWindow(metadataJson, count > MAX_FILES ? Map.of() : Map.copyOf(files));
  }

  /**
   * The window's table, read-only, with {@code io} for its data and delete files; null when the
   * plan carries the appended files only.
   */
  public Table table(FileIO io, String name) {
    return metadataJson == null
        ? null
        : new BaseTable(
            new StaticTableOperations(TableMetadataParser.fromJson(metadataJson), io), name);
  }

  /** Per plain-append snapshot of the window, every data file it added (maybe none known). */
  public Map<Long, List<DataFile>> appended() {
    return appended;
  }

  /** The plan as bytes, for a split. */
  public byte[] toBytes() {
    ByteArrayOutputStream bytes =
        new ByteArrayOutputStream((metadataJson == null ? 0 : metadataJson.length()) + 1024);
    try (DataOutputStream out = new DataOutputStream(bytes)) {
      out.writeInt(FORMAT);
      out.writeBoolean(metadataJson != null);
      if (metadataJson != null) {
        byte[] json = metadataJson.getBytes(StandardCharsets.UTF_8);
        out.writeInt(json.length);
        out.write(json);
      }
      out.flush();
      // Iceberg's data files are serializable with their sequence numbers, which its JSON form
      // leaves out; another release may not read them, and then the plan is dropped.
      ObjectOutputStream objects = new ObjectOutputStream(out);
      objects.writeObject(new LinkedHashMap<>(appended));
      objects.flush();
    } catch (IOException e) {
      throw new UncheckedIOException("cannot write a planned window", e);
    }
    return bytes.toByteArray();
  }

  /**
   * The plan of {@code bytes} from {@link #toBytes}, or null when this release cannot read it (the
   * reader then reads the metadata file itself).
   */
  @SuppressWarnings("unchecked")
  public static PlannedWindow fromBytes(byte[] bytes) {
    try (DataInputStream in = new DataInputStream(new ByteArrayInputStream(bytes))) {
      if (in.readInt() != FORMAT) {
        return null;
      }
      String metadata = null;
      if (in.readBoolean()) {
        byte[] json = new byte[in.readInt()];
        in.readFully(json);
        metadata = new String(json, StandardCharsets.UTF_8);
      }
      ObjectInputStream objects = new FilesInput(in);
      Map<Long, List<DataFile>> appended = (Map<Long, List<DataFile>>) objects.readObject();
      return new PlannedWindow(metadata, appended);
    } catch (IOException | ClassNotFoundException | ClassCastException e) {
      return null;
    }
  }

  /** Resolves classes with skade's own loader, which sees the Iceberg it runs with. */
  private static final class FilesInput extends ObjectInputStream {
    FilesInput(DataInputStream in) throws IOException {
      super(in);
    }

    @Override
    protected Class<?> resolveClass(ObjectStreamClass desc)
        throws IOException, ClassNotFoundException {
      return Class.forName(desc.getName(), false, PlannedWindow.class.getClassLoader());
    }
  }
}
