package io.skade.sink;

import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.util.Map;
import java.util.SortedMap;
import java.util.TreeMap;
import org.apache.flink.core.io.SimpleVersionedSerializer;

/**
 * What a {@link SkadeMultiTableSink} commits for one checkpoint, as one catalog transaction: per
 * table written, Iceberg's manifests of the files written ({@code DeltaManifests}, serialized). The
 * job, operator and checkpoint stamp each table's snapshot, by which a committer restarted finds
 * the checkpoint committed.
 */
record MultiTableCommittable(
    String jobId, String operatorId, long checkpointId, SortedMap<String, byte[]> manifests) {

  MultiTableCommittable {
    manifests = new TreeMap<>(manifests);
  }

  /** Versioned; layout 1: job, operator, checkpoint, then each table and its manifests. */
  static final class Serializer implements SimpleVersionedSerializer<MultiTableCommittable> {
    @Override
    public int getVersion() {
      return 1;
    }

    @Override
    public byte[] serialize(MultiTableCommittable committable) throws IOException {
      ByteArrayOutputStream bytes = new ByteArrayOutputStream();
      try (DataOutputStream out = new DataOutputStream(bytes)) {
        out.writeUTF(committable.jobId());
        out.writeUTF(committable.operatorId());
        out.writeLong(committable.checkpointId());
        out.writeInt(committable.manifests().size());
        for (Map.Entry<String, byte[]> table : committable.manifests().entrySet()) {
          out.writeUTF(table.getKey());
          out.writeInt(table.getValue().length);
          out.write(table.getValue());
        }
      }
      return bytes.toByteArray();
    }

    @Override
    public MultiTableCommittable deserialize(int version, byte[] serialized) throws IOException {
      if (version != 1) {
        throw new IOException(
            "a skade multi-table committable of layout "
                + version
                + ", newer than this skade reads (1); restore the job with the skade version that"
                + " wrote it");
      }
      try (DataInputStream in = new DataInputStream(new ByteArrayInputStream(serialized))) {
        String job = in.readUTF();
        String operator = in.readUTF();
        long checkpoint = in.readLong();
        SortedMap<String, byte[]> manifests = new TreeMap<>();
        for (int i = in.readInt(); i > 0; i--) {
          String table = in.readUTF();
          byte[] manifest = new byte[in.readInt()];
          in.readFully(manifest);
          manifests.put(table, manifest);
        }
        return new MultiTableCommittable(job, operator, checkpoint, manifests);
      }
    }
  }
}
