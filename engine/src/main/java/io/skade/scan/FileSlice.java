package io.skade.scan;

import java.io.Serializable;
import java.util.Map;
import java.util.Objects;
import org.apache.iceberg.ContentFile;
import org.apache.iceberg.FileContent;
import org.apache.iceberg.PartitionSpec;

/**
 * The data files of a table a changelog read covers: those whose ordering unit — their partition,
 * or the file itself — falls into one of a fixed number of slots. Reads of every slot of one
 * slicing together cover every file once, so the changes of a unit all come from the read of its
 * slot. Delete files are not sliced: they apply to the data files kept.
 *
 * <p>Under one partition spec a row never leaves its partition, so with {@link Unit#PARTITION} a
 * {@code replace} snapshot (compaction) moves rows within a slice and changes nothing. With {@link
 * Unit#FILE} (or partitions of several specs) a rewrite can move rows to a file of another slot:
 * the read of the old slot then emits their {@code DELETE}, the read of the new one their {@code
 * INSERT}, so each row's later changes come from the slot of the file that holds it ({@link
 * #movesRows}).
 *
 * @param unit what a slot is made of
 * @param slots how many slots the table's units are hashed into
 * @param slot the slot this read covers, from 0 to {@code slots - 1}
 */
public record FileSlice(Unit unit, int slots, int slot) implements Serializable {

  /** What the files of one slot share. */
  public enum Unit {
    /** The whole table is one unit: every file is kept, whatever the slot. */
    TABLE,
    /** A partition is a unit: a file is kept when its partition falls into the slot. */
    PARTITION,
    /** A data file is a unit: it is kept when its location falls into the slot. */
    FILE
  }

  /** Every file of the table, as one unit. */
  public static final FileSlice ALL = new FileSlice(Unit.TABLE, 1, 0);

  public FileSlice {
    Objects.requireNonNull(unit, "unit");
    if (slots <= 0 || slot < 0 || slot >= slots) {
      throw new IllegalArgumentException(
          "a file slice is one of 1 or more slots, got slot " + slot + " of " + slots);
    }
  }

  /** The slot of a unit named {@code unitKey} among {@code slots}. */
  public static int slotOf(String unitKey, int slots) {
    int hash = unitKey.hashCode() * 0x9E3779B1; // spreads keys that differ in their last chars
    return Math.floorMod(hash ^ (hash >>> 16), slots);
  }

  /** The name of {@code file}'s unit: its partition's path, or its location. */
  public String unitKey(ContentFile<?> file, Map<Integer, PartitionSpec> specs) {
    return switch (unit) {
      case TABLE -> "";
      case PARTITION -> specs.get(file.specId()).partitionToPath(file.partition());
      case FILE -> file.location();
    };
  }

  /** Whether a read of this slice reads {@code file}: every delete file, and its data files. */
  public boolean keeps(ContentFile<?> file, Map<Integer, PartitionSpec> specs) {
    return unit == Unit.TABLE
        || file.content() != FileContent.DATA
        || slotOf(unitKey(file, specs), slots) == slot;
  }

  /** Whether this slice keeps every file. */
  public boolean keepsAll() {
    return unit == Unit.TABLE;
  }

  /**
   * Whether a rewrite can move rows out of this slice or into it (see the class comment): always
   * for file units; for partition units when the table has had several partition specs, whose
   * rewrites move rows into partitions of the current one.
   */
  public boolean movesRows(Map<Integer, PartitionSpec> specs) {
    return unit == Unit.FILE || unit == Unit.PARTITION && specs.size() > 1;
  }
}
