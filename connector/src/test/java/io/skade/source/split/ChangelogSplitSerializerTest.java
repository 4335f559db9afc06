package io.skade.source.split;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.skade.scan.FileSlice;
import java.io.ByteArrayOutputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.util.HashSet;
import java.util.Set;
import org.junit.jupiter.api.Test;

class ChangelogSplitSerializerTest {
  private final ChangelogSplitSerializer serializer = new ChangelogSplitSerializer();

  @Test
  void aSplitSurvivesACheckpointWithItsProgress() throws IOException {
    ChangelogSplit split =
        ChangelogSplit.window(
                "db\u001fördrer",
                "/w/db/t/metadata/00007.json",
                ChangelogSplit.BEFORE_FIRST,
                42L,
                17L)
            .withEmitted(1234);
    ChangelogSplit restored =
        serializer.deserialize(serializer.getVersion(), serializer.serialize(split));
    assertThat(restored).isEqualTo(split);
    assertThat(restored.emitted()).isEqualTo(1234);
    assertThat(restored.fromExclusive()).isNull();
    assertThat(restored.splitId()).isEqualTo("db\u001fördrer@17/slot-0");
  }

  @Test
  void aFullSnapshotSplitOfOneSlotSurvivesACheckpoint() throws IOException {
    FileSlice slice = new FileSlice(FileSlice.Unit.FILE, 128, 77);
    ChangelogSplit split =
        ChangelogSplit.snapshot("db\u001ft", "/m.json", 7L, 9L).withSlice(slice).withEmitted(5);
    ChangelogSplit restored =
        serializer.deserialize(serializer.getVersion(), serializer.serialize(split));
    assertThat(restored).isEqualTo(split);
    assertThat(restored.fullSnapshot()).isTrue();
    assertThat(restored.slice()).isEqualTo(slice);
    assertThat(restored.splitId()).isEqualTo("db\u001ft@9/full/slot-77");
  }

  @Test
  void splitsOfOneWindowInOtherSlotsHaveOtherIds() {
    ChangelogSplit window = ChangelogSplit.window("t", "/m.json", 1, 2, 3);
    Set<String> ids = new HashSet<>();
    for (int slot = 0; slot < 128; slot++) {
      ids.add(window.withSlice(new FileSlice(FileSlice.Unit.PARTITION, 128, slot)).splitId());
      ids.add(
          window.withSlice(new FileSlice(FileSlice.Unit.FILE, 128, slot)).withEmitted(9).splitId());
    }
    assertThat(ids).hasSize(128); // the slot is the identity; progress and unit kind are not
    assertThat(ChangelogSplit.snapshot("t", "/m.json", 2, 3).splitId()).isNotIn(ids);
  }

  @Test
  void aSplitOfTheSecondLayoutIsReadAsOneWithoutAPlan() throws IOException {
    ByteArrayOutputStream bytes = new ByteArrayOutputStream();
    try (DataOutputStream out = new DataOutputStream(bytes)) { // as version 2 wrote it
      out.writeUTF("db\u001ft");
      out.writeUTF("/m.json");
      out.writeBoolean(false);
      out.writeLong(1);
      out.writeLong(2);
      out.writeLong(3);
      out.writeUTF(FileSlice.Unit.FILE.name());
      out.writeInt(128);
      out.writeInt(5);
      out.writeLong(7);
    }
    ChangelogSplit restored = serializer.deserialize(2, bytes.toByteArray());
    assertThat(restored)
        .isEqualTo(
            ChangelogSplit.window("db\u001ft", "/m.json", 1, 2, 3)
                .withSlice(new FileSlice(FileSlice.Unit.FILE, 128, 5))
                .withEmitted(7));
    assertThat(restored.plan()).isNull();
  }

  @Test
  void aSplitsPlanSurvivesACheckpointByteForByte() throws IOException {
    ChangelogSplit split =
        new ChangelogSplit(
            "t",
            "/m.json",
            false,
            false,
            1,
            2,
            3,
            ChangelogSplit.UNKNOWN_TIME,
            FileSlice.ALL,
            0,
            new byte[] {4, 5, 6});
    ChangelogSplit restored =
        serializer.deserialize(serializer.getVersion(), serializer.serialize(split));
    assertThat(restored).isEqualTo(split);
    assertThat(restored.plan()).containsExactly(4, 5, 6);
    assertThat(restored).isNotEqualTo(split.withPlan(null));
  }

  @Test
  void aSplitBetweenTwoStatesStaysOneAndAThirdLayoutSplitIsAWindow() throws IOException {
    ChangelogSplit between = ChangelogSplit.between("t", "/m.json", 9, 4, 12);
    ChangelogSplit restored =
        serializer.deserialize(serializer.getVersion(), serializer.serialize(between));
    assertThat(restored).isEqualTo(between);
    assertThat(restored.betweenStates()).isTrue();
    assertThat(restored).isNotEqualTo(ChangelogSplit.window("t", "/m.json", 9, 4, 12));

    assertThat(serializer.deserialize(3, windowAsWritten(3, false)))
        .isEqualTo(
            ChangelogSplit.window("t", "/m.json", 1, 2, 3)
                .withSlice(new FileSlice(FileSlice.Unit.TABLE, 128, 0)));
  }

  @Test
  void aSplitsCommitStampSurvivesACheckpointAndAFourthLayoutSplitHasNone() throws IOException {
    ChangelogSplit stamped =
        ChangelogSplit.window("t", "/m.json", 1, 2, 3).withCommitMicros(1_765_000_000_123_456L);
    ChangelogSplit restored =
        serializer.deserialize(serializer.getVersion(), serializer.serialize(stamped));
    assertThat(restored).isEqualTo(stamped);
    assertThat(restored.commitMicros()).isEqualTo(1_765_000_000_123_456L);
    assertThat(restored).isNotEqualTo(ChangelogSplit.window("t", "/m.json", 1, 2, 3));

    ChangelogSplit fourth = serializer.deserialize(4, windowAsWritten(4, true));
    assertThat(fourth)
        .isEqualTo(
            ChangelogSplit.between("t", "/m.json", 1, 2, 3)
                .withSlice(new FileSlice(FileSlice.Unit.TABLE, 128, 0)));
    assertThat(fourth.commitMicros()).isEqualTo(ChangelogSplit.UNKNOWN_TIME);
  }

  /**
   * The window {@code (1, 2]} of commit 3 of table {@code t} in one slot of 128, nothing emitted,
   * no plan, as layout {@code version} (3 or 4; 4 with {@code between}) wrote it.
   */
  private static byte[] windowAsWritten(int version, boolean between) throws IOException {
    ByteArrayOutputStream bytes = new ByteArrayOutputStream();
    try (DataOutputStream out = new DataOutputStream(bytes)) {
      out.writeUTF("t");
      out.writeUTF("/m.json");
      out.writeBoolean(false);
      if (version >= 4) {
        out.writeBoolean(between);
      }
      out.writeLong(1);
      out.writeLong(2);
      out.writeLong(3);
      out.writeUTF(FileSlice.Unit.TABLE.name());
      out.writeInt(128);
      out.writeInt(0);
      out.writeLong(0);
      out.writeInt(-1);
    }
    return bytes.toByteArray();
  }

  @Test
  void theFirstLayoutIsRefusedWithWhatToDo() throws IOException {
    byte[] bytes = serializer.serialize(ChangelogSplit.window("t", "/m.json", 1, 2, 3));
    assertThatThrownBy(() -> serializer.deserialize(1, bytes))
        .isInstanceOf(IOException.class)
        .hasMessageContaining("version 1")
        .hasMessageContaining("start the job without it");
  }

  @Test
  void anUnknownVersionIsRefusedWithWhatToDo() throws IOException {
    byte[] bytes = serializer.serialize(ChangelogSplit.window("t", "/m.json", 1, 2, 3));
    assertThatThrownBy(() -> serializer.deserialize(99, bytes))
        .isInstanceOf(IOException.class)
        .hasMessageContaining("version 99")
        .hasMessageContaining("restore the checkpoint with the skade release that wrote it");
  }

  @Test
  void aNegativeProgressIsRefused() {
    assertThatThrownBy(
            () ->
                new ChangelogSplit(
                    "t", "/m.json", false, false, 1, 2, 3, 0, FileSlice.ALL, -1, null))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("-1");
  }
}
