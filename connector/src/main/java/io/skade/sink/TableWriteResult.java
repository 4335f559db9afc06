package io.skade.sink;

import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import org.apache.flink.core.io.SimpleVersionedSerializer;
import org.apache.iceberg.flink.sink.WriteResultSerializer;
import org.apache.iceberg.io.WriteResult;

/**
 * The files one writer of a {@link SkadeMultiTableSink} wrote for {@code table} in a checkpoint.
 */
record TableWriteResult(String table, WriteResult result) {

  /** The table's name, then Iceberg's serialized form of the files. */
  static final class Serializer implements SimpleVersionedSerializer<TableWriteResult> {
    private final WriteResultSerializer files = new WriteResultSerializer();

    @Override
    public int getVersion() {
      return 1;
    }

    @Override
    public byte[] serialize(TableWriteResult written) throws IOException {
      ByteArrayOutputStream bytes = new ByteArrayOutputStream();
      try (DataOutputStream out = new DataOutputStream(bytes)) {
        out.writeUTF(written.table());
        out.writeInt(files.getVersion());
        byte[] result = files.serialize(written.result());
        out.writeInt(result.length);
        out.write(result);
      }
      return bytes.toByteArray();
    }

    @Override
    public TableWriteResult deserialize(int version, byte[] serialized) throws IOException {
      if (version != 1) {
        throw new IOException(
            "a skade multi-table write result of layout "
                + version
                + ", newer than this skade reads (1); run the job with the skade version that"
                + " wrote it");
      }
      try (DataInputStream in = new DataInputStream(new ByteArrayInputStream(serialized))) {
        String table = in.readUTF();
        int filesVersion = in.readInt();
        byte[] result = new byte[in.readInt()];
        in.readFully(result);
        return new TableWriteResult(table, files.deserialize(filesVersion, result));
      }
    }
  }
}
