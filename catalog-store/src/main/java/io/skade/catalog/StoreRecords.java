package io.skade.catalog;

import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import org.apache.iceberg.catalog.TableIdentifier;

/**
 * The byte encodings of the values {@link CatalogStore} writes: table pointers, commit log rows,
 * namespace properties, consumers, table locks and idempotency records. Each value is one version
 * byte ({@link #RECORD_VERSION}) and then its fields, written with {@link DataOutputStream};
 * strings are length-prefixed UTF-8. Keys are the store's own business and stay there.
 */
final class StoreRecords {
  private static final byte RECORD_VERSION = 1;

  private StoreRecords() {}

  static byte[] encodePointer(TablePointer pointer) {
    return encode(
        out -> {
          writeString(out, pointer.metadataLocation());
          out.writeLong(pointer.snapshotId());
          out.writeLong(pointer.commitSeq());
        });
  }

  static TablePointer decodePointer(byte[] bytes) {
    return decode(bytes, in -> new TablePointer(readString(in), in.readLong(), in.readLong()));
  }

  static byte[] encodeEvent(CommitEvent event) {
    return encode(
        out -> {
          writeString(out, event.tableKey());
          out.writeByte(event.operation().code());
          out.writeInt(event.addedSnapshotIds().size());
          for (long id : event.addedSnapshotIds()) {
            out.writeLong(id);
          }
          writeString(out, event.metadataLocation());
          out.writeBoolean(event.previousMetadataLocation() != null);
          if (event.previousMetadataLocation() != null) {
            writeString(out, event.previousMetadataLocation());
          }
          out.writeLong(event.tsMicros());
          // Written only for multi-table commits; records without them (older ones) read as 0.
          if (event.inTransaction()) {
            out.writeLong(event.transactionSeq());
            out.writeInt(event.transactionSize());
          }
        });
  }

  static CommitEvent decodeEvent(long seq, byte[] bytes) {
    return decode(
        bytes,
        in -> {
          String tableKey = readString(in);
          CommitOperation operation = CommitOperation.fromCode(in.readByte());
          int count = in.readInt();
          List<Long> snapshots = new ArrayList<>(count);
          for (int i = 0; i < count; i++) {
            snapshots.add(in.readLong());
          }
          String location = readString(in);
          String previous = in.readBoolean() ? readString(in) : null;
          long tsMicros = in.readLong();
          if (in.available() >= Long.BYTES + Integer.BYTES) {
            return new CommitEvent(
                seq,
                tableKey,
                operation,
                snapshots,
                location,
                previous,
                tsMicros,
                in.readLong(),
                in.readInt());
          }
          return new CommitEvent(seq, tableKey, operation, snapshots, location, previous, tsMicros);
        });
  }

  /** The lock {@code name} of {@code table}, from its row. */
  static MaintenanceLock decodeLock(TableIdentifier table, String name, byte[] bytes) {
    return decode(
        bytes,
        in ->
            new MaintenanceLock(table, name, readString(in), Instant.ofEpochMilli(in.readLong())));
  }

  static byte[] encodeLock(MaintenanceLock lock) {
    return encode(
        out -> {
          writeString(out, lock.holder());
          out.writeLong(lock.since().toEpochMilli());
        });
  }

  static byte[] encodeIdempotency(IdempotencyRecord record) {
    return encode(
        out -> {
          out.writeLong(record.committedAt().toEpochMilli());
          out.writeInt(record.metadataLocations().size());
          for (String location : record.metadataLocations()) {
            writeString(out, location);
          }
        });
  }

  static IdempotencyRecord decodeIdempotency(String key, byte[] bytes) {
    return decode(
        bytes,
        in -> {
          Instant at = Instant.ofEpochMilli(in.readLong());
          int count = in.readInt();
          List<String> locations = new ArrayList<>(count);
          for (int i = 0; i < count; i++) {
            locations.add(readString(in));
          }
          return new IdempotencyRecord(key, at, locations);
        });
  }

  static byte[] encodeConsumer(StoredConsumer consumer) {
    ConsumerCursor cursor = consumer.cursor();
    return encode(
        out -> {
          writeString(out, TableKeys.tableKey(cursor.table()));
          writeString(out, cursor.tableUuid());
          out.writeLong(cursor.snapshotId());
          out.writeLong(cursor.commitSeq());
          out.writeLong(consumer.lastSeen().toEpochMilli());
          if (consumer.owner() != null) { // last and optional: rows of older versions have none
            writeString(out, consumer.owner());
          }
        });
  }

  static StoredConsumer decodeConsumer(String consumerId, byte[] bytes) {
    return decode(
        bytes,
        in ->
            new StoredConsumer(
                consumerId,
                new ConsumerCursor(
                    TableKeys.identifier(readString(in)),
                    readString(in),
                    in.readLong(),
                    in.readLong()),
                Instant.ofEpochMilli(in.readLong()),
                in.available() > 0 ? readString(in) : null));
  }

  static byte[] encodeProperties(Map<String, String> properties) {
    return encode(
        out -> {
          out.writeInt(properties.size());
          for (Map.Entry<String, String> e : new TreeMap<>(properties).entrySet()) {
            writeString(out, e.getKey());
            writeString(out, e.getValue());
          }
        });
  }

  static Map<String, String> decodeProperties(byte[] bytes) {
    return decode(
        bytes,
        in -> {
          int count = in.readInt();
          Map<String, String> properties = new LinkedHashMap<>();
          for (int i = 0; i < count; i++) {
            properties.put(readString(in), readString(in));
          }
          return properties;
        });
  }

  private static void writeString(DataOutputStream out, String value) throws IOException {
    byte[] bytes = value.getBytes(StandardCharsets.UTF_8);
    out.writeInt(bytes.length);
    out.write(bytes);
  }

  private static String readString(DataInputStream in) throws IOException {
    byte[] bytes = new byte[in.readInt()];
    in.readFully(bytes);
    return new String(bytes, StandardCharsets.UTF_8);
  }

  private interface Writer {
    void write(DataOutputStream out) throws IOException;
  }

  private interface Reader<T> {
    T read(DataInputStream in) throws IOException;
  }

  private static byte[] encode(Writer writer) {
    ByteArrayOutputStream bytes = new ByteArrayOutputStream(128);
    try (DataOutputStream out = new DataOutputStream(bytes)) {
      out.writeByte(RECORD_VERSION);
      writer.write(out);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    return bytes.toByteArray();
  }

  private static <T> T decode(byte[] bytes, Reader<T> reader) {
    try (DataInputStream in = new DataInputStream(new ByteArrayInputStream(bytes))) {
      byte version = in.readByte();
      if (version != RECORD_VERSION) {
        throw new IllegalStateException("unknown skade catalog record version " + version);
      }
      return reader.read(in);
    } catch (IOException e) {
      throw new UncheckedIOException("corrupt skade catalog record", e);
    }
  }
}
