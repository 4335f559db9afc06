package io.skade.source.split;

import io.skade.scan.FileSlice;
import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import org.apache.flink.core.io.SimpleVersionedSerializer;

/**
 * Writes {@link ChangelogSplit}s into checkpoints; versioned so a layout can change without
 * misreading old checkpoints. Version 5 adds the stamp of the split's commit (read from older
 * layouts as unknown); version 4 adds whether a split is read between two states (a commit that
 * moved the table's head off its history); version 3 (the planned window a split may carry) is read
 * as windows; version 2 (each split's slot of ordering units, no plan) as splits without a plan;
 * version 1 (splits filtered to partitions and pinned to readers) is refused, since its splits
 * cannot be moved to the readers of their units at another parallelism.
 */
public final class ChangelogSplitSerializer implements SimpleVersionedSerializer<ChangelogSplit> {
  /** The layout written today. */
  public static final int VERSION = 5;

  /** The oldest layout still read. */
  private static final int OLDEST_READ = 2;

  @Override
  public int getVersion() {
    return VERSION;
  }

  @Override
  public byte[] serialize(ChangelogSplit split) throws IOException {
    ByteArrayOutputStream bytes =
        new ByteArrayOutputStream(
            64
                + split.metadataLocation().length()
                + (split.plan() == null ? 0 : split.plan().length));
    try (DataOutputStream out = new DataOutputStream(bytes)) {
      write(split, out);
    }
    return bytes.toByteArray();
  }

  /** The split's fields, in the layout of {@link #VERSION}; also used inside larger states. */
  public static void write(ChangelogSplit split, DataOutputStream out) throws IOException {
    out.writeUTF(split.tableKey());
    out.writeUTF(split.metadataLocation());
    out.writeBoolean(split.fullSnapshot());
    out.writeBoolean(split.betweenStates());
    out.writeLong(split.fromSnapshotId());
    out.writeLong(split.toSnapshotId());
    out.writeLong(split.commitSeq());
    out.writeLong(split.commitMicros());
    out.writeUTF(split.slice().unit().name());
    out.writeInt(split.slice().slots());
    out.writeInt(split.slice().slot());
    out.writeLong(split.emitted());
    out.writeInt(split.plan() == null ? -1 : split.plan().length);
    if (split.plan() != null) {
      out.write(split.plan());
    }
  }

  @Override
  public ChangelogSplit deserialize(int version, byte[] serialized) throws IOException {
    try (DataInputStream in = new DataInputStream(new ByteArrayInputStream(serialized))) {
      return read(version, in);
    }
  }

  /** A split written by {@link #write} in layout {@code version}. */
  public static ChangelogSplit read(int version, DataInputStream in) throws IOException {
    if (version < OLDEST_READ || version > VERSION) {
      throw new IOException(
          "cannot read a skade changelog split of serializer version "
              + version
              + "; this skade reads versions "
              + OLDEST_READ
              + " to "
              + VERSION
              + " — restore the checkpoint with the skade"
              + " release that wrote it, or start the job without it");
    }
    String tableKey = in.readUTF();
    String metadataLocation = in.readUTF();
    boolean fullSnapshot = in.readBoolean();
    boolean betweenStates = version >= 4 && in.readBoolean();
    long from = in.readLong();
    long to = in.readLong();
    long commitSeq = in.readLong();
    long commitMicros = version >= 5 ? in.readLong() : ChangelogSplit.UNKNOWN_TIME;
    FileSlice slice =
        new FileSlice(FileSlice.Unit.valueOf(in.readUTF()), in.readInt(), in.readInt());
    long emitted = in.readLong();
    byte[] plan = null;
    int planLength = version >= 3 ? in.readInt() : -1;
    if (planLength >= 0) {
      plan = new byte[planLength];
      in.readFully(plan);
    }
    return new ChangelogSplit(
        tableKey,
        metadataLocation,
        fullSnapshot,
        betweenStates,
        from,
        to,
        commitSeq,
        commitMicros,
        slice,
        emitted,
        plan);
  }
}
