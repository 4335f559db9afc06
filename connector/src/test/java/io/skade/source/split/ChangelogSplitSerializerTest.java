package io.skade.source.split;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.io.IOException;
import org.apache.iceberg.expressions.Expression;
import org.apache.iceberg.expressions.Expressions;
import org.junit.jupiter.api.Test;

class ChangelogSplitSerializerTest {
  private final ChangelogSplitSerializer serializer = new ChangelogSplitSerializer();

  @Test
  void aSplitSurvivesACheckpointWithItsProgress() throws IOException {
    ChangelogSplit split = ChangelogSplit.window("db\u001fördrer", "/w/db/t/metadata/00007.json",
        ChangelogSplit.BEFORE_FIRST, 42L, 17L).withEmitted(1234);
    ChangelogSplit restored =
        serializer.deserialize(serializer.getVersion(), serializer.serialize(split));
    assertThat(restored).isEqualTo(split);
    assertThat(restored.emitted()).isEqualTo(1234);
    assertThat(restored.fromExclusive()).isNull();
    assertThat(restored.splitId()).isEqualTo("db\u001fördrer@17");
  }

  @Test
  void aFullSnapshotSplitWithAPartitionFilterSurvivesACheckpoint() throws IOException {
    Expression partition = Expressions.or(
        Expressions.equal(Expressions.bucket("id", 8), 3), Expressions.equal("region", "eu"));
    ChangelogSplit split = ChangelogSplit.snapshot("db\u001ft", "/m.json", 7L, 9L)
        .withFilter(partition).withEmitted(5);
    ChangelogSplit restored =
        serializer.deserialize(serializer.getVersion(), serializer.serialize(split));
    assertThat(restored).isEqualTo(split);
    assertThat(restored.fullSnapshot()).isTrue();
    assertThat(restored.filter().toString()).isEqualTo(partition.toString());
    assertThat(restored.splitId()).startsWith("db\u001ft@9/full#")
        .isNotEqualTo(ChangelogSplit.snapshot("db\u001ft", "/m.json", 7L, 9L).splitId());
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
    assertThatThrownBy(() -> new ChangelogSplit("t", "/m.json", false, 1, 2, 3, null, -1))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("-1");
  }
}
