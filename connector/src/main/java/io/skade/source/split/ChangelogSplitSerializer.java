package io.skade.source.split;

import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import org.apache.flink.core.io.SimpleVersionedSerializer;

/** Writes {@link ChangelogSplit}s into checkpoints; versioned so old checkpoints stay readable. */
public final class ChangelogSplitSerializer implements SimpleVersionedSerializer<ChangelogSplit> {
  /** The layout written today. */
  public static final int VERSION = 1;

  @Override
  public int getVersion() {
    return VERSION;
  }

  @Override
  public byte[] serialize(ChangelogSplit split) throws IOException {
    ByteArrayOutputStream bytes = new ByteArrayOutputStream(64 + split.metadataLocation().length());
    try (DataOutputStream out = new DataOutputStream(bytes)) {
      write(split, out);
    }
    return bytes.toByteArray();
  }

  /** The split's fields, in the layout of {@link #VERSION}; also used inside larger states. */
  public static void write(ChangelogSplit split, DataOutputStream out) throws IOException {
    out.writeUTF(split.tableKey());
    out.writeUTF(split.metadataLocation());
    out.writeLong(split.fromSnapshotId());
    out.writeLong(split.toSnapshotId());
    out.writeLong(split.commitSeq());
    out.writeLong(split.emitted());
  }

  @Override
  public ChangelogSplit deserialize(int version, byte[] serialized) throws IOException {
    try (DataInputStream in = new DataInputStream(new ByteArrayInputStream(serialized))) {
      return read(version, in);
    }
  }

  /** A split written by {@link #write} in layout {@code version}. */
  public static ChangelogSplit read(int version, DataInputStream in) throws IOException {
    if (version != VERSION) {
      throw new IOException("cannot read a skade changelog split of serializer version " + version
          + "; this skade reads version " + VERSION + " — restore the checkpoint with the skade"
          + " release that wrote it, or start the job without it");
    }
    return new ChangelogSplit(in.readUTF(), in.readUTF(), in.readLong(), in.readLong(),
        in.readLong(), in.readLong());
  }
}
