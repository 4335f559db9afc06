package io.skade.source.split;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.io.IOException;
import org.junit.jupiter.api.Test;

class ChangelogSplitSerializerTest {
  private final ChangelogSplitSerializer serializer = new ChangelogSplitSerializer();

  @Test
  void aSplitSurvivesACheckpointWithItsProgress() throws IOException {
    ChangelogSplit split = new ChangelogSplit("db\u001fördrer", "/w/db/t/metadata/00007.json",
        ChangelogSplit.BEFORE_FIRST, 42L, 17L, 0L).withEmitted(1234);
    ChangelogSplit restored =
        serializer.deserialize(serializer.getVersion(), serializer.serialize(split));
    assertThat(restored).isEqualTo(split);
    assertThat(restored.emitted()).isEqualTo(1234);
    assertThat(restored.fromExclusive()).isNull();
    assertThat(restored.splitId()).isEqualTo("db\u001fördrer@17");
  }

  @Test
  void anUnknownVersionIsRefusedWithWhatToDo() throws IOException {
    byte[] bytes = serializer.serialize(new ChangelogSplit("t", "/m.json", 1, 2, 3, 0));
    assertThatThrownBy(() -> serializer.deserialize(99, bytes))
        .isInstanceOf(IOException.class)
        .hasMessageContaining("version 99")
        .hasMessageContaining("restore the checkpoint with the skade release that wrote it");
  }

  @Test
  void aNegativeProgressIsRefused() {
    assertThatThrownBy(() -> new ChangelogSplit("t", "/m.json", 1, 2, 3, -1))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("-1");
  }
}
