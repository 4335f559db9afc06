package io.skade.source.database.enumerator;

import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import org.apache.flink.core.io.SimpleVersionedSerializer;

/** Writes {@link DatabaseEnumeratorState} into checkpoints; versioned. */
public final class DatabaseEnumeratorStateSerializer
    implements SimpleVersionedSerializer<DatabaseEnumeratorState> {
  /** The layout written today. */
  public static final int VERSION = 1;

  @Override
  public int getVersion() {
    return VERSION;
  }

  @Override
  public byte[] serialize(DatabaseEnumeratorState state) throws IOException {
    ByteArrayOutputStream bytes = new ByteArrayOutputStream(8);
    try (DataOutputStream out = new DataOutputStream(bytes)) {
      out.writeLong(state.commitSeq());
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
      return new DatabaseEnumeratorState(in.readLong());
    }
  }
}
