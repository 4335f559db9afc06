package io.skade.source.enumerator;

import io.skade.catalog.ConsumerCursor;
import io.skade.source.split.ChangelogSplit;
import io.skade.source.split.ChangelogSplitSerializer;
import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.util.ArrayList;
import java.util.List;
import org.apache.flink.core.io.SimpleVersionedSerializer;
import org.apache.iceberg.catalog.Namespace;
import org.apache.iceberg.catalog.TableIdentifier;

/**
 * Writes {@link SkadeEnumeratorState} into checkpoints. Versioned, and it records the split
 * serializer's version it embedded, so either layout can change without misreading old checkpoints.
 * Version 2 keeps pending splits without readers (a split's slot names its reader); version 1 is
 * refused, as its splits are (see {@link ChangelogSplitSerializer}).
 */
public final class SkadeEnumeratorStateSerializer
    implements SimpleVersionedSerializer<SkadeEnumeratorState> {
  /** The layout written today. */
  public static final int VERSION = 2;

  @Override
  public int getVersion() {
    return VERSION;
  }

  @Override
  public byte[] serialize(SkadeEnumeratorState state) throws IOException {
    ByteArrayOutputStream bytes = new ByteArrayOutputStream();
    try (DataOutputStream out = new DataOutputStream(bytes)) {
      ConsumerCursor cursor = state.cursor();
      out.writeBoolean(cursor != null);
      if (cursor != null) {
        String[] levels = cursor.table().namespace().levels();
        out.writeInt(levels.length);
        for (String level : levels) {
          out.writeUTF(level);
        }
        out.writeUTF(cursor.table().name());
        out.writeUTF(cursor.tableUuid());
        out.writeLong(cursor.snapshotId());
        out.writeLong(cursor.commitSeq());
      }
      out.writeLong(state.endSnapshotId());
      out.writeInt(state.parallelism());
      out.writeInt(ChangelogSplitSerializer.VERSION);
      out.writeInt(state.pending().size());
      for (ChangelogSplit split : state.pending()) {
        ChangelogSplitSerializer.write(split, out);
      }
      out.writeInt(state.unfinished().size());
      for (ChangelogSplit split : state.unfinished()) {
        ChangelogSplitSerializer.write(split, out);
      }
    }
    return bytes.toByteArray();
  }

  @Override
  public SkadeEnumeratorState deserialize(int version, byte[] serialized) throws IOException {
    if (version != VERSION) {
      throw new IOException(
          "cannot read a skade enumerator state of serializer version "
              + version
              + "; this skade reads version "
              + VERSION
              + " — restore the checkpoint with"
              + " the skade release that wrote it, or start the job without it");
    }
    try (DataInputStream in = new DataInputStream(new ByteArrayInputStream(serialized))) {
      ConsumerCursor cursor = null;
      if (in.readBoolean()) {
        String[] levels = new String[in.readInt()];
        for (int i = 0; i < levels.length; i++) {
          levels[i] = in.readUTF();
        }
        TableIdentifier table = TableIdentifier.of(Namespace.of(levels), in.readUTF());
        cursor = new ConsumerCursor(table, in.readUTF(), in.readLong(), in.readLong());
      }
      long end = in.readLong();
      int parallelism = in.readInt();
      int splitVersion = in.readInt();
      List<ChangelogSplit> pending = new ArrayList<>();
      for (int i = in.readInt(); i > 0; i--) {
        pending.add(ChangelogSplitSerializer.read(splitVersion, in));
      }
      List<ChangelogSplit> unfinished = new ArrayList<>();
      for (int i = in.readInt(); i > 0; i--) {
        unfinished.add(ChangelogSplitSerializer.read(splitVersion, in));
      }
      return new SkadeEnumeratorState(cursor, end, pending, unfinished, parallelism);
    }
  }
}
