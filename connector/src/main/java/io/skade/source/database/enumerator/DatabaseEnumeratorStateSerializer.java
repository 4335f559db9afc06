package io.skade.source.database.enumerator;

import io.skade.source.database.split.CommitSplit;
import io.skade.source.database.split.CommitSplitSerializer;
import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.util.ArrayList;
import java.util.List;
import org.apache.flink.core.io.SimpleVersionedSerializer;

/**
 * Writes {@link DatabaseEnumeratorState} into checkpoints; versioned, its splits in the layout of
 * {@link CommitSplitSerializer#VERSION}.
 */
public final class DatabaseEnumeratorStateSerializer
    implements SimpleVersionedSerializer<DatabaseEnumeratorState> {
  /** The layout written today. */
  public static final int VERSION = 1;

  private final CommitSplitSerializer splits = new CommitSplitSerializer();

  @Override
  public int getVersion() {
    return VERSION;
  }

  @Override
  public byte[] serialize(DatabaseEnumeratorState state) throws IOException {
    ByteArrayOutputStream bytes = new ByteArrayOutputStream(8);
    try (DataOutputStream out = new DataOutputStream(bytes)) {
      out.writeLong(state.commitSeq());
      out.writeInt(state.givenBack().size());
      for (CommitSplit split : state.givenBack()) {
        byte[] written = splits.serialize(split);
        out.writeInt(written.length);
        out.write(written);
      }
    }
    return bytes.toByteArray();
  }

  @Override
  public DatabaseEnumeratorState deserialize(int version, byte[] serialized) throws IOException {
    if (version != VERSION) {
      throw new IOException(
          "skade database source checkpoint of layout version "
              + version
              + ", which this release cannot read (it reads version "
              + VERSION
              + ")");
    }
    try (DataInputStream in = new DataInputStream(new ByteArrayInputStream(serialized))) {
      long commitSeq = in.readLong();
      int count = in.readInt();
      List<CommitSplit> givenBack = new ArrayList<>(count);
      for (int i = 0; i < count; i++) {
        byte[] bytes = new byte[in.readInt()];
        in.readFully(bytes);
        givenBack.add(splits.deserialize(CommitSplitSerializer.VERSION, bytes));
      }
      return new DatabaseEnumeratorState(commitSeq, givenBack);
    }
  }
}
