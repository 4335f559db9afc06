package io.skade.source.database.split;

import io.skade.catalog.CommitEvent;
import io.skade.catalog.CommitOperation;
import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.util.ArrayList;
import java.util.List;
import org.apache.flink.core.io.SimpleVersionedSerializer;

/**
 * Writes {@link CommitSplit}s for Flink (assignments, and the splits a failed reader hands back);
 * versioned so the layout can change without misreading old bytes.
 */
public final class CommitSplitSerializer implements SimpleVersionedSerializer<CommitSplit> {
  /** The layout written today. */
  public static final int VERSION = 1;

  @Override
  public int getVersion() {
    return VERSION;
  }

  @Override
  public byte[] serialize(CommitSplit split) throws IOException {
    ByteArrayOutputStream bytes = new ByteArrayOutputStream(256);
    try (DataOutputStream out = new DataOutputStream(bytes)) {
      out.writeInt(split.tablePath().size());
      for (String level : split.tablePath()) {
        out.writeUTF(level);
      }
      CommitEvent commit = split.commit();
      out.writeLong(commit.commitSeq());
      out.writeUTF(commit.tableKey());
      out.writeUTF(commit.operation().name());
      out.writeInt(commit.addedSnapshotIds().size());
      for (long snapshot : commit.addedSnapshotIds()) {
        out.writeLong(snapshot);
      }
      out.writeUTF(commit.metadataLocation());
      out.writeBoolean(commit.previousMetadataLocation() != null);
      if (commit.previousMetadataLocation() != null) {
        out.writeUTF(commit.previousMetadataLocation());
      }
      out.writeLong(commit.tsMicros());
      out.writeLong(commit.transactionSeq());
      out.writeInt(commit.transactionSize());
    }
    return bytes.toByteArray();
  }

  @Override
  public CommitSplit deserialize(int version, byte[] serialized) throws IOException {
    if (version != VERSION) {
      throw new IOException(
          "skade database source split of layout version "
              + version
              + ", which this release cannot read (it reads version "
              + VERSION
              + ")");
    }
    try (DataInputStream in = new DataInputStream(new ByteArrayInputStream(serialized))) {
      int levels = in.readInt();
      List<String> path = new ArrayList<>(levels);
      for (int i = 0; i < levels; i++) {
        path.add(in.readUTF());
      }
      long commitSeq = in.readLong();
      String tableKey = in.readUTF();
      CommitOperation operation = CommitOperation.valueOf(in.readUTF());
      int added = in.readInt();
      List<Long> snapshots = new ArrayList<>(added);
      for (int i = 0; i < added; i++) {
        snapshots.add(in.readLong());
      }
      String metadata = in.readUTF();
      String previous = in.readBoolean() ? in.readUTF() : null;
      return new CommitSplit(
          path,
          new CommitEvent(
              commitSeq,
              tableKey,
              operation,
              snapshots,
              metadata,
              previous,
              in.readLong(),
              in.readLong(),
              in.readInt()));
    }
  }
}
