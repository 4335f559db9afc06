package io.skade.source.split;

import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
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
    out.writeBoolean(split.fullSnapshot());
    out.writeLong(split.fromSnapshotId());
    out.writeLong(split.toSnapshotId());
    out.writeLong(split.commitSeq());
    out.writeBoolean(split.filterJson() != null);
    if (split.filterJson() != null) {
      byte[] filter = split.filterJson().getBytes(StandardCharsets.UTF_8);
      out.writeInt(filter.length); // a filter of many partitions can exceed writeUTF's 64 KiB
      out.write(filter);
    }
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
    String tableKey = in.readUTF();
    String metadataLocation = in.readUTF();
    boolean fullSnapshot = in.readBoolean();
    long from = in.readLong();
    long to = in.readLong();
    long commitSeq = in.readLong();
    String filter = null;
    if (in.readBoolean()) {
      byte[] bytes = new byte[in.readInt()];
      in.readFully(bytes);
      filter = new String(bytes, StandardCharsets.UTF_8);
    }
    return new ChangelogSplit(tableKey, metadataLocation, fullSnapshot, from, to, commitSeq,
        filter, in.readLong());
  }
}
